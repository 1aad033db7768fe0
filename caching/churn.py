"""Cache churn for the staff dashboard: how many entries each tenant lost to its cap (evicted)
or to the end of their lifetime (expired), per hour and layer, and what the Redis server itself
reports (memory, policy, the keys it evicted or expired).

The exact layer counts at store time (its per-tenant index, ``caching.layers.exact``), the
semantic layer at store time (the cap) and in ``semantic_expired_cleanup`` (expiries)."""
from __future__ import annotations

import logging
from datetime import datetime

from django.db import DatabaseError, connection
from django.db.models import Sum
from django.utils import timezone

from caching.models import CacheChurn
from core import metrics
from core.redis_client import RedisUnavailable, redis_failed, redis_info

log = logging.getLogger(__name__)


def churn_add(tenant_id: int, layer: str, *, expired: int = 0, evicted: int = 0) -> None:
    """Add to this hour's counts (one upsert per kind). A failure is logged: a count never costs an answer."""
    rows = [(kind, n) for kind, n in ((CacheChurn.Kind.EXPIRED, expired), (CacheChurn.Kind.EVICTED, evicted)) if n]
    if not rows:
        return
    for kind, n in rows:
        metrics.EVICTIONS.labels(layer, str(kind)).inc(n)
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    table = connection.ops.quote_name(CacheChurn._meta.db_table)
    try:
        with connection.cursor() as cursor:
            for kind, n in rows:
                cursor.execute(
                    f"INSERT INTO {table} (hour, tenant_id, layer, kind, count) VALUES (%s, %s, %s, %s, %s) "
                    f"ON CONFLICT (hour, tenant_id, layer, kind) DO UPDATE SET count = {table}.count + EXCLUDED.count",
                    [hour, tenant_id, layer, str(kind), int(n)])
    except DatabaseError:
        if connection.in_atomic_block:
            raise  # the caller's transaction is broken anyway: let it roll back whole
        log.warning("could not count %s churn of tenant %s", layer, tenant_id, exc_info=True)


def churn_totals(start: datetime, end: datetime, tenant_ids=None) -> dict[tuple[int, str, str], int]:
    """{(tenant id, layer, kind): count} over the hours in [start, end)."""
    qs = CacheChurn.objects.filter(hour__gte=start.replace(minute=0, second=0, microsecond=0), hour__lt=end)
    if tenant_ids is not None:
        qs = qs.filter(tenant_id__in=list(tenant_ids))
    return {(r["tenant_id"], r["layer"], r["kind"]): r["n"]
            for r in qs.values("tenant_id", "layer", "kind").order_by().annotate(n=Sum("count"))}


def redis_memory() -> dict | None:
    """The cache Redis's memory, limit, eviction policy and its own eviction and expiry counters
    (since its start); None when it cannot be reached."""
    try:
        memory, stats = redis_info("memory"), redis_info("stats")
    except RedisUnavailable as exc:
        redis_failed(exc)
        return None
    return {"used_bytes": memory.get("used_memory", 0), "max_bytes": memory.get("maxmemory", 0),
            "policy": memory.get("maxmemory_policy", ""), "evicted_keys": stats.get("evicted_keys", 0),
            "expired_keys": stats.get("expired_keys", 0)}
