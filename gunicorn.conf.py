# gunicorn reads this file when started in the project root without -c: Ask's settings.
from supportbot.gunicorn_conf import *  # noqa: F401,F403
