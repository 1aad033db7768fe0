"""A tenant's semantic mode: the gate before serve, and the automatic fallback to shadow.

A tenant starts in shadow: the semantic layer decides and records, staff label sampled would-hits.
**The gate.** Switching to serve needs the lower 95% (Wilson) bound of the labelled would-hits'
precision at or above the tenant's target (``Tenant.serve_target_precision``, else
``CALIBRATION_TARGET_PRECISION``), from at least ``SERVE_GATE_MIN_LABELS`` labels of the last
``SERVE_GATE_WINDOW_DAYS``. A staff member holding ``core.override_serve_gate`` may switch anyway,
with a reason; the figures and the reason are recorded.

**The fallback.** A tenant in serve goes back to shadow by itself when, since it was switched to
serve and within ``SEMANTIC_FALLBACK_WINDOW_H``, labelled semantic hits are wrong (at least
``SEMANTIC_FALLBACK_WRONG_LABELS`` and ``SEMANTIC_FALLBACK_WRONG_SHARE`` of the labelled) or customers
said "No" to them (``SEMANTIC_FALLBACK_CUSTOMER_NO`` and ``SEMANTIC_FALLBACK_NO_SHARE``). Checked
every minute (beat) and after every wrong label or "No" on a semantic hit (``caching.receivers``).

Every switch is a ``SemanticModeChange`` and an audit row; a saved tenant bumps its cached record,
so every web process serves the new mode at its next Ask.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from caching.audit import audit
from caching.models import CacheDecision, Feedback, Label, SampledHit, SemanticModeChange
from caching.stats import wilson
from core import metrics
from core.models import Tenant

log = logging.getLogger(__name__)

OVERRIDE_PERMISSION = "core.override_serve_gate"
SERVE = Tenant.SemanticMode.SERVE
SHADOW = Tenant.SemanticMode.SHADOW


@dataclass(frozen=True)
class GateFigures:
    """What the gate decided on: correct of labelled shadow would-hits since ``since``."""

    correct: int
    labelled: int
    low: float
    target: float
    min_labels: int
    since: datetime

    @property
    def precision(self) -> float | None:
        return self.correct / self.labelled if self.labelled else None

    @property
    def open(self) -> bool:
        return self.labelled >= self.min_labels and self.low >= self.target

    @property
    def verdict(self) -> str:
        if self.labelled < self.min_labels:
            return (f"{self.labelled} labelled shadow would-hits, the gate needs at least {self.min_labels}: "
                    f"label more on the labelling page")
        if self.low < self.target:
            return (f"precision {self.correct}/{self.labelled}: its lower 95% bound {self.low:.1%} is below the "
                    f"target {self.target:.1%}")
        return f"lower 95% bound {self.low:.1%} of {self.correct}/{self.labelled} meets the target {self.target:.1%}"

    def as_dict(self) -> dict:
        return {**asdict(self), "since": self.since.isoformat(), "open": self.open}


class GateClosed(Exception):
    """Serve was refused: the labelled precision does not show the target (``figures`` say why)."""

    def __init__(self, figures: GateFigures):
        super().__init__(f"the serve gate is closed: {figures.verdict}")
        self.figures = figures


def target_precision(tenant: Tenant) -> float:
    return tenant.serve_target_precision if tenant.serve_target_precision is not None \
        else settings.CALIBRATION_TARGET_PRECISION


def serve_gate(tenant: Tenant, now: datetime | None = None) -> GateFigures:
    """The tenant's labelled shadow would-hits of the gate's window: the newest label of each sampled
    would-hit counts (sampled ones only: hits reviewed because a customer complained are biased)."""
    since = (now or timezone.now()) - timedelta(days=settings.SERVE_GATE_WINDOW_DAYS)
    newest = Label.objects.filter(decision=OuterRef("decision")).order_by("-created_at").values("verdict")[:1]
    verdicts = (SampledHit.objects.filter(tenant_id=tenant.pk, stratum="shadow", labeled=True, created_at__gte=since)
                .annotate(verdict=Subquery(newest)).exclude(verdict=None).values_list("verdict", flat=True))
    verdicts = list(verdicts)
    correct = sum(v == Label.Verdict.CORRECT for v in verdicts)
    rate = wilson(correct, len(verdicts))
    return GateFigures(correct=correct, labelled=len(verdicts), low=rate.low if verdicts else 0.0,
                       target=target_precision(tenant), min_labels=settings.SERVE_GATE_MIN_LABELS, since=since)


def _record(tenant: Tenant, previous: str, mode: str, kind: str, user, reason: str, figures: dict) -> SemanticModeChange:
    tenant.semantic_mode = mode
    tenant.save(update_fields=["semantic_mode", "updated_at"])
    change = SemanticModeChange.objects.create(tenant=tenant, previous=previous, mode=mode, kind=kind, reason=reason,
                                               figures=figures, changed_by=user if getattr(user, "pk", None) else None)
    audit(user, "semantic_mode_set", tenant, previous=previous, mode=mode, kind=kind, reason=reason, change=change.pk)
    return change


@transaction.atomic
def semantic_mode_set(tenant: Tenant, mode: str, user, override_reason: str = "") -> SemanticModeChange | None:
    """Staff switch ``tenant`` to ``mode``. Serve goes through the gate: closed, it raises
    ``GateClosed``, unless ``override_reason`` is given by a user holding the override permission
    (``PermissionDenied`` otherwise). Returns the recorded change, None when the mode was already set."""
    if mode not in Tenant.SemanticMode.values:
        raise ValueError(f"unknown semantic mode {mode!r}")
    override_reason = override_reason.strip()[:2000]
    tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
    previous = tenant.semantic_mode
    if previous == mode:
        return None
    kind, figures = SemanticModeChange.Kind.MANUAL, {}
    if mode == SERVE:
        gate = serve_gate(tenant)
        figures = gate.as_dict()
        if not gate.open:
            if not override_reason:
                raise GateClosed(gate)
            if not user.has_perm(OVERRIDE_PERMISSION):
                raise PermissionDenied(f"overriding the serve gate needs the permission {OVERRIDE_PERMISSION}")
            kind = SemanticModeChange.Kind.OVERRIDE
    return _record(tenant, previous, mode, kind, user, override_reason if kind == "override" else "", figures)


# --------------------------------------------------------------------------- automatic fallback

@dataclass(frozen=True)
class FallbackFigures:
    since: datetime
    wrong: int
    labelled: int
    no: int
    verdicts: int

    def cause(self) -> tuple[str, str] | None:
        """(cause, what passed which bound), or None while the layer is within its bounds."""
        if self.wrong >= settings.SEMANTIC_FALLBACK_WRONG_LABELS and \
                self.wrong >= settings.SEMANTIC_FALLBACK_WRONG_SHARE * self.labelled:
            return "wrong_labels", (f"{self.wrong} of {self.labelled} labelled semantic hits wrong since "
                                    f"{self.since:%Y-%m-%d %H:%M} UTC (bound: {settings.SEMANTIC_FALLBACK_WRONG_LABELS} "
                                    f"and {settings.SEMANTIC_FALLBACK_WRONG_SHARE:.0%})")
        if self.no >= settings.SEMANTIC_FALLBACK_CUSTOMER_NO and \
                self.no >= settings.SEMANTIC_FALLBACK_NO_SHARE * self.verdicts:
            return "customer_no", (f"customers said No to {self.no} of {self.verdicts} semantic hits since "
                                   f"{self.since:%Y-%m-%d %H:%M} UTC (bound: {settings.SEMANTIC_FALLBACK_CUSTOMER_NO} "
                                   f"and {settings.SEMANTIC_FALLBACK_NO_SHARE:.0%})")
        return None


def fallback_figures(tenant: Tenant, now: datetime | None = None) -> FallbackFigures:
    """Semantic hits served since the tenant last went to serve (within the window), their labels
    (the newest of each) and their customers' verdicts."""
    since = (now or timezone.now()) - timedelta(hours=settings.SEMANTIC_FALLBACK_WINDOW_H)
    switched = (SemanticModeChange.objects.filter(tenant_id=tenant.pk, mode=SERVE)
                .values_list("created_at", flat=True).first())
    if switched is not None and switched > since:
        since = switched
    hits = CacheDecision.objects.filter(tenant_id=tenant.pk, layer=CacheDecision.Layer.SEMANTIC,
                                        disposition="hit", created_at__gte=since)
    newest = Label.objects.filter(decision=OuterRef("pk")).order_by("-created_at").values("verdict")[:1]
    verdicts = [v for _, v in hits.filter(labels__isnull=False).distinct()  # one row per hit, not per verdict
                .annotate(verdict=Subquery(newest)).values_list("pk", "verdict")]
    said = list(Feedback.objects.filter(ask__tenant_id=tenant.pk, ask__serving_layer="semantic",
                                        ask__created_at__gte=since).values_list("helpful", flat=True))
    return FallbackFigures(since=since, wrong=sum(v == Label.Verdict.WRONG for v in verdicts), labelled=len(verdicts),
                           no=sum(not h for h in said), verdicts=len(said))


