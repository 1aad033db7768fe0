"""A database outage becomes a clear 503, never a stack trace or a half-written answer."""
import logging

from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse

log = logging.getLogger(__name__)


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

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
