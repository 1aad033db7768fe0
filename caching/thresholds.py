"""Per-intent similarity thresholds in force: code defaults (calibrated offline),
overridden by settings, overridden by the newest staff-applied database version."""
from __future__ import annotations

import time

from django.conf import settings

_cache: tuple[float, dict[str, float]] | None = None
TTL_S = 10.0


def current_thresholds(refresh: bool = False) -> dict[str, float]:
    global _cache
    now = time.monotonic()
    if not refresh and _cache is not None and now - _cache[0] < TTL_S:
        return _cache[1]
    from caching.guards import DEFAULT_THRESHOLDS
    from caching.models import ThresholdSetting

    values = dict(DEFAULT_THRESHOLDS)
    values.update(settings.SEMANTIC_THRESHOLDS)
    for row in ThresholdSetting.objects.order_by("intent", "-version").distinct("intent"):
        values[row.intent] = row.value
    _cache = (now, values)
    return values


def invalidate_thresholds() -> None:
    global _cache
    _cache = None