def fallback_check(tenant_id: int) -> SemanticModeChange | None:
    """Back to shadow if the tenant's semantic layer passed a bound; the recorded change, or None."""
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().filter(pk=tenant_id, semantic_mode=SERVE).first()
        if tenant is None:
            return None
        figures = fallback_figures(tenant)
        passed = figures.cause()
        if passed is None:
            return None
        cause, reason = passed
        change = _record(tenant, SERVE, SHADOW, SemanticModeChange.Kind.FALLBACK, None, reason,
                         {**asdict(figures), "since": figures.since.isoformat(), "cause": cause})
    metrics.SEMANTIC_FALLBACKS.labels(tenant.slug, cause).inc()
    log.warning("semantic layer of tenant %s fell back to shadow: %s", tenant.slug, reason)
    return change


def fallback_check_all() -> list[SemanticModeChange]:
    """Every tenant in serve (beat, every minute)."""
    ids = Tenant.objects.filter(semantic_mode=SERVE).values_list("pk", flat=True)
    return [change for pk in ids if (change := fallback_check(pk)) is not None]


def fell_back_tenants() -> list[str]:
    """Slugs of the tenants in shadow because their layer fell back by itself (until staff switch
    them again): the ``ask_semantic_fell_back`` gauge and the dashboard."""
    latest = SemanticModeChange.objects.filter(tenant=OuterRef("pk")).values("kind")[:1]
    return list(Tenant.objects.filter(semantic_mode=SHADOW).annotate(last=Subquery(latest))
                .filter(last=SemanticModeChange.Kind.FALLBACK).values_list("slug", flat=True))


def recent_changes(tenant_ids, limit: int = 10):
    """The newest mode changes of these tenants (None: all), for the staff pages."""
    qs = SemanticModeChange.objects.select_related("tenant", "changed_by")
    if tenant_ids is not None:
        qs = qs.filter(tenant_id__in=list(tenant_ids) if not isinstance(tenant_ids, int) else [tenant_ids])
    return list(qs[:limit])


# --------------------------------------------------------------------------- thresholds of another model

def hold_uncalibrated(result, state) -> bool:
    """A semantic hit (``LayerResult``) whose intent has no threshold measured on the embedding model
    in force (``caching.thresholds.ThresholdState``) is held as a shadow hit: recorded and sampled
    for labels, not served, until staff recalibrate. Returns whether it was held."""
    if result.disposition != "hit" or state.serves(result.intent):
        return False
    result.disposition, result.value, result.saved_tokens, result.saved_ms = "shadow_hit", None, 0, 0.0
    result.reason = (f"shadow: no {result.intent or 'intent'} threshold measured on embedding model {state.model} "
                     f"({state.version}), recalibrate; would serve ({result.reason})")[:300]
    return True
