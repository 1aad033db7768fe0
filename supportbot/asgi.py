"""The ASGI application (``make run``'s async server: gunicorn with uvicorn workers, docs/serving.md):
Django's, with the async views' requests in shared thread-sensitive contexts and a shorter GIL
switch interval (``supportbot.serving.asgi_application``)."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

get_asgi_application()  # django.setup(), as Django's own entry point does

from supportbot.serving import asgi_application  # noqa: E402 - needs the configured app
from supportbot.warmup import warm_up  # noqa: E402

application = asgi_application()
warm_up()
