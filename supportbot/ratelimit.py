"""Rate limits per client and per tenant, counted in Redis.

Fixed windows of ``RATELIMIT_WINDOW_S``: one Lua script increments the client's
and the tenant's counter for the current window and sets their expiry in one
round trip, so every web process on every host shares the same counts. A
client is the API key (its prefix) when the request carries a valid one, else
the network address (``REMOTE_ADDR``, or the address the trusted proxies saw,
see ``RATELIMIT_TRUSTED_PROXY_HOPS``).

A request over either limit gets a 429 with ``Retry-After`` (seconds to the end
of the window) and counts against nothing further. The tenant limit protects
one tenant's model budget (and the other tenants' share of the model server)
from a flood that spreads over many addresses.

**Fail open:** while Redis is unavailable (down, or inside the short backoff
after a failure) requests are not limited. Redis holds caches, never the only
copy of anything; refusing every customer because the limiter's store is down
would turn a cache outage into a full outage. The generation circuit breaker
and gunicorn's worker count still bound the load on the model. See
docs/security.md.
"""
from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from redis.exceptions import NoScriptError

from supportbot.redis_client import RedisUnavailable, call, redis_available, redis_failed

log = logging.getLogger(__name__)

# KEYS: client counter, tenant counter, then keys to read along (GET). ARGV: window seconds,
# client limit, tenant limit. The tenant counter only counts requests the client limit let
# through, so one noisy client cannot use up its tenant's budget by being refused.
_CHECK = """
local ttl = tonumber(ARGV[1])
local read = {}
for i = 3, #KEYS do read[#read + 1] = redis.call("GET", KEYS[i]) end
local c = redis.call("INCR", KEYS[1])
if c == 1 then redis.call("EXPIRE", KEYS[1], ttl) end
if c > tonumber(ARGV[2]) then
    return {1, c, 0, read}
end
local t = redis.call("INCR", KEYS[2])
if t == 1 then redis.call("EXPIRE", KEYS[2], ttl) end
if t > tonumber(ARGV[3]) then
    return {2, c, t, read}
end
return {0, c, t, read}
"""
_CHECK_SHA = hashlib.sha1(_CHECK.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    scope: str = ""  # "client" or "tenant" when refused; "skipped" when Redis was unavailable
    limit: int = 0
    retry_after_s: int = 0
    read: tuple | None = None  # the values of ``check(read=...)``'s keys; None when they were not read


def client_address(request) -> str:
    """The client's IP: REMOTE_ADDR, or the address seen by the outermost trusted proxy."""
    hops = settings.RATELIMIT_TRUSTED_PROXY_HOPS
    if hops > 0:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        # Each trusted proxy appends the address it saw; anything further left is client-controlled.
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def client_key(request, api_key=None) -> str:
    return f"key:{api_key.prefix}" if api_key is not None else f"ip:{client_address(request)}"


def check(tenant_slug: str, client: str, *, read: tuple[str, ...] = ()) -> Verdict:
    """Count one request of ``client`` against the client and tenant limits of the current window.

    ``read``: Redis keys whose values the request needs anyway (e.g. its tenant's revision),
    read in the same round trip (``Verdict.read``, None for a missing key)."""
    if not settings.RATELIMIT_ENABLED:
        return Verdict(True)
    if not redis_available():
        return Verdict(True, scope="skipped")
    window = max(1, settings.RATELIMIT_WINDOW_S)
    now = time.time()
    slot = int(now // window)
    keys = [f"rl:c:{tenant_slug}:{client}:{slot}", f"rl:t:{tenant_slug}:{slot}", *read]
    args = [window + 1, settings.RATELIMIT_CLIENT_REQUESTS, settings.RATELIMIT_TENANT_REQUESTS]
    try:
        try:
            refused, _count, _extra, values = call("EVALSHA", _CHECK_SHA, len(keys), *keys, *args)
        except NoScriptError:  # a new or restarted server: send the script itself (Redis keeps it)
            refused, _count, _extra, values = call("EVAL", _CHECK, len(keys), *keys, *args)
    except RedisUnavailable as exc:
        redis_failed(exc)
        log.warning("rate limits skipped: redis unavailable (%s)", type(exc).__name__)
        return Verdict(True, scope="skipped")
    values = tuple(values)  # a missing key comes back as None (Lua false is a Redis nil)
    if not refused:
        return Verdict(True, read=values)
    scope = "client" if refused == 1 else "tenant"
    limit = settings.RATELIMIT_CLIENT_REQUESTS if refused == 1 else settings.RATELIMIT_TENANT_REQUESTS
    retry = max(1, math.ceil((slot + 1) * window - now))  # the window ends for every process at once
    return Verdict(False, scope=scope, limit=limit, retry_after_s=retry, read=values)
