"""The ASGI application (``make run``'s async server: gunicorn with uvicorn workers, docs/serving.md)."""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
application = get_asgi_application()

from supportbot.warmup import warm_up  # noqa: E402 - needs the configured app

warm_up()
