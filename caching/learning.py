"""Learning from near misses, off the request path (issue 12).

When the learned judge refuses a candidate it was unsure about (its probability at or above
``JUDGE_LEARN_MIN_PROBABILITY`` but below the serve threshold), the customer gets a fresh answer
as always; after the Ask's record commits, the pair is queued for the strongest verifier the
deployment has (``generation.verifier``: the model server, yes or no). An approved
pair becomes

* an **alias** of the entry: the next asker of the same question (normalised, same scope) is
  served the entry (``SemanticLayer.alias_lookup``), for as long as the entry may be served;
* a **training label** (``LabeledPair``, source ``verifier``; a rejection is a negative one).
  Verifier labels train the judge; they never calibrate it (only staff labels do).

A verifier error, a reply that is not yes/no and a timeout are misses: no alias, no label.

The queue is deduplicated (one ``PairVerification`` per entry and question, ever: the row is
created before the task is queued, under a unique constraint) and rate-limited per tenant
(``JUDGE_VERIFY_MAX_PER_MINUTE``, a fixed window in Redis; with Redis down nothing is queued).
Candidates a reliable guard vetoed (a number, an entity, a negation ... differs; the judge does
not even score those) and locales the judge abstains for are never sent: the verifier must not
talk the cache out of a veto.
"""
from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import IntegrityError, transaction

from caching.models import PairVerification
from caching.tasks import pair_verify as pair_verify_task
from core.cachelayer import LayerResult
from core.redis_client import RedisUnavailable, get_redis, redis_available, redis_failed

log = logging.getLogger(__name__)

ABSTAIN_PREFIX = "judge abstains"  # the judge's reason when it does not score a locale (caching.guards)
RATE_KEY = "judge:verify:{tenant}:{window}"


# Refusals that no verifier may overturn: a reliable veto (a number, place, tier, negation ...
# differs), a locale the judge cannot read, an entry whose cited article changed.
FINAL_REFUSALS = ("veto", ABSTAIN_PREFIX, "cited article changed")


def unsure(result: LayerResult, tenant_threshold: float | None = None) -> bool:
    """The judge scored the best candidate in the unsure band: at or above the floor, and refused
    by its probability alone. The judge scores a candidate only after eligibility, the cosine
    floor and the vetoes let it through, so a refused candidate with a probability was refused
    for being below the threshold in force (the artefact's, or the tenant's when stricter)."""
    p = result.judge_probability
    if (result.layer != "semantic" or result.disposition not in ("miss", "assist") or not result.candidate.isdigit()
            or p is None or p < settings.JUDGE_LEARN_MIN_PROBABILITY or result.reason.startswith(FINAL_REFUSALS)):
        return False
    return tenant_threshold is None or p < tenant_threshold


# --------------------------------------------------------------------------- queueing (request path)

def near_miss_queue(tenant_id: int, ask_id: int, question: str, normalized: str, result: LayerResult) -> None:
    """Called inside the Ask's record transaction: queue the check once the record is committed."""
    if not settings.JUDGE_LEARN_FROM_MISSES:
        return
    entry_id = int(result.candidate)
    transaction.on_commit(lambda: near_miss_enqueue(tenant_id, ask_id, entry_id, question, normalized,
                                                    result.judge_probability, result.judge_version))


def near_miss_enqueue(tenant_id: int, ask_id: int, entry_id: int, question: str, normalized: str,
                      probability: float | None, judge_version: str) -> PairVerification | None:
    """Rate limit, dedupe, then queue ``caching.tasks.pair_verify``. Returns the new pending row,
    or None when the pair was known already, the tenant is over its rate or Redis is down."""
    if PairVerification.objects.filter(entry_id=entry_id, normalized_question=normalized).exists():
        return None
    if not _rate_allows(tenant_id):
        return None
    try:
        with transaction.atomic():
            row = PairVerification.objects.create(
                entry_id=entry_id, tenant_id=tenant_id, source_ask_id=ask_id, question=question,
                normalized_question=normalized, judge_probability=probability, judge_version=judge_version)
    except IntegrityError:  # another process queued the same pair meanwhile (or the entry is gone)
        return None
    pair_verify_task.delay(row.pk)
    return row


def rate_window() -> int:
    """The current minute: the fixed window of the per-tenant rate limit."""
    return int(time.time() // 60)


def _rate_allows(tenant_id: int) -> bool:
    if not redis_available():
        return False
    key = RATE_KEY.format(tenant=tenant_id, window=rate_window())
    try:
        r = get_redis()
        pipe = r.pipeline()
        pipe.incr(key)
        pipe.expire(key, 120)
        count = pipe.execute()[0]
    except RedisUnavailable as exc:
        redis_failed(exc)  # an error reply (a full Redis) loses this check only: the caches keep reading
        return False
    return count <= settings.JUDGE_VERIFY_MAX_PER_MINUTE
