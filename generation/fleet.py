"""The fleet view: the model servers' own Prometheus ``/metrics`` (prefix-cache counters in tokens,
KV-cache usage), read with prometheus_client's parser. Sampled hourly into ``PrefixCacheSample``
(``supportbot.prefix_samples``) for the staff dashboard; Prometheus scrapes the same endpoints as a
second target (``docs/operations.md``)."""
from __future__ import annotations

from dataclasses import dataclass

import httpx
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from generation.base import GenerationError
from generation.openai_http import normalize_base_url

METRICS_PATH = "/metrics"


@dataclass(frozen=True)
class PrefixCacheMetrics:
    """The fleet view of one server: prefix-cache counters (in tokens) and KV-cache usage (0..1)."""

    prefix_cache_queries: float | None
    prefix_cache_hits: float | None
    kv_cache_usage_perc: float | None

    @property
    def hit_rate(self) -> float | None:
        if not self.prefix_cache_queries or self.prefix_cache_hits is None:
            return None
        return self.prefix_cache_hits / self.prefix_cache_queries


# Current names first; vLLM V0 / early V1 names as fallbacks. (Sample names: a counter's samples end in _total.)
PREFIX_CACHE_METRIC_NAMES = {
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}


def parse_prometheus_samples(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {sample name: sum over all label sets} (NaN samples skipped)."""
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.value == sample.value:  # not NaN
                sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    return sums


def parse_prefix_cache_metrics(text: str) -> PrefixCacheMetrics:
    samples = parse_prometheus_samples(text)
    found = {field: next((samples[n] for n in names if n in samples), None)
             for field, names in PREFIX_CACHE_METRIC_NAMES.items()}
    return PrefixCacheMetrics(**found)


def scrape_prefix_cache_metrics(base_url: str, *, api_key: str = "", timeout_s: float | None = None) -> PrefixCacheMetrics:
    """GET ``{base_url}/metrics`` and return the prefix-cache counters summed over label sets."""
    timeout = timeout_s if timeout_s is not None else settings.GENERATION_CONNECT_TIMEOUT_S * 2
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(normalize_base_url(base_url) + METRICS_PATH, headers=headers, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise GenerationError("timeout", f"metrics scrape: {exc}") from exc
    except httpx.TransportError as exc:
        raise GenerationError("unavailable", f"metrics scrape: {exc}") from exc
    if response.status_code != 200:
        raise GenerationError("bad_response", f"metrics scrape: HTTP {response.status_code}", status=response.status_code)
    try:
        return parse_prefix_cache_metrics(response.text)
    except ValueError as exc:
        raise GenerationError("bad_response", f"metrics scrape: not Prometheus text ({exc})") from exc


def metrics_targets() -> list[str]:
    """The model servers whose /metrics make up the fleet view.

    ``VLLM_METRICS_URLS`` lists the replicas behind a router (a router's own
    /metrics are not vLLM's); otherwise the one server the app talks to.
    """
    if settings.VLLM_BASE_URL:
        urls = settings.VLLM_METRICS_URLS or [settings.VLLM_BASE_URL]
    else:
        urls = [f"http://{settings.EMBEDDED_MODEL_HOST}:{settings.EMBEDDED_MODEL_PORT}"]
    return [normalize_base_url(u) for u in urls]
