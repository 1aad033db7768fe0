"""Rate limits per client and per tenant, counted in Redis.

Fixed windows of ``RATELIMIT_WINDOW_S``: one Lua script increments a request's counters for
the current window and sets their expiry in one round trip, so every web process on every
host shares the same counts. The script also reads, in the same round trip, keys the request
needs anyway (the tenant's revision, the exact-cache entry: ``check(read=...)``).

A **client** is, in order: the API key (its prefix) when the request carries a valid one; the
signed-in customer (a valid customer token, or the chat page's session), as a keyed hash of
their id; else the network address (``REMOTE_ADDR``, or the address the trusted proxies saw,
see ``RATELIMIT_TRUSTED_PROXY_HOPS``), with IPv6 addresses grouped by their /64 network (one
subscriber usually holds a whole /64, so 2^64 addresses must not be 2^64 budgets).

What a request counts against:

* anonymous and signed-in customers: their own counter (``RATELIMIT_CLIENT_REQUESTS``), then
  the tenant's public ceiling (``RATELIMIT_TENANT_REQUESTS``), which every public client
  shares, so a flood spread over many addresses cannot spend more than that;
* an API key: its own budget (``RATELIMIT_API_KEY_REQUESTS``) only. A tenant's backend speaks
  for many customers, and anonymous traffic filling the public ceiling must not lock it out;
* feedback (``action="feedback"``): a counter of its own per client
  (``RATELIMIT_FEEDBACK_REQUESTS``; an API key's is its key budget), then the public ceiling;
  a feedback flood neither fills the review queue nor spends the client's questions.

A request over a limit gets a 429 with ``Retry-After`` (seconds to the end of the window) and
counts against nothing further, so a noisy client refused by its own limit does not use up
its tenant's ceiling.

**Fail open:** while Redis is unavailable (down, or inside the short backoff
after a failure) requests are not limited. Redis holds caches, never the only
copy of anything; refusing every customer because the limiter's store is down
would turn a cache outage into a full outage. The generation circuit breaker
and gunicorn's worker count still bound the load on the model. See
docs/security.md.
"""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import time
from dataclasses import dataclass

from django.conf import settings
from redis.exceptions import NoScriptError

from core.redis_client import RedisUnavailable, call, redis_available, redis_failed, tenant_tag

log = logging.getLogger(__name__)

