"""A database outage becomes a clear 503, never a stack trace or a half-written answer; static
files under the async server.

Both middlewares are sync and async capable: under ASGI a sync-only middleware makes Django run
every request's inner chain through a thread and back, which costs a cache hit more than the hit."""
import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse
from whitenoise.middleware import WhiteNoiseMiddleware

log = logging.getLogger(__name__)


class DatabaseUnavailableMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        return self.get_response(request)  # under ASGI a coroutine, which Django awaits

    def process_exception(self, request, exception):
        if not isinstance(exception, DatabaseError):
            return None
        log.error("database unavailable: %s", exception)
        message = "The service is temporarily unavailable. Please try again shortly."
        if request.path.startswith("/api/"):
            response = JsonResponse({"error": {"code": "unavailable", "message": message}}, status=503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "5"
        return response


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, sync and async capable: a static file is looked up in memory and answered
    (its body read by the server); anything else goes on down the chain in the request's mode."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response=None, *args, **kwargs):
        super().__init__(get_response, *args, **kwargs)
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self._async:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request):
        static_file = self.find_file(request.path_info) if self.autorefresh else self.files.get(request.path_info)
        if static_file is not None:
            return self.serve(static_file, request)
        return await self.get_response(request)
