"""Per-intent similarity thresholds in force: code defaults (calibrated offline),
overridden by settings, overridden by the newest staff-applied database version."""
from __future__ import annotations

import threading
import time

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


_judge_cache: tuple[float, dict[tuple[int, str], float]] | None = None


def judge_threshold(tenant_id: int, judge_version: str, refresh: bool = False) -> float | None:
    """The tenant's recalibrated judge threshold for this judge version (``JudgeThreshold``), or None."""
    global _judge_cache
    now = time.monotonic()
    if refresh or _judge_cache is None or now - _judge_cache[0] >= TTL_S:
        from caching.models import JudgeThreshold

        rows = (JudgeThreshold.objects.order_by("tenant_id", "judge_version", "-version")
                .distinct("tenant_id", "judge_version").values_list("tenant_id", "judge_version", "value"))
        _judge_cache = (now, {(t, v): value for t, v, value in rows})
    return _judge_cache[1].get((tenant_id, judge_version))


def invalidate_judge_thresholds() -> None:
    global _judge_cache
    _judge_cache = None
