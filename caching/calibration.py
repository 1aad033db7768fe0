"""Threshold calibration from labelled question pairs.

For every pair (cached question, new question, should_hit) we run the real guards
(``guards.judge`` with the threshold out of the way) and the real embedding
similarity; a pair is then served at threshold t exactly when the guards accept it
and similarity >= t. Per intent class and threshold on the grid that gives

* precision: served pairs that should hit / all served pairs,
* coverage: served pairs that should hit / all pairs that should hit,

and the recommendation is the lowest threshold from which precision stays at or above
the target (``CALIBRATION_TARGET_PRECISION``) at every higher threshold that serves anything
(a threshold that serves nothing proves nothing). An intent with
no negative pair gets no recommendation: its precision has not been measured.

Pairs come from ``LabeledPair`` rows (labelled samples and review verdicts) and from
files in the ``evalcache`` format (``caching.pairs``). Pairs that cross
tenants or locales are left out: hard filters decide those, not the threshold.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from caching import guards
from caching.audit import audit
from caching.models import CalibrationUpload, LabeledPair, ThresholdSetting
from caching.pairs import PairFileError, read_pairs
from caching.rollups import tenant_lookup
from caching.stats import wilson
from caching.thresholds import base_values, current_thresholds, invalidate_thresholds, model_in_force
from core.jobs import job_run
from retrieval.embeddings import SHARED, EmbedStats, embed_texts, get_embedder

NO_THRESHOLD = {intent: -1.0 for intent in guards.INTENT_CLASSES}


@dataclass
class Pair:
    cached: str
    new: str
    should_hit: bool
    similarity: float
    source: str = ""


@dataclass
class Point:
    threshold: float
    served: int
    correct: int
    precision: float | None
    coverage: float | None
    precision_low: float | None = None  # lower end of the 95% Wilson interval


@dataclass
class Curve:
    intent: str
    positives: int = 0
    negatives: int = 0
    blocked: int = 0  # pairs the guards refuse at any threshold
    points: list[Point] = field(default_factory=list)
    recommended: float | None = None
    current: float | None = None
    note: str = ""

    @property
    def at_recommended(self) -> Point | None:
        return next((p for p in self.points if p.threshold == self.recommended), None)

    @property
    def at_current(self) -> Point | None:
        """The grid point nearest the threshold in force (the grid is what was measured)."""
        if self.current is None or not self.points:
            return None
        return min(self.points, key=lambda p: abs(p.threshold - self.current))


# --------------------------------------------------------------------------- pairs

def similarities(texts_a: list[str], texts_b: list[str], *, cache: str | None = SHARED,
                 stats: EmbedStats | None = None) -> list[float]:
    """Cosine similarity of each (a, b) with the real embedding model (vectors are normalised).
    ``cache=None`` for customers' questions: their vectors stay out of the shared embedding cache."""
    unique = sorted(set(texts_a) | set(texts_b))
    if not unique:
        return []
    vectors = dict(zip(unique, embed_texts(unique, cache=cache, stats=stats)))
    return [float(vectors[a] @ vectors[b]) for a, b in zip(texts_a, texts_b)]


def pairs_from_db(tenant_id=None) -> list[Pair]:
    """Labelled pairs from review and labelling; similarities of another embedding version are redone.
    ``tenant_id``: one tenant, a collection of tenants or None for all (``rollups.tenant_lookup``).
    The verifier's labels are left out: a model's labels calibrate nothing."""
    rows = list(LabeledPair.objects.exclude(source=LabeledPair.Source.VERIFIER).filter(**tenant_lookup(tenant_id)))
    version = get_embedder().version
    stale = [r for r in rows if r.similarity is None or r.embedding_version != version]
    if stale:
        for r, sim in zip(stale, similarities([r.cached_question for r in stale], [r.new_question for r in stale],
                                                 cache=None)):
            r.similarity, r.embedding_version = sim, version
        LabeledPair.objects.bulk_update(stale, ["similarity", "embedding_version"])
    return [Pair(r.cached_question, r.new_question, r.should_hit, r.similarity, r.source) for r in rows]


def pairs_from_file(path) -> tuple[list[Pair], int]:
    """Pairs of an evalcache-format file, and how many were left out for crossing tenant or locale."""
    rows = read_pairs(path)
    kept = [p for p in rows if p["ctx_cached"]["tenant"] == p["ctx_new"]["tenant"]
            and p["ctx_cached"]["locale"] == p["ctx_new"]["locale"]]
    sims = similarities([p["cached"] for p in kept], [p["new"] for p in kept])
    return ([Pair(p["cached"], p["new"], bool(p["should_hit"]), s, "file") for p, s in zip(kept, sims)],
            len(rows) - len(kept))


