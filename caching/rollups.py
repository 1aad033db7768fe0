"""Hourly roll-ups of cache decisions (and of fresh model answers) for the staff dashboard.

A month of traffic is millions of decision rows; the dashboard reads ``HourlyRollup``
(one row per hour, tenant, layer, disposition and intent) for complete hours and
aggregates only the current hour live, with the same grouping functions below."""
from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Count, F, Max, Min, Sum, Value
from django.db.models.functions import Coalesce, TruncDay, TruncHour
from django.utils import timezone

from caching.models import AskEvent, CacheDecision, HourlyRollup

GENERATION = "generation"  # pseudo-layer: fresh model answers
KEY_FIELDS = ("hour", "tenant_id", "layer", "disposition", "intent")
SUM_FIELDS = ("count", "saved_tokens", "saved_ms", "lookup_ms", "prompt_tokens", "completion_tokens",
              "cached_tokens", "model_ms")


def tenant_lookup(tenant_id, field: str = "tenant_id") -> dict:
    """The filter for ``tenant_id``: None is every tenant, an int one tenant, a collection of ints
    those tenants (a staff user's, ``core.tenancy``)."""
    if tenant_id is None:
        return {}
    if isinstance(tenant_id, int):
        return {field: tenant_id}
    return {f"{field}__in": sorted(tenant_id)}


def floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def decision_groups(start: datetime, end: datetime, by=("hour", "tenant_id", "layer", "disposition", "intent"),
                    tenant_id: int | None = None):
    """Sums of CacheDecision rows created in [start, end), grouped by ``by`` (``hour`` is truncated)."""
    qs = CacheDecision.objects.filter(created_at__gte=start, created_at__lt=end)
    qs = qs.filter(**tenant_lookup(tenant_id))
    if "hour" in by:
        qs = qs.annotate(hour=TruncHour("created_at"))
    return (qs.values(*by).order_by()
            .annotate(count=Count("id"), saved_tokens=Sum("saved_tokens"), saved_ms=Sum("saved_ms"),
                      lookup_ms=Sum("lookup_ms")))


def generation_groups(start: datetime, end: datetime, by=("hour", "tenant_id", "intent"),
                      tenant_id: int | None = None):
    """Sums over fresh model answers in [start, end): what a model call costs, per group."""
    qs = AskEvent.objects.filter(created_at__gte=start, created_at__lt=end, serving_layer=AskEvent.ServingLayer.NONE,
                                 status=AskEvent.Status.ANSWERED, completion_tokens__gt=0)
    qs = qs.filter(**tenant_lookup(tenant_id))
    if "hour" in by:
        qs = qs.annotate(hour=TruncHour("created_at"))
    return (qs.values(*by).order_by()
            .annotate(count=Count("id"), prompt_tokens=Sum("prompt_tokens"),
                      completion_tokens=Sum("completion_tokens"),
                      cached_tokens=Coalesce(Sum("cached_tokens"), Value(0)), model_ms=Sum("total_ms")))


def rollup_hours(since: datetime | None = None) -> int:
    """Recompute the roll-ups of every complete hour from ``since`` (default: the last
    rolled-up hour, redone in case it was rolled while still filling) and return the rows
    written. Idempotent: an upsert per key, and keys with no rows left are deleted."""
    current = floor_hour(timezone.now())
    if since is None:
        since = HourlyRollup.objects.aggregate(h=Max("hour"))["h"]
        if since is None:
            since = CacheDecision.objects.aggregate(t=Min("created_at"))["t"]
        if since is None:
            return 0
    start = floor_hour(since)
    if start >= current:
        return 0
    rows: dict[tuple, dict] = {}
    for g in decision_groups(start, current):
        rows[tuple(g[k] for k in KEY_FIELDS)] = dict(g)
    for g in generation_groups(start, current):
        g = dict(g, layer=GENERATION, disposition="answered")
        rows[tuple(g[k] for k in KEY_FIELDS)] = g
    objs = [HourlyRollup(**{k: v for k, v in r.items() if k in KEY_FIELDS or k in SUM_FIELDS})
            for r in rows.values()]
    with transaction.atomic():
        HourlyRollup.objects.bulk_create(
            objs, batch_size=2000, update_conflicts=True,
            unique_fields=["hour", "tenant", "layer", "disposition", "intent"],
            update_fields=[f for f in SUM_FIELDS],
        )
        stale = [r.pk for r in HourlyRollup.objects.filter(hour__gte=start, hour__lt=current).only(*KEY_FIELDS)
                 if (r.hour, r.tenant_id, r.layer, r.disposition, r.intent) not in rows]
        if stale:
            HourlyRollup.objects.filter(pk__in=stale).delete()
    return len(objs)


def rollup_groups(start: datetime, end: datetime, by, tenant_id: int | None = None, bucket: str = "hour",
                  sums=SUM_FIELDS, layers=None):
    """Sums over [start, end) grouped by ``by`` (which may include ``bucket``, the hour or day),
    from roll-ups for complete hours plus live rows for the current hour. Returns a dict
    keyed by the ``by`` values, each holding the ``sums`` fields; ``layers`` limits the layers
    read. ``by`` must include ``layer``: the generation pseudo-layer's sums are not decisions
    and must not be added to them."""
    assert "layer" in by, "group by layer: generation rows are not decisions"
    current = floor_hour(timezone.now())
    out: dict[tuple, dict] = {}

    def add(key, row):
        acc = out.setdefault(key, {f: 0 for f in sums})
        for f in sums:
            acc[f] += row.get(f) or 0

    def bucket_of(hour: datetime) -> datetime:
        return hour.replace(hour=0) if bucket == "day" else hour

    rolled_end = min(end, current)
    if start < rolled_end:
        qs = HourlyRollup.objects.filter(hour__gte=start, hour__lt=rolled_end)
        qs = qs.filter(**tenant_lookup(tenant_id))
        if layers is not None:
            qs = qs.filter(layer__in=list(layers))
        fields = [f for f in by if f != "bucket"]
        if "bucket" in by:
            if bucket == "day":
                qs = qs.annotate(bucket=TruncDay("hour"))
            else:
                qs = qs.annotate(bucket=F("hour"))
            fields = list(by)
        for g in qs.values_list(*fields).order_by().annotate(*[Sum(f) for f in sums]):
            key, values = g[:len(by)], g[len(by):]
            add(tuple(key), dict(zip(sums, values)))
    if end > current:
        live_by = [("hour" if f == "bucket" else f) for f in by]
        for g in decision_groups(max(start, current), end, by=live_by, tenant_id=tenant_id):
            if layers is None or g["layer"] in layers:
                add(_live_key(g, by, bucket_of), g)
        if layers is None or GENERATION in layers:
            gen_by = [f for f in live_by if f not in ("layer", "disposition")]
            for g in generation_groups(max(start, current), end, by=gen_by, tenant_id=tenant_id):
                g = dict(g, layer=GENERATION, disposition="answered")
                add(_live_key(g, by, bucket_of), g)
    return out


def _live_key(g: dict, by, bucket_of) -> tuple:
    return tuple(bucket_of(g["hour"]) if f == "bucket" else g[f] for f in by)
