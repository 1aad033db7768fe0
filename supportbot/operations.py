"""``/metrics``: the Prometheus scrape endpoint (``docs/operations.md``).

Protected: with ``METRICS_TOKEN`` set, only a request bearing it gets the metrics; without
one, only a loopback client does, and in production nobody (behind a reverse proxy on the same
host every client looks local)."""
from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import Http404, HttpResponse
from django.views.decorators.http import require_GET
import redis
from prometheus_client import CONTENT_TYPE_LATEST

from caching.modes import fell_back_tenants
from core import metrics
from core.redis_client import redis_info


# Headers a reverse proxy adds: a request carrying one came through a proxy, whatever its REMOTE_ADDR.
_PROXIED = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP", "HTTP_X_FORWARDED_HOST")


def _allowed(request) -> bool:
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
    if settings.PRODUCTION or any(h in request.META for h in _PROXIED):
        return False  # a proxy on this host makes every client look local
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def _broker() -> redis.Redis:
    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                                socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT_S)


@require_GET
def metrics_view(request):
    if not _allowed(request):
        if settings.METRICS_TOKEN:
            response = HttpResponse("a bearer token is required\n", status=401, content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        raise Http404("not found")
    broker = metrics.BrokerCollector(settings.CELERY_WORKER_QUEUES, _broker, redis_info)
    states = metrics.StateCollector(fell_back_tenants)
    return HttpResponse(metrics.exposition([broker, states]), content_type=CONTENT_TYPE_LATEST)
