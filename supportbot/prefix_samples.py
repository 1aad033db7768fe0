"""Scraped samples of the model servers' prefix-cache counters (hourly, by beat)."""
from __future__ import annotations

import logging

from django.conf import settings

from generation.base import GenerationError
from generation.fleet import metrics_targets, scrape_prefix_cache_metrics
from supportbot.models import PrefixCacheSample

log = logging.getLogger(__name__)


def prefix_cache_samples_record() -> list[PrefixCacheSample]:
    """One sample per model server; an unreachable server is recorded as a failed sample, not skipped,
    so a gap in the fleet view is visible."""
    samples = []
    for target in metrics_targets():
        try:
            m = scrape_prefix_cache_metrics(target, api_key=settings.VLLM_API_KEY)
        except GenerationError as exc:
            log.warning("prefix-cache scrape of %s failed: %s", target, exc)
            samples.append(PrefixCacheSample(target=target, ok=False, error=str(exc)[:300]))
            continue
        samples.append(PrefixCacheSample(target=target, prefix_cache_queries=m.prefix_cache_queries,
                                         prefix_cache_hits=m.prefix_cache_hits,
                                         kv_cache_usage_perc=m.kv_cache_usage_perc))
    return PrefixCacheSample.objects.bulk_create(samples)