# KEYS: the counters in order, then keys to read along (GET). ARGV: window seconds, the number of
# counters, then each counter's limit. Counting stops at the first counter over its limit, so a
# request refused by its own limit counts against nothing further. Returns one flat array: the
# refused counter's index (0: allowed), then the values read. (A nested array costs the server
# and the client more: Redis 6 writes each array of a script's reply as a reply block of its own.)
_CHECK = """
local ttl = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local reply = {0}
for i = n + 1, #KEYS do reply[#reply + 1] = redis.call("GET", KEYS[i]) end
for i = 1, n do
    local c = redis.call("INCR", KEYS[i])
    if c == 1 then redis.call("EXPIRE", KEYS[i], ttl) end
    if c > tonumber(ARGV[2 + i]) then
        reply[1] = i
        return reply
    end
end
return reply
"""
_CHECK_SHA = hashlib.sha1(_CHECK.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    scope: str = ""  # "client", "feedback" or "tenant" when refused; "skipped" when Redis was unavailable
    limit: int = 0
    retry_after_s: int = 0
    read: tuple | None = None  # the values of ``check(read=...)``'s keys; None when they were not read


def client_address(request) -> str:
    """The client's network: REMOTE_ADDR, or the address seen by the outermost trusted proxy; an
    IPv6 address stands for its /64 network (an IPv4-mapped one for its IPv4 address)."""
    hops = settings.RATELIMIT_TRUSTED_PROXY_HOPS
    address = request.META.get("REMOTE_ADDR", "")
    if hops > 0:
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        # Each trusted proxy appends the address it saw; anything further left is client-controlled.
        if len(forwarded) >= hops:
            address = forwarded[-hops]
    return _network(address)


_V6_NETWORK_MASK = ~((1 << 64) - 1)


def _network(address: str) -> str:
    if ":" not in address:  # IPv4 (from the server or a trusted proxy), the common case: as it is
        return address[:64] or "unknown"
    try:
        ip = ipaddress.IPv6Address(address.strip("[]"))
    except ValueError:
        return address[:64]
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return f"{ipaddress.IPv6Address(int(ip) & _V6_NETWORK_MASK)}/64"


def _customer_id(customer: str) -> str:
    """A keyed hash of the customer id: Redis keys carry no customer identifier."""
    return hmac.new(settings.SECRET_KEY.encode("utf-8"), f"ratelimit:{customer}".encode("utf-8"),
                    hashlib.sha256).hexdigest()[:24]


def client_key(request, api_key=None, *, customer: str | None = None) -> str:
    """The rate limiter's client: the API key, else the signed-in customer, else the network."""
    if api_key is not None:
        return f"key:{api_key.prefix}"
    if customer:
        return f"cust:{_customer_id(customer)}"
    return f"ip:{client_address(request)}"


def _counters(tenant_id: int, client: str, action: str, slot: int) -> list[tuple[str, int, str]]:
    """(key, limit, scope) of each counter a request counts against, in order. Every counter carries
    the tenant's hash tag, like the keys read along (its revision, its exact entry): on a cluster
    the script's keys are on one shard."""
    if action not in ("ask", "feedback"):
        raise ValueError(f"unknown rate-limited action {action!r}")
    kind = "c" if action == "ask" else "f"
    tag = tenant_tag(tenant_id)
    own = f"rl:{kind}:{tag}:{client}:{slot}"
    if client.startswith("key:"):
        return [(own, settings.RATELIMIT_API_KEY_REQUESTS, "client")]
    limit = settings.RATELIMIT_CLIENT_REQUESTS if action == "ask" else settings.RATELIMIT_FEEDBACK_REQUESTS
    return [(own, limit, "client" if action == "ask" else "feedback"),
            (f"rl:t:{tag}:{slot}", settings.RATELIMIT_TENANT_REQUESTS, "tenant")]


def check(tenant_id: int, client: str, *, action: str = "ask", read: tuple[str, ...] = ()) -> Verdict:
    """Count one request of ``client`` (``client_key``) against its limits of the current window.

    ``action``: ``"ask"`` or ``"feedback"``. ``read``: Redis keys whose values the request needs
    anyway (e.g. its tenant's revision), read in the same round trip (``Verdict.read``, None for
    a missing key); they carry the tenant's hash tag (``tenant_tag``)."""
    if not settings.RATELIMIT_ENABLED:
        return Verdict(True)
    if not redis_available():
        return Verdict(True, scope="skipped")
    window = max(1, settings.RATELIMIT_WINDOW_S)
    now = time.time()
    slot = int(now // window)
    counters = _counters(tenant_id, client, action, slot)
    keys = [key for key, _, _ in counters] + list(read)
    args = [window + 1, len(counters), *(limit for _, limit, _ in counters)]
    try:
        try:
            refused, *values = call("EVALSHA", _CHECK_SHA, len(keys), *keys, *args)
        except NoScriptError:  # a new or restarted server: send the script itself (Redis keeps it)
            refused, *values = call("EVAL", _CHECK, len(keys), *keys, *args)
    except RedisUnavailable as exc:
        redis_failed(exc)
        log.warning("rate limits skipped: redis unavailable (%s)", type(exc).__name__)
        return Verdict(True, scope="skipped")
    values = tuple(values)  # a missing key comes back as None (Lua false is a Redis nil)
    if not refused:
        return Verdict(True, read=values)
    _, limit, scope = counters[refused - 1]
    retry = max(1, math.ceil((slot + 1) * window - now))  # the window ends for every process at once
    return Verdict(False, scope=scope, limit=limit, retry_after_s=retry, read=values)