# --------------------------------------------------------------------------- curves

def calibrate(pairs: list[Pair], target: float | None = None, grid: list[float] | None = None) -> dict[str, Curve]:
    target = settings.CALIBRATION_TARGET_PRECISION if target is None else target
    grid = sorted(settings.CALIBRATION_GRID if grid is None else grid)
    in_force = current_thresholds()
    judged: dict[str, list[tuple[Pair, bool]]] = {}
    for p in pairs:
        j = guards.judge(p.new, p.cached, p.similarity, thresholds=NO_THRESHOLD)
        judged.setdefault(j.intent, []).append((p, j.serve))
    curves = {}
    for intent, items in sorted(judged.items()):
        c = Curve(intent, current=in_force.get(intent))
        c.positives = sum(p.should_hit for p, _ in items)
        c.negatives = len(items) - c.positives
        c.blocked = sum(not ok for _, ok in items)
        for t in grid:
            served = [p for p, ok in items if ok and p.similarity >= t]
            correct = sum(p.should_hit for p in served)
            c.points.append(Point(t, len(served), correct, correct / len(served) if served else None,
                                  correct / c.positives if c.positives else None,
                                  wilson(correct, len(served)).low if served else None))
        _recommend(c, target)
        curves[intent] = c
    return curves


def _recommend(c: Curve, target: float) -> None:
    if not c.negatives:
        c.note = "no negative pairs: precision is unmeasured, label more hits of this intent"
        return
    if not any(p.served for p in c.points):
        c.note = "no pair passes the guards at any threshold: the threshold makes no difference on these pairs"
        return
    recommended = None
    for point in reversed(c.points):  # from the highest threshold down, while precision holds
        if point.precision is None:  # nothing served this high: no evidence either way
            continue
        if point.precision < target:
            break
        recommended = point.threshold
    if recommended is None:
        worst = max((p for p in c.points if p.precision is not None), key=lambda p: p.threshold)
        c.note = (f"even at {worst.threshold:.2f} precision is {worst.precision:.1%}: a wrong pair passes the "
                  "guards at high similarity; fix the guards (signature, intent) rather than the threshold")
        return
    c.recommended = recommended
    point = c.at_recommended
    if point.precision_low is not None and point.precision_low < target:
        c.note = (f"only {point.served} pairs served at {recommended:.2f}: the 95% lower bound of precision is "
                  f"{point.precision_low:.1%}; label more pairs before trusting it")


# --------------------------------------------------------------------------- applying

def threshold_history(intent: str) -> list[ThresholdSetting]:
    """Every version of the intent's threshold, on every embedding model (each row names its own)."""
    return list(ThresholdSetting.objects.filter(intent=intent).select_related("created_by").order_by("-version"))


def base_threshold(intent: str) -> float:
    """The value in force without any staff version, for the embedding model in force: code default
    where measured on it, overridden by settings."""
    return float(base_values(model_in_force()[0])[0].get(intent, 1.0))


