"""Per-intent similarity thresholds in force: code defaults (calibrated offline),
overridden by settings, overridden by the newest staff-applied database version."""
from __future__ import annotations

import threading

import cachetools
from django.conf import settings

TTL_S = 10.0
_cache = cachetools.TTLCache(maxsize=1, ttl=TTL_S)
_lock = threading.Lock()


def current_thresholds(refresh: bool = False) -> dict[str, float]:
    if not refresh:
        with _lock:
            values = _cache.get("thresholds")
        if values is not None:
            return values
    from caching.guards import DEFAULT_THRESHOLDS
    from caching.models import ThresholdSetting

    values = dict(DEFAULT_THRESHOLDS)
    values.update(settings.SEMANTIC_THRESHOLDS)
    for row in ThresholdSetting.objects.order_by("intent", "-version").distinct("intent"):
        values[row.intent] = row.value
    with _lock:
        _cache["thresholds"] = values
    return values


def invalidate_thresholds() -> None:
    with _lock:
        _cache.clear()
