"""Per-tenant recalibration of the learned judge's threshold from staff labels (issue 12).

Every labelled pair kept from a semantic decision (``supportbot.review.pair_keep``) carries the
judge's probability and version at decision time. For one tenant and judge version the pairs give,
at each threshold t of ``JUDGE_CALIBRATION_GRID``, the served pairs (probability >= t), their
precision (with its 95% Wilson lower bound) and coverage (served should-hits / all should-hits).
The recommendation is the lowest threshold from which precision stays at or above the target
(``CALIBRATION_TARGET_PRECISION``) at every higher threshold that serves anything.

Once a tenant has ``JUDGE_RECALIBRATE_MIN_LABELS`` staff labels of a judge version, the
recommendation is written as a new ``JudgeThreshold`` version (nightly, from the staff
calibration page, or ``manage.py calibrate --judge``). In force it only tightens the judge's own
operating point (``supportbot.pipeline.judge_after``): labels come mostly from served and
would-be-served pairs, so they show where the judge is too loose far better than where it is too
strict. Verifier labels (``LabeledPair.Source.VERIFIER``) never count: a model does not calibrate
the model that feeds it.
"""
from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from caching.audit import audit
from caching.calibration import Curve, Point
from caching.models import JudgeThreshold, LabeledPair
from caching.rollups import tenant_lookup
from caching.stats import wilson
from caching.thresholds import invalidate_judge_thresholds, model_in_force
from core.models import Tenant


def judge_pairs(tenant_id, judge_version: str = "") -> tuple[str, list[tuple[float, bool]]]:
    """(judge version, [(probability, should_hit)]) of a tenant's staff labels (``tenant_id``: one
    tenant, a collection of tenants (a staff user's) or None for all, ``rollups.tenant_lookup``);
    without a version, the version of the newest label."""
    rows = LabeledPair.objects.filter(source__in=LabeledPair.STAFF_SOURCES, judge_probability__isnull=False) \
        .exclude(judge_version="").filter(**tenant_lookup(tenant_id))
    if not judge_version:
        judge_version = rows.order_by("-created_at").values_list("judge_version", flat=True).first() or ""
    pairs = list(rows.filter(judge_version=judge_version).values_list("judge_probability", "should_hit"))
    return judge_version, pairs


def judge_curve(pairs: list[tuple[float, bool]], target: float | None = None, grid=None) -> Curve:
    """Precision and coverage by judge-probability threshold, and the recommended threshold."""
    target = settings.CALIBRATION_TARGET_PRECISION if target is None else target
    grid = sorted(settings.JUDGE_CALIBRATION_GRID if grid is None else grid)
    c = Curve("learned judge, by probability")
    c.positives = sum(ok for _, ok in pairs)
    c.negatives = len(pairs) - c.positives
    for t in grid:
        served = [ok for p, ok in pairs if p >= t]
        correct = sum(served)
        c.points.append(Point(t, len(served), correct, correct / len(served) if served else None,
                              correct / c.positives if c.positives else None,
                              wilson(correct, len(served)).low if served else None))
    for point in reversed(c.points):  # from the highest threshold down, while precision holds
        if point.precision is None:
            continue
        if point.precision < target:
            break
        c.recommended = point.threshold
    if not pairs:
        c.note = "no staff labels with a judge probability yet"
    elif c.recommended is None:
        c.note = (f"no threshold reaches precision {target:.1%}: a wrong pair scores as high as the best right "
                  "ones; keep this tenant in shadow mode and report the pairs to the judge's training set")
    else:
        point = c.at_recommended
        if point.precision_low is not None and point.precision_low < target:
            c.note = (f"{point.served} labelled pairs at {c.recommended:.2f}: the 95% lower bound of precision is "
                      f"{point.precision_low:.1%}, label more before trusting it")
    return c


def judge_threshold_history(tenant_id: int) -> list[JudgeThreshold]:
    return list(JudgeThreshold.objects.filter(tenant_id=tenant_id).select_related("created_by").order_by("-version"))


@transaction.atomic
def judge_recalibrate(tenant: Tenant, user=None, *, target: float | None = None,
                      min_labels: int | None = None) -> tuple[Curve, JudgeThreshold | None]:
    """Recalibrate one tenant; a new ``JudgeThreshold`` version when there are enough labels, a
    recommendation and it differs from the one in force (the curve says why not otherwise)."""
    target = settings.CALIBRATION_TARGET_PRECISION if target is None else target
    if not 0.5 <= target <= 1.0:
        raise ValueError("the target precision is between 0.5 and 1")
    min_labels = settings.JUDGE_RECALIBRATE_MIN_LABELS if min_labels is None else min_labels
    version, pairs = judge_pairs(tenant.pk)
    curve = judge_curve(pairs, target)
    if len(pairs) < min_labels:
        curve.note = f"{len(pairs)} staff labels of judge {version or '-'}: recalibration needs {min_labels}"
        return curve, None
    if curve.recommended is None:
        return curve, None
    model, model_version = model_in_force()
    latest = JudgeThreshold.objects.filter(tenant=tenant).order_by("-version").first()
    if (latest is not None and latest.judge_version == version and latest.value == curve.recommended
            and (latest.embedding_model, latest.embedding_version) == (model, model_version)
            and latest.positives + latest.negatives == len(pairs)):
        return curve, None  # nothing new
    point = curve.at_recommended
    row = JudgeThreshold.objects.create(
        tenant=tenant, judge_version=version, embedding_model=model, embedding_version=model_version,
        value=curve.recommended, target=target,
        version=(JudgeThreshold.objects.filter(tenant=tenant).aggregate(v=Max("version"))["v"] or 0) + 1,
        positives=curve.positives, negatives=curve.negatives, served=point.served, precision=point.precision,
        precision_low=point.precision_low, coverage=point.coverage, note=curve.note[:300],
        created_by=user if getattr(user, "pk", None) else None)
    audit(user, "judge_recalibrate", row, tenant=tenant.slug, judge_version=version, value=row.value,
          previous=latest.value if latest else None, labels=len(pairs), target=target)
    transaction.on_commit(invalidate_judge_thresholds)
    return curve, row


def judge_recalibrate_all() -> list[JudgeThreshold]:
    """Every tenant with enough staff labels (the nightly job); the new rows."""
    rows = []
    for tenant in Tenant.objects.order_by("slug"):
        _, row = judge_recalibrate(tenant)
        if row is not None:
            rows.append(row)
    return rows