@transaction.atomic
def threshold_apply(intent: str, value: float, user, note: str = "") -> ThresholdSetting:
    """A new version of the intent's threshold, measured on the embedding model in force (and used
    only with it), in force at once (and in other processes within the thresholds cache TTL).
    Reverting applies an older value as a newer version."""
    if intent not in guards.INTENT_CLASSES:
        raise ValueError(f"unknown intent class {intent!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError("a cosine threshold is between 0 and 1")
    model, model_version = model_in_force()
    version = (ThresholdSetting.objects.filter(intent=intent).aggregate(v=Max("version"))["v"] or 0) + 1
    previous = current_thresholds(refresh=True, model=(model, model_version)).get(intent)
    row = ThresholdSetting.objects.create(intent=intent, value=round(value, 4), version=version, note=note[:300],
                                          embedding_model=model, embedding_version=model_version,
                                          created_by=user if getattr(user, "pk", None) else None)
    audit(user, "threshold_apply", row, intent=intent, value=row.value, previous=previous, version=version, note=note,
          embedding_model=model, embedding_version=model_version)
    transaction.on_commit(invalidate_thresholds)
    return row


# --------------------------------------------------------------------------- uploads, off the request path

UPLOAD_JOB = "calibration_upload"


def calibration_upload_create(path, file_name: str, user, *, target: float, include_db: bool,
                              tenant_ids) -> CalibrationUpload:
    """Check a pair file and store it for a worker to calibrate; nothing is embedded here. A file that
    does not fit the format (``PairFileError``, naming the line) or a target out of range
    (``ValueError``) stores nothing. The caller queues ``calibration_upload_run`` (``supportbot.staff.services``)."""
    if not 0.5 <= target <= 1.0:
        raise ValueError("the target precision is between 0.5 and 1")
    try:
        rows = read_pairs(path)
    except PairFileError as exc:
        raise PairFileError(str(exc).replace(str(path), file_name)) from None
    if not rows:
        raise PairFileError(f"{file_name}: no pairs")
    kept = [[p["cached"], p["new"], bool(p["should_hit"])] for p in rows
            if p["ctx_cached"]["tenant"] == p["ctx_new"]["tenant"] and p["ctx_cached"]["locale"] == p["ctx_new"]["locale"]]
    for n, (cached, new, _) in enumerate(kept, 1):
        if not isinstance(cached, str) or not isinstance(new, str) or not cached.strip() or not new.strip():
            raise PairFileError(f"{file_name}: pair {n}: cached and new must be non-empty text")
    with transaction.atomic():
        upload = CalibrationUpload.objects.create(
            file_name=file_name[:200], pairs=kept, file_pairs=len(kept), crossed=len(rows) - len(kept),
            include_db=include_db, tenant_ids=None if tenant_ids is None else sorted(tenant_ids), target=target,
            created_by=user if getattr(user, "pk", None) else None)
        audit(user, "calibration_upload", upload, file=upload.file_name, pairs=len(kept), target=target)
    return upload


def calibration_upload_unqueued(upload_id: int, error: str) -> None:
    """The calibration could not be queued (the broker is down): the upload says so instead of waiting."""
    CalibrationUpload.objects.filter(pk=upload_id).update(
        status=CalibrationUpload.Status.FAILED, error=f"could not queue the calibration: {error}"[:2000],
        finished_at=timezone.now())


def calibration_upload_run(upload_id: int, *, task_id: str = "", attempt: int = 1) -> CalibrationUpload:
    """The worker's part: embed the uploaded pairs (and the labelled ones if asked), calibrate, keep
    the curves; a job run (``calibration_upload``). Its pairs are dropped once calibrated."""
    upload = CalibrationUpload.objects.get(pk=upload_id)
    if upload.status == CalibrationUpload.Status.SUCCEEDED:  # a redelivered task
        return upload
    with job_run(UPLOAD_JOB, task_id=task_id, attempt=attempt, lock_name=f"{UPLOAD_JOB}:{upload_id}") as ctx:
        CalibrationUpload.objects.filter(pk=upload_id).update(status=CalibrationUpload.Status.RUNNING, job_run=ctx.run)
        try:
            stats = EmbedStats()
            cached, new = [p[0] for p in upload.pairs], [p[1] for p in upload.pairs]
            sims = similarities(cached, new, stats=stats)
            pairs = [Pair(c, n, bool(hit), s, "file") for (c, n, hit), s in zip(upload.pairs, sims)]
            if upload.include_db:
                pairs += pairs_from_db(upload.tenant_ids)
            ctx.record(scanned=len(pairs), embedded=stats.model_calls, cache_hits=stats.cache_hits)
            curves = calibrate(pairs, target=upload.target)
        except Exception as exc:
            CalibrationUpload.objects.filter(pk=upload_id).update(
                status=CalibrationUpload.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
                finished_at=timezone.now())
            raise
        CalibrationUpload.objects.filter(pk=upload_id).update(
            status=CalibrationUpload.Status.SUCCEEDED, curves=[asdict(c) for c in curves.values()], pairs=[],
            calibrated_pairs=len(pairs), error="", finished_at=timezone.now())
    upload.refresh_from_db()
    return upload


def upload_curves(upload: CalibrationUpload) -> dict[str, Curve]:
    """A finished upload's curves, with the threshold in force now."""
    in_force = current_thresholds()
    curves = {}
    for d in upload.curves:
        curve = Curve(**{**d, "points": [Point(**p) for p in d["points"]]})
        curve.current = in_force.get(curve.intent)
        curves[curve.intent] = curve
    return curves
