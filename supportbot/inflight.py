"""In-flight caps: how many fresh answers a client and a tenant may have running at once.

The rate limiter (``supportbot.ratelimit``) counts requests a minute; it cannot see that sixteen
slow streams are open right now. These caps count what is open. A fresh answer (retrieval and
generation: a cache hit is over in a millisecond and takes no slot) holds a slot from its start
to its last event; the slot goes on completion, error or disconnect (``release``).

Slots live in Redis, so every web process on every host shares them: one sorted set per client
and one per tenant, each member a request id scored by the time its slot expires. A process that
dies holding slots cannot release them; they expire ``INFLIGHT_SLOT_TTL_S`` after they were
taken (keep it above ``STREAM_MAX_DURATION_S``: no live stream outlasts it). One Lua script
drops the expired members, checks the counts and takes the slots in one round trip.

Who counts against what mirrors the rate limiter: an API key against its own cap only
(``INFLIGHT_API_KEY_MAX``: a tenant's backend speaks for many customers), a customer or an
address against its own (``INFLIGHT_CLIENT_MAX``) and the tenant's public cap
(``INFLIGHT_TENANT_MAX``), which one tenant's flood fills for that tenant only. Over a cap the
request is refused (a 429 with ``Retry-After``) and counted (``ask_inflight_refused_total``).

**Fail open**, as the rate limiter: while Redis is unavailable nothing is capped.
"""
from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from redis.exceptions import NoScriptError

from core import metrics
from core.redis_client import RedisUnavailable, call, redis_available, redis_failed, tenant_tag

log = logging.getLogger(__name__)

# KEYS: the slot sets in order. ARGV: now, the slot's expiry, the request id, how long the sets
# live, then each set's cap. Returns 0 (slots taken in every set) or the index of the full set.
_ACQUIRE = """
local now = tonumber(ARGV[1])
for i = 1, #KEYS do
    redis.call("ZREMRANGEBYSCORE", KEYS[i], "-inf", now)
    if redis.call("ZCARD", KEYS[i]) >= tonumber(ARGV[4 + i]) then return i end
end
for i = 1, #KEYS do
    redis.call("ZADD", KEYS[i], ARGV[2], ARGV[3])
    redis.call("EXPIRE", KEYS[i], ARGV[4])
end
return 0
"""
_ACQUIRE_SHA = hashlib.sha1(_ACQUIRE.encode("utf-8")).hexdigest()


class InFlightRefused(Exception):
    """Too many asks of this client (``scope="client"``) or tenant (``"tenant"``) are in flight."""

    code = "too_many_in_flight"
    status = 429

    def __init__(self, scope: str, limit: int, retry_after_s: int):
        self.scope, self.limit, self.retry_after_s = scope, limit, retry_after_s
        self.message = (f"Too many questions in progress{' for this service' if scope == 'tenant' else ''}; "
                        f"please wait {retry_after_s} seconds and try again.")
        super().__init__(self.message)


@dataclass(frozen=True)
class Slot:
    """A held slot: release it once (``release``); ``keys`` is empty when nothing was taken."""

    request_id: str
    keys: tuple[str, ...] = ()


def _sets(tenant_id: int, client: str) -> list[tuple[str, int, str]]:
    """(key, cap, scope) of each set a client's ask takes a slot in; every key carries the tenant's
    hash tag, so on a cluster the script's keys are on one shard."""
    tag = tenant_tag(tenant_id)
    own = f"inflight:c:{tag}:{client}"
    if client.startswith("key:"):
        return [(own, settings.INFLIGHT_API_KEY_MAX, "client")]
    return [(own, settings.INFLIGHT_CLIENT_MAX, "client"), (f"inflight:t:{tag}", settings.INFLIGHT_TENANT_MAX, "tenant")]


def acquire(tenant_id: int, tenant_slug: str, client: str, request_id: str) -> Slot:
    """Take a slot for ``request_id`` in the client's and the tenant's sets, or raise InFlightRefused.
    ``client`` is the rate limiter's (``ratelimit.client_key``); an empty one (no web request: a
    command, a task) is not capped."""
    if not settings.INFLIGHT_ENABLED or not client or not redis_available():
        return Slot(request_id)
    sets = _sets(tenant_id, client)
    keys = [key for key, _, _ in sets]
    now = time.time()
    ttl = max(1, settings.INFLIGHT_SLOT_TTL_S)
    args = [now, now + ttl, request_id, ttl + 60, *(cap for _, cap, _ in sets)]
    try:
        try:
            full = call("EVALSHA", _ACQUIRE_SHA, len(keys), *keys, *args)
        except NoScriptError:  # a new or restarted server: send the script itself (Redis keeps it)
            full = call("EVAL", _ACQUIRE, len(keys), *keys, *args)
    except RedisUnavailable as exc:
        redis_failed(exc)
        log.warning("in-flight caps skipped: redis unavailable (%s)", type(exc).__name__)
        return Slot(request_id)
    if full:
        _, cap, scope = sets[full - 1]
        metrics.INFLIGHT_REFUSED.labels(tenant_slug, scope).inc()
        raise InFlightRefused(scope, cap, max(1, settings.INFLIGHT_RETRY_AFTER_S))
    return Slot(request_id, tuple(keys))


def release(slot: Slot | None) -> None:
    """Give the slot back (a no-op for an empty one); a Redis failure leaves it to expire."""
    if slot is None or not slot.keys:
        return
    try:
        for key in slot.keys:
            call("ZREM", key, slot.request_id)
    except RedisUnavailable as exc:
        redis_failed(exc)
        log.warning("in-flight slot %s left to expire: redis unavailable (%s)", slot.request_id, type(exc).__name__)


def held(tenant_id: int, client: str) -> int:
    """How many unexpired slots the client holds (for tests and the staff view)."""
    key = _sets(tenant_id, client)[0][0]
    return int(call("ZCOUNT", key, time.time(), "+inf"))
