"""Per-tenant byte budgets of the cache layers: a tenant over its budget evicts its own oldest
entries, never another tenant's.

Layers: ``exact`` (answers in Redis), ``semantic`` (entries in PostgreSQL), ``search`` (search results
in Redis) and ``vectors`` (the embedding cache's vectors of the tenant's customers' questions, in
Redis). A tenant's budget of a layer is ``Tenant.cache_budgets[layer]`` when set, else
``CACHE_BUDGET_BYTES[layer]``. Keep the Redis layers' budgets of all tenants together under the cache
Redis's ``maxmemory``: then Redis's own eviction (which picks any tenant's keys) never has to act.

For the Redis layers a ledger per tenant and layer records each stored key with its size, in store
order: ``budget:<layer>:{t:<id>}`` (a sorted set), ``budget-size:...`` (a hash) and
``budget-total:...`` (the sum). They carry the tenant's hash tag like the entries themselves, so a
cluster keeps them on one slot and ``charge`` is one script. Entries that expired or were purged
stay in the ledger until they are the oldest; the script then drops them without counting an
eviction (their ``DEL`` finds nothing), so a tenant's live entries go only after its dead ones.

Shared infrastructure: imports only ``core``.
"""
from __future__ import annotations

import re
import time

from django.apps import apps
from django.conf import settings

from core.localcache import LocalCache
from core.redis_client import tenant_tag

# The layers with a budget. This module is imported by the embedding cache, which loads before the
# app registry may be ready: it reaches the Tenant model through the registry, when a budget is read.
LAYERS = ("exact", "semantic", "search", "vectors")

# KEYS: ledger, sizes, total[, index]; ARGV: key, bytes, budget, score, ledger ttl.
# Returns {evicted, total bytes after}. The newest key is never its own victim.
_CHARGE = """
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then redis.call('DECRBY', KEYS[3], old) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
local total = redis.call('INCRBY', KEYS[3], ARGV[2])
local budget = tonumber(ARGV[3])
local evicted = 0
while total > budget do
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #oldest == 0 or oldest[1] == ARGV[1] then break end
  local member = oldest[1]
  redis.call('ZREM', KEYS[1], member)
  local size = tonumber(redis.call('HGET', KEYS[2], member) or '0')
  redis.call('HDEL', KEYS[2], member)
  total = redis.call('DECRBY', KEYS[3], size)
  evicted = evicted + redis.call('DEL', member)
  if KEYS[4] then redis.call('ZREM', KEYS[4], member) end
end
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[5]) end
return {evicted, total}
"""

_TAG = re.compile(r"\{t:(\d+)\}")

_budgets: LocalCache[dict] = LocalCache("cache-budgets", ttl_s=30.0)


def budget_bytes(tenant_id: int, layer: str) -> int:
    """The tenant's budget of ``layer`` in bytes (its own setting, else the default); read from the
    database at most every 30 s per process."""
    if layer not in LAYERS:
        raise ValueError(f"unknown cache layer {layer!r}")
    tenants = apps.get_model("core", "Tenant").objects
    own = _budgets.get(int(tenant_id), lambda: tenants.filter(pk=tenant_id)
                       .values_list("cache_budgets", flat=True).first() or {})
    value = own.get(layer)
    return int(value) if value is not None else int(settings.CACHE_BUDGET_BYTES[layer])


def budgets_forget(tenant_id: int | None = None) -> None:
    """Read the tenant's budgets (every tenant's: None) from the database at their next use."""
    _budgets.forget(None if tenant_id is None else int(tenant_id))


def tenant_of_key(key: str) -> int | None:
    """The tenant whose hash tag ``{t:<id>}`` the key carries (every tenant-scoped cache key does)."""
    found = _TAG.search(key)
    return int(found.group(1)) if found else None


def ledger_keys(layer: str, tenant_id: int) -> tuple[str, str, str]:
    tag = tenant_tag(tenant_id)
    return f"budget:{layer}:{tag}", f"budget-size:{layer}:{tag}", f"budget-total:{layer}:{tag}"


def charge(r, layer: str, tenant_id: int, key: str, nbytes: int, *, index: str | None = None,
           ttl_s: int = 86400) -> tuple[int, int]:
    """Count ``nbytes`` of ``key`` against the tenant's budget of ``layer`` and delete the tenant's
    oldest keys of that layer while it is over; ``index``: a sorted set of the layer to drop them
    from too. Returns (entries evicted, the tenant's bytes now). Raises the Redis error."""
    keys = [*ledger_keys(layer, tenant_id), *([index] if index else [])]
    evicted, total = r.eval(_CHARGE, len(keys), *keys, key, int(nbytes), budget_bytes(tenant_id, layer),
                            time.time(), int(ttl_s) + 3600)
    return int(evicted), int(total)


def used_bytes(r, layer: str, tenant_id: int) -> int:
    """The bytes the ledger counts for the tenant's layer (dead entries included until evicted)."""
    return int(r.get(ledger_keys(layer, tenant_id)[2]) or 0)


# KEYS: ledger, sizes, total; ARGV: members that no longer exist. Drops them and their bytes.
_DROP = """
local dropped = 0
for i = 1, #ARGV do
  local size = redis.call('HGET', KEYS[2], ARGV[i])
  if size then redis.call('DECRBY', KEYS[3], size) end
  redis.call('HDEL', KEYS[2], ARGV[i])
  dropped = dropped + redis.call('ZREM', KEYS[1], ARGV[i])
end
return dropped
"""


def ledger_prune(r, tenant_id: int, layers: tuple[str, ...] = LAYERS, *, batch: int = 500) -> int:
    """Drop from the tenant's ledgers the keys that no longer exist, with their bytes. The ledger names
    each stored key, and a key's name holds a hash of the question it caches: erasure (and purges)
    delete the keys, then call this so no trace of the question stays in the ledger. Returns the
    members dropped. Raises the Redis error."""
    dropped = 0
    for layer in layers:
        ledger, sizes, total = ledger_keys(layer, tenant_id)
        members = [m.decode() if isinstance(m, bytes) else m for m, _ in r.zscan_iter(ledger)]
        for i in range(0, len(members), batch):
            chunk = members[i:i + batch]
            pipe = r.pipeline(transaction=False)
            for member in chunk:
                pipe.exists(member)
            gone = [m for m, alive in zip(chunk, pipe.execute()) if not alive]
            if gone:
                dropped += int(r.eval(_DROP, 3, ledger, sizes, total, *gone))
    return dropped
