"""Per-intent similarity thresholds in force, and the judge's recalibrated thresholds. Both belong to
the embedding model they were measured on: a cosine of one model says nothing about another's.

For the embedding model in force (the active index generation's, the one queries are embedded with):
code defaults (calibrated offline, for the models in ``MODEL_DEFAULTS`` only), overridden by settings
(``SEMANTIC_THRESHOLDS``, measured on ``SEMANTIC_THRESHOLDS_MODEL``), overridden by the newest
staff-applied database version measured on this very model (name and version). An intent with none of
these is *uncalibrated*: its floor is the code default, and its semantic hits are held as shadow hits
(``caching.modes.hold_uncalibrated``) until staff recalibrate it on the calibration page. Values of
other models are kept (a switch back finds them) but never used.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count

from caching.guards import DEFAULT_THRESHOLDS, INTENT_CLASSES
from caching.models import JudgeThreshold, ThresholdSetting
from core.localcache import LocalCache
from retrieval.embeddings import get_embedder
from retrieval.services import active_generation_cached

TTL_S = 10.0
# Staff change thresholds through calibration, which forgets them in its own process after the
# commit; other processes follow within TTL_S.
_thresholds: LocalCache = LocalCache("thresholds", ttl_s=TTL_S, max_entries=8)

# The embedding models the code defaults were calibrated on (offline, on the shipped pair sets).
MODEL_DEFAULTS: dict[str, dict[str, float]] = {"all-MiniLM-L6-v2": DEFAULT_THRESHOLDS}

UNCALIBRATED = "uncalibrated"


@dataclass(frozen=True)
class ThresholdState:
    """The thresholds in force for one embedding model, where each comes from, and what was measured
    on other models (not used)."""

    model: str
    version: str
    values: dict[str, float]
    sources: dict[str, str]  # intent -> "code default", "settings", "staff v<N>" or "uncalibrated"
    elsewhere: tuple[tuple[str, str, int], ...] = ()  # (model, version, staff rows) measured on other models

    @property
    def uncalibrated(self) -> frozenset[str]:
        return frozenset(i for i, s in self.sources.items() if s == UNCALIBRATED)

    def serves(self, intent: str) -> bool:
        """Whether a semantic hit of ``intent`` may be served (its threshold was measured on this model);
        a hit of no known intent needs every intent measured."""
        return intent not in self.uncalibrated if intent else not self.uncalibrated

    def notice(self) -> str:
        """What staff read on the calibration page and the dashboard, or "" when all is measured."""
        if not self.uncalibrated:
            return ""
        other = "; ".join(f"{m} {v} ({n} staff thresholds)" for m, v, n in self.elsewhere)
        return (f"Embedding model {self.model} ({self.version}) has no measured threshold for "
                f"{', '.join(sorted(self.uncalibrated))}: their semantic hits are held in shadow until you "
                "recalibrate them on the calibration page"
                + (f". Thresholds measured on other models are not used: {other}" if other else "") + ".")


def model_in_force() -> tuple[str, str]:
    """(name, version) of the embedding model queries are embedded with: the active index
    generation's (even in a process that cannot embed with it yet), else the configured one."""
    generation = active_generation_cached()
    if generation is not None:
        return generation.model_name, generation.model_version
    embedder = get_embedder()
    return embedder.name, embedder.version


def threshold_state(refresh: bool = False, model: tuple[str, str] | None = None) -> ThresholdState:
    name, version = model or model_in_force()
    key = f"intent:{name}:{version}"
    if refresh:
        _thresholds.forget(key)
    return _thresholds.get(key, lambda: _state_load(name, version))


def current_thresholds(refresh: bool = False, model: tuple[str, str] | None = None) -> dict[str, float]:
    return threshold_state(refresh, model).values


def base_values(name: str) -> tuple[dict[str, float], dict[str, str]]:
    """(values, sources) without any staff version: code defaults where measured, settings, the rest
    uncalibrated at the code default."""
    values = dict(DEFAULT_THRESHOLDS)
    sources = {i: UNCALIBRATED for i in INTENT_CLASSES}
    measured = MODEL_DEFAULTS.get(name, {})
    values.update(measured)
    sources.update({i: "code default" for i in measured})
    if settings.SEMANTIC_THRESHOLDS_MODEL == name:
        values.update(settings.SEMANTIC_THRESHOLDS)
        sources.update({i: "settings" for i in settings.SEMANTIC_THRESHOLDS})
    return values, sources


def _state_load(name: str, version: str) -> ThresholdState:
    values, sources = base_values(name)
    rows = (ThresholdSetting.objects.filter(embedding_model=name, embedding_version=version)
            .order_by("intent", "-version").distinct("intent"))
    for row in rows:
        values[row.intent], sources[row.intent] = row.value, f"staff v{row.version}"
    elsewhere = (ThresholdSetting.objects.exclude(embedding_model=name, embedding_version=version)
                 .values_list("embedding_model", "embedding_version").annotate(n=Count("id"))
                 .order_by("embedding_model", "embedding_version"))
    return ThresholdState(name, version, values, sources, tuple(elsewhere))


def invalidate_thresholds() -> None:
    """Forget every model's thresholds (and the judge's: cheap to load again)."""
    _thresholds.forget()


def judge_threshold(tenant_id: int, judge_version: str, refresh: bool = False,
                    model: tuple[str, str] | None = None) -> float | None:
    """The tenant's recalibrated judge threshold for this judge version, measured on the embedding
    model in force (``JudgeThreshold``), or None (the judge's own)."""
    if refresh:
        invalidate_judge_thresholds()
    name, version = model or model_in_force()
    return _thresholds.get("judge", _judge_thresholds_load).get((tenant_id, judge_version, name, version))


def _judge_thresholds_load() -> dict[tuple[int, str, str, str], float]:
    fields = ("tenant_id", "judge_version", "embedding_model", "embedding_version")
    rows = JudgeThreshold.objects.order_by(*fields, "-version").distinct(*fields).values_list(*fields, "value")
    return {tuple(r[:4]): r[4] for r in rows}


def invalidate_judge_thresholds() -> None:
    _thresholds.forget("judge")
