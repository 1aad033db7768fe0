"""The ASGI application (``make run``'s async server: gunicorn with uvicorn workers, docs/serving.md).

Django's handler gives every request a thread-sensitive context of its own: the first
``sync_to_async`` of the request (the ``request_started`` signal's receivers, at the start of
every request) starts a thread for it, and the end of the request starts a second one to join
the first. Starting a thread blocks the event loop until the new thread runs, which on a busy
machine is milliseconds: every open stream and every cache hit of the process waits. The Ask
path's async views (the API ask, the chat stream) do their real blocking work in the process's
own pools (``supportbot.serving``); what Django still runs thread-sensitively for them (the
request signals, closing the response) takes microseconds. Their requests therefore share a few
long-lived single-thread executors (``ASYNC_VIEW_CONTEXTS``). Every other request (the staff
pages, the chat page, the admin: sync views that may hold a thread for a while) keeps Django's
own context, a thread of its own.

The GIL's switch interval is shortened (``WEB_GIL_SWITCH_MS``): the event loop rarely waits on
I/O under load, and a pool thread finishing a cache hit would otherwise wait up to 5 ms for each
of its turns.
"""
import itertools
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler
from django.urls import Resolver404, get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")

ASYNC_VIEW_CONTEXTS = 4  # shared executors of the async views' thread-sensitive calls (each runs microseconds of work)


class AskASGIHandler(ASGIHandler):
    """Django's ASGI handler, with the async views' requests in shared thread-sensitive contexts."""

    def __init__(self):
        super().__init__()
        self._shared = itertools.cycle([ThreadPoolExecutor(max_workers=1, thread_name_prefix="asgi-context")
                                        for _ in range(ASYNC_VIEW_CONTEXTS)])

    def _async_view(self, path: str) -> bool:
        try:
            match = get_resolver().resolve(path)
        except Resolver404:
            return False
        return iscoroutinefunction(match.func)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not self._async_view(scope.get("path", "")):
            return await super().__call__(scope, receive, send)
        async with ThreadSensitiveContext(executor=next(self._shared)):
            await self.handle(scope, receive, send)


get_asgi_application()  # django.setup(), as Django's own entry point does
sys.setswitchinterval(max(0.0001, settings.WEB_GIL_SWITCH_MS / 1000))
application = AskASGIHandler()

from supportbot.warmup import warm_up  # noqa: E402 - needs the configured app

warm_up()
