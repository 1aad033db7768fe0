"""Per-intent similarity thresholds in force: code defaults (calibrated offline),
overridden by settings, overridden by the newest staff-applied database version."""
from __future__ import annotations

from django.conf import settings

from caching.guards import DEFAULT_THRESHOLDS
from caching.models import JudgeThreshold, ThresholdSetting
from core.localcache import LocalCache

TTL_S = 10.0
# Staff change thresholds through calibration, which forgets them in its own process after the
# commit; other processes follow within TTL_S.
_thresholds: LocalCache[dict] = LocalCache("thresholds", ttl_s=TTL_S, max_entries=2)


def current_thresholds(refresh: bool = False) -> dict[str, float]:
    if refresh:
        invalidate_thresholds()
    return _thresholds.get("intent", _intent_thresholds_load)


def _intent_thresholds_load() -> dict[str, float]:
    values = dict(DEFAULT_THRESHOLDS)
    values.update(settings.SEMANTIC_THRESHOLDS)
    for row in ThresholdSetting.objects.order_by("intent", "-version").distinct("intent"):
        values[row.intent] = row.value
    return values


def invalidate_thresholds() -> None:
    _thresholds.forget("intent")


def judge_threshold(tenant_id: int, judge_version: str, refresh: bool = False) -> float | None:
    """The tenant's recalibrated judge threshold for this judge version (``JudgeThreshold``), or None."""
    if refresh:
        invalidate_judge_thresholds()
    return _thresholds.get("judge", _judge_thresholds_load).get((tenant_id, judge_version))


def _judge_thresholds_load() -> dict[tuple[int, str], float]:
    rows = (JudgeThreshold.objects.order_by("tenant_id", "judge_version", "-version")
            .distinct("tenant_id", "judge_version").values_list("tenant_id", "judge_version", "value"))
    return {(t, v): value for t, v, value in rows}


def invalidate_judge_thresholds() -> None:
    _thresholds.forget("judge")
