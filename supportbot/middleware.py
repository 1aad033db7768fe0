"""The middleware chain: a database outage becomes a clear 503, never a stack trace or a
half-written answer; static files; and Django's own middleware, run on the event loop under the
async server.

Every middleware here is sync and async capable. Under ASGI a sync-only middleware makes Django run
every request's inner chain through a thread and back; and Django's own middleware, though async
capable, runs each of its hooks in a thread (``MiddlewareMixin.__acall__``): a dozen thread hops a
request, which cost a cache hit more than the hit. Their hooks do no I/O (headers, cookies, a lazy
session and user) but for a session or messages the view used: ``OnTheLoop`` runs them inline on
the loop, and in a thread only then (``response_io``)."""
import logging

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware as DjangoMessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware as DjangoXFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware as DjangoCommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware as DjangoCsrfViewMiddleware
from django.middleware.security import SecurityMiddleware as DjangoSecurityMiddleware
from django.utils.deprecation import MiddlewareMixin
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


class OnTheLoop:
    """Django's ``MiddlewareMixin`` hooks, inline on the event loop under ASGI (as they run under
    WSGI), except a ``process_response`` that has I/O to do for this request (``response_io``)."""

    async def __acall__(self, request):
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            if self.response_io(request):
                response = await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
            else:
                response = self.process_response(request, response)
        return response

    def response_io(self, request) -> bool:
        return False


class ContentSecurityPolicyMiddleware(OnTheLoop, MiddlewareMixin):
    """The customer pages' (``chat*`` routes) Content-Security-Policy, ``CHAT_CONTENT_SECURITY_POLICY``:
    their script is served from this site and none is inline, so a text that slipped past escaping
    still cannot run. Staff pages (the admin's own scripts) are left to Django. (Django 6 has this built in.)"""

    def process_response(self, request, response):
        match = getattr(request, "resolver_match", None)
        if match is not None and (match.url_name or "").startswith("chat") and settings.CHAT_CONTENT_SECURITY_POLICY:
            response.headers.setdefault("Content-Security-Policy", settings.CHAT_CONTENT_SECURITY_POLICY)
        return response


class SecurityMiddleware(OnTheLoop, DjangoSecurityMiddleware):
    pass


class CommonMiddleware(OnTheLoop, DjangoCommonMiddleware):
    pass


class XFrameOptionsMiddleware(OnTheLoop, DjangoXFrameOptionsMiddleware):
    pass


class AuthenticationMiddleware(OnTheLoop, DjangoAuthenticationMiddleware):
    """The user stays lazy: a sync view that reads it runs in a thread already."""


class SessionMiddleware(OnTheLoop, DjangoSessionMiddleware):
    def response_io(self, request) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.accessed or session.modified)  # a save, a load


class MessageMiddleware(OnTheLoop, DjangoMessageMiddleware):
    def response_io(self, request) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)  # the session's copy


class CsrfViewMiddleware(OnTheLoop, DjangoCsrfViewMiddleware):
    """Its view hook reads the cookie and the posted token (the body is read already): inline too."""

    def __init__(self, get_response):
        super().__init__(get_response)
        if self.async_mode:
            self.process_view = self._process_view_inline

    async def _process_view_inline(self, request, callback, callback_args, callback_kwargs):
        return DjangoCsrfViewMiddleware.process_view(self, request, callback, callback_args, callback_kwargs)
