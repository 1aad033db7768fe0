import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
application = get_wsgi_application()

from supportbot.warmup import warm_up  # noqa: E402 - needs the configured app

warm_up()
