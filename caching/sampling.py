"""Which cache hits enter the labelling queue.

Called by ``supportbot.pipeline.record`` inside its transaction, right after the
decisions are written. A hit is sampled with the probability its stratum has in
``settings.SAMPLE_RATES`` (``exact``, ``semantic`` and ``shadow`` for shadow
would-hits); on top of that the first ``SAMPLE_MIN_PER_INTENT_DAY`` hits of each
stratum and intent class each day are always sampled, so a rare intent gets labels
even when a 2% rate would take weeks to reach it. The per-day counters live in
Redis (one round trip per hit); with Redis down only the rate applies.

Sampled semantic hits can get an automatic second opinion (``SECOND_OPINION_ENABLED``):
a Celery task regenerates the answer after the commit and flags a disagreement.
"""
from __future__ import annotations

import logging
import random

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from caching.models import CacheDecision, SampledHit
from supportbot.redis_client import RedisUnavailable, get_redis, mark_redis_down, redis_available

log = logging.getLogger(__name__)

STRATA: dict[tuple[str, str], str] = {
    (CacheDecision.Layer.EXACT, CacheDecision.Disposition.HIT): "exact",
    (CacheDecision.Layer.SEMANTIC, CacheDecision.Disposition.HIT): "semantic",
    (CacheDecision.Layer.SEMANTIC, CacheDecision.Disposition.SHADOW_HIT): "shadow",
}
_rng = random.Random()


def stratum_of(decision) -> str | None:
    return STRATA.get((decision.layer, decision.disposition))


def sample_decisions(ask, decisions) -> list[SampledHit]:
    """Pick the hits of one Ask that go to the labelling queue.

    ``decisions`` are saved ``CacheDecision`` rows or the pipeline's ``LayerResult``s (already
    written for ``ask``): the decision row is then read only for a hit that is sampled, so the
    usual hit costs one Redis round trip here and no query."""
    picked = []
    for d in decisions:
        stratum = stratum_of(d)
        if stratum is None:
            continue
        why = _sample_reason(stratum, d.intent)
        if not why:
            continue
        row = d if isinstance(d, CacheDecision) else (
            CacheDecision.objects.filter(ask=ask, layer=d.layer, disposition=d.disposition).first())
        if row is not None:
            picked.append(SampledHit(decision=row, tenant_id=ask.tenant_id, stratum=stratum, intent=d.intent, why=why))
    if not picked:
        return picked
    SampledHit.objects.bulk_create(picked)
    if settings.SECOND_OPINION_ENABLED:
        from caching.tasks import second_opinion

        for s in picked:
            if s.stratum == "semantic":
                transaction.on_commit(lambda pk=s.pk: second_opinion.delay(pk))
    return picked


def _sample_reason(stratum: str, intent: str) -> str:
    rate = float(settings.SAMPLE_RATES.get(stratum, 0.0))
    by_rate = _rng.random() < rate
    minimum = settings.SAMPLE_MIN_PER_INTENT_DAY
    if minimum <= 0:
        return "rate" if by_rate else ""
    counted = _day_count(stratum, intent, increment=by_rate)
    if by_rate:
        return "rate"
    if counted is not None and counted < minimum:
        _day_count(stratum, intent, increment=True)
        return "intent minimum"
    return ""


def _day_count(stratum: str, intent: str, *, increment: bool) -> int | None:
    """Samples taken today in this stratum and intent (None when Redis is unavailable)."""
    if not redis_available():
        return None
    key = f"sample:{timezone.now():%Y%m%d}:{stratum}:{intent or '-'}"
    try:
        r = get_redis()
        if increment:
            pipe = r.pipeline(transaction=False)
            pipe.incr(key)
            pipe.expire(key, 2 * 86400)
            return int(pipe.execute()[0]) - 1
        return int(r.get(key) or 0)
    except RedisUnavailable:
        mark_redis_down()
        return None
