"""Which cache hits enter the labelling queue.

Called on ``decisions_recorded`` (``supportbot.receivers``), inside the pipeline's record
transaction, right after the decisions are written. A hit is sampled with the probability its stratum has in
``settings.SAMPLE_RATES`` (``exact``, ``semantic`` and ``shadow`` for shadow
would-hits); a semantic hit the learned judge alone served (its reason ``judge: p=…``, no strict
match) takes the ``judge`` rate instead when one is set, since those are the hits a judge's mistake
reaches and the ones a tenant's judge recalibration learns from; on top of that the first ``SAMPLE_MIN_PER_INTENT_DAY`` hits of each
stratum and intent class each day are always sampled, so a rare intent gets labels
even when a 2% rate would take weeks to reach it. The per-day counters live in
Redis (one round trip per hit); with Redis down only the rate applies.

Sampled semantic hits can get an automatic second opinion (``SECOND_OPINION_ENABLED``):
the receiver queues a Celery task that regenerates the answer after the commit and flags a
disagreement (``supportbot.review.second_opinion``).
"""
from __future__ import annotations

import logging
import random
from collections import Counter
from typing import NamedTuple

from django.conf import settings
from django.utils import timezone

from caching.guards import JUDGE_REASON
from caching.models import CacheDecision, SampledHit
from core.redis_client import RedisUnavailable, get_redis, mget_spread, redis_available, redis_failed

log = logging.getLogger(__name__)

STRATA: dict[tuple[str, str], str] = {
    (CacheDecision.Layer.EXACT, CacheDecision.Disposition.HIT): "exact",
    (CacheDecision.Layer.SEMANTIC, CacheDecision.Disposition.HIT): "semantic",
    (CacheDecision.Layer.SEMANTIC, CacheDecision.Disposition.SHADOW_HIT): "shadow",
}
_rng = random.Random()


def stratum_of(decision) -> str | None:
    return STRATA.get((decision.layer, decision.disposition))


def rate_of(decision, stratum: str) -> float:
    """The sample rate of a hit: its stratum's, or ``judge``'s for a semantic hit the judge alone served."""
    rates = settings.SAMPLE_RATES
    if stratum == "semantic" and "judge" in rates and (decision.reason or "").startswith(JUDGE_REASON):
        return float(rates["judge"])
    return float(rates.get(stratum, 0.0))


def sample_decisions(ask, decisions) -> list[SampledHit]:
    """Pick the hits of one Ask that go to the labelling queue (``decisions``: its saved ``CacheDecision`` rows)."""
    return sample_batch([(ask.tenant_id, decisions)])


class DecisionRef(NamedTuple):
    """What sampling needs of a saved decision (a ``CacheDecision`` row has the same attributes)."""

    pk: int
    layer: str
    disposition: str
    intent: str
    reason: str = ""


def sample_batch(asks: list[tuple[int, list]]) -> list[SampledHit]:
    """Pick the hits of many Asks, ``[(tenant id, the Ask's saved decisions), ...]``.

    One Redis round trip reads the day's counts of every stratum and intent involved, one
    more adds the new samples."""
    candidates = [(tenant_id, d, stratum) for tenant_id, decisions in asks for d in decisions
                  if (stratum := stratum_of(d)) is not None]
    if not candidates:
        return []
    minimum = settings.SAMPLE_MIN_PER_INTENT_DAY
    day = f"{timezone.now():%Y%m%d}"
    counts = _day_counts(day, {(stratum, d.intent) for _, d, stratum in candidates}) if minimum > 0 else None
    taken: Counter = Counter()
    picked = []
    for tenant_id, d, stratum in candidates:
        why = "rate" if _rng.random() < rate_of(d, stratum) else ""
        if not why and counts is not None and counts[(stratum, d.intent)] + taken[(stratum, d.intent)] < minimum:
            why = "intent minimum"
        if why:
            taken[(stratum, d.intent)] += 1
            picked.append(SampledHit(decision_id=d.pk, tenant_id=tenant_id, stratum=stratum, intent=d.intent, why=why))
    if counts is not None:
        _day_counts_add(day, taken)
    if not picked:
        return picked
    SampledHit.objects.bulk_create(picked)
    return picked


def _day_key(day: str, stratum: str, intent: str) -> str:
    return f"sample:{day}:{stratum}:{intent or '-'}"


def _day_counts(day: str, strata: set[tuple[str, str]]) -> Counter | None:
    """Samples taken today per (stratum, intent); None when Redis is unavailable (the rate alone applies)."""
    if not redis_available():
        return None
    order = sorted(strata)
    try:
        values = mget_spread(get_redis(), [_day_key(day, s, i) for s, i in order])
    except RedisUnavailable as exc:
        redis_failed(exc)
        return None
    return Counter({k: int(v or 0) for k, v in zip(order, values)})


def _day_counts_add(day: str, taken: Counter) -> None:
    if not taken:
        return
    try:
        pipe = get_redis().pipeline(transaction=False)
        for (stratum, intent), n in taken.items():
            key = _day_key(day, stratum, intent)
            pipe.incrby(key, n)
            pipe.expire(key, 2 * 86400)
        pipe.execute()
    except RedisUnavailable as exc:
        redis_failed(exc)
