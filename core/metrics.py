"""Prometheus metrics: what the Ask path, the caches, the jobs and the model did, as counters
and histograms an operations team scrapes from ``/metrics`` (``docs/operations.md``).

Every metric is defined here, once, and updated by the code that knows the fact: the
pipeline's record step (:func:`ask_observe`), the generation backend (model calls and the
breaker), signal receivers (labels, purges) and Celery's task signals (``supportbot.celery``).
Shared infrastructure: this module imports nothing from the apps.

Web and worker processes are many (gunicorn workers, Celery's prefork children), so
``make run`` uses prometheus_client's multiprocess mode: ``PROMETHEUS_MULTIPROC_DIR`` names a
folder where each process writes its values and the ``/metrics`` view adds them up. Without it
(a test, a one-shot command) the process's own registry is served.

Labels stay bounded: a tenant's slug, a layer, a disposition, a reason *code*; never a question,
an answer, a key or a free-text reason.
"""
from __future__ import annotations

import logging
import os
import re

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Hits take about a millisecond and misses many seconds: buckets cover both.
ASK_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
               120.0)
LOOKUP_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

# ----------------------------------------------------------------------------- the Ask path
ASKS = Counter("ask_requests", "Asks answered, by serving layer (exact | semantic | none) and status.",
               ["tenant", "layer", "status"])
ASK_SECONDS = Histogram("ask_request_duration_seconds", "Time from question to complete answer, by serving layer.",
                        ["tenant", "layer"], buckets=ASK_BUCKETS)
LOOKUPS = Counter("ask_cache_lookups", "Cache lookups made (the layer was consulted: hit, miss, shadow hit, assist).",
                  ["tenant", "layer"])
HITS = Counter("ask_cache_hits", "Cache lookups that served (or, for embeddings and search, returned) a value.",
               ["tenant", "layer"])
SHADOW_HITS = Counter("ask_cache_shadow_hits", "Would-be hits recorded but not served (semantic shadow mode).",
                      ["tenant", "layer"])
DECISIONS = Counter("ask_cache_decisions", "Recorded cache decisions, by layer and disposition.",
                    ["tenant", "layer", "disposition"])
LOOKUP_SECONDS = Histogram("ask_cache_lookup_duration_seconds",
                           "Time spent in one step of the Ask path (exact, semantic, retrieval lookups).",
                           ["tenant", "layer"], buckets=LOOKUP_BUCKETS)
ADMISSION_REFUSALS = Counter("ask_admission_refusals", "Answers not admitted to the shared caches, by reason code.",
                             ["tenant", "reason"])

# ----------------------------------------------------------------------------- review, purges, evictions
HIT_LABELS = Counter("ask_hit_labels", "Staff labels on served hits (verdict correct | wrong), by layer.",
                     ["tenant", "layer", "verdict"])
FEEDBACK = Counter("ask_feedback", "Customers' verdicts on answers (helpful yes | no), by the layer that served "
                   "the answer (exact | semantic | none: a fresh answer).", ["tenant", "layer", "helpful"])
SEMANTIC_FALLBACKS = Counter("ask_semantic_fallbacks", "Tenants whose semantic layer went back from serve to shadow "
                             "by itself, by cause (wrong_labels | customer_no).", ["tenant", "cause"])
PURGES = Counter("ask_cache_purges", "Purge runs recorded, by cause (change, admin, manual, sweep ...).", ["cause"])
PURGED_ENTRIES = Counter("ask_cache_purged_entries", "Cache entries removed by purges, by layer and cause.",
                         ["layer", "cause"])
EVICTIONS = Counter("ask_cache_evictions", "Entries that left a cache without a purge, by layer and cause "
                    "(evicted by the tenant's cap, expired, retention, model_switch, quarantine).", ["layer", "cause"])

# ----------------------------------------------------------------------------- jobs
TASKS = Counter("ask_celery_tasks", "Celery task runs, by task and outcome (success | failure | retry).",
                ["task", "outcome"])

# ----------------------------------------------------------------------------- the model
PROMPT_TOKENS = Counter("ask_model_prompt_tokens", "Prompt tokens sent to the model (usage.prompt_tokens).",
                        ["tenant", "model"])
CACHED_PROMPT_TOKENS = Counter("ask_model_cached_prompt_tokens",
                               "Prompt tokens the model server found in its prefix cache "
                               "(usage.prompt_tokens_details.cached_tokens).", ["tenant", "model"])
COMPLETION_TOKENS = Counter("ask_model_completion_tokens", "Tokens the model generated.", ["tenant", "model"])
MODEL_CALLS = Counter("ask_model_requests", "Calls to the model server, by outcome (ok or the GenerationError reason).",
                      ["backend", "outcome"])
MODEL_RETRIES = Counter("ask_model_retries", "Retried attempts to reach the model server.", ["backend"])
CIRCUIT_OPEN = Gauge("ask_model_circuit_open", "1 while the model-server circuit breaker is open (failing fast).",
                     ["backend"], multiprocess_mode="livemax")

# ----------------------------------------------------------------------------- serving
INFLIGHT_REFUSED = Counter("ask_inflight_refused", "Asks refused with a 429 because too many were in flight, by "
                           "tenant and the cap that was full (client | tenant).", ["tenant", "scope"])
STREAMS_OPEN = Gauge("ask_streams_open", "Streamed answers open right now (async server).",
                     multiprocess_mode="livesum")
STREAMS_CUT = Counter("ask_streams_cut", "Streams ended by the server or the client before their last event, by "
                      "cause (disconnect | write_timeout | max_duration).", ["cause"])

# ----------------------------------------------------------------------------- deploys
WEB_STARTED = Gauge("ask_web_worker_start_time_seconds", "Unix time the newest live web worker started (a deploy "
                    "or a restart): alerts compare rates before and after it.", multiprocess_mode="livemax")

_REASON_CODE = re.compile(r"[^a-z0-9]+")


def reason_code(reason: str) -> str:
    """A bounded label from a free-text reason: the words before its first detail
    (``"ungrounded facts: $5"`` -> ``ungrounded_facts``, ``"truncated: finish reason 'length'"``
    -> ``truncated``, ``"not an answer (not_covered)"`` -> ``not_an_answer``)."""
    head = re.split(r"[:(]", reason, maxsplit=1)[0].strip().lower()
    return _REASON_CODE.sub("_", head).strip("_")[:40] or "unknown"


# ----------------------------------------------------------------------------- recording an Ask

# Dispositions that mean the layer was consulted (bypass, skipped, stored, refused: it was not), and
# the layers that are caches (eligibility and admission decide, they look nothing up).
_LOOKED_UP = frozenset(("hit", "miss", "shadow_hit", "assist"))
_CACHE_LAYERS = frozenset(("exact", "semantic", "search", "embedding", "prefix"))
_STEP_TIMINGS = (("exact", "exact"), ("semantic", "semantic"), ("retrieval", "retrieval"))
_children: dict[tuple, object] = {}


def _child(metric, *labels):
    """``metric.labels(*labels)``, remembered: a hit updates about ten series, and prometheus_client's
    ``labels()`` (validation and a lock) costs as much as the update itself. Bounded like the labels."""
    key = (metric, labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = metric.labels(*labels)
    return child


def ask_observe(tenant: str, layer: str, status: str, total_ms: float, timings: dict, decisions,
                result=None, model: str = "") -> None:
    """Count one finished Ask: its decisions, its timings and the model's usage.

    ``decisions``: the Ask's ``LayerResult`` list; ``result``: its ``GenerationResult`` or None.
    Never raises: a metric that cannot be written must not cost an answer."""
    try:
        _child(ASKS, tenant, layer, status).inc()
        _child(ASK_SECONDS, tenant, layer).observe(total_ms / 1000.0)
        for d in decisions:
            disposition = d.disposition
            _child(DECISIONS, tenant, d.layer, disposition).inc()
            if disposition in _LOOKED_UP and d.layer in _CACHE_LAYERS:
                _child(LOOKUPS, tenant, d.layer).inc()
                if disposition == "hit":
                    _child(HITS, tenant, d.layer).inc()
                elif disposition == "shadow_hit":
                    _child(SHADOW_HITS, tenant, d.layer).inc()
            elif disposition == "refused" and d.layer == "admission":
                _child(ADMISSION_REFUSALS, tenant, reason_code(d.reason)).inc()
        for name, layer_name in _STEP_TIMINGS:
            ms = timings.get(name)
            if ms is not None:
                _child(LOOKUP_SECONDS, tenant, layer_name).observe(ms / 1000.0)
        if result is not None and (result.prompt_tokens or result.completion_tokens):
            model = model or result.model
            _child(PROMPT_TOKENS, tenant, model).inc(result.prompt_tokens)
            _child(COMPLETION_TOKENS, tenant, model).inc(result.completion_tokens)
            if result.cached_tokens:
                _child(CACHED_PROMPT_TOKENS, tenant, model).inc(result.cached_tokens)
    except Exception:  # noqa: BLE001 - metrics are never worth an answer
        log.exception("could not update the Ask metrics")


# ----------------------------------------------------------------------------- exposition

class BrokerCollector:
    """Read at scrape time: Celery queue depths (the broker's Redis), and the cache Redis's own
    expiry and eviction counts."""

    def __init__(self, queues, broker_factory, cache_info):
        self.queues = list(queues)
        self.broker_factory = broker_factory
        self.cache_info = cache_info  # section -> the cache Redis's INFO (a cluster's summed)

    def collect(self):
        up = GaugeMetricFamily("ask_redis_up", "1 when the scrape could read Redis (broker | cache).", labels=["role"])
        try:
            pipe = self.broker_factory().pipeline(transaction=False)
            for queue in self.queues:
                pipe.llen(queue)
            lengths = pipe.execute()
        except Exception as exc:  # noqa: BLE001 - a scrape reports what it can
            log.warning("metrics: broker unreadable (%s)", type(exc).__name__)
            up.add_metric(["broker"], 0)
        else:
            up.add_metric(["broker"], 1)
            depth = GaugeMetricFamily("ask_celery_queue_depth", "Tasks waiting in a Celery queue.", labels=["queue"])
            for queue, length in zip(self.queues, lengths):
                depth.add_metric([queue], length)
            yield depth
        try:
            stats = self.cache_info("stats")
        except Exception as exc:  # noqa: BLE001
            log.warning("metrics: cache redis unreadable (%s)", type(exc).__name__)
            up.add_metric(["cache"], 0)
        else:
            up.add_metric(["cache"], 1)
            yield CounterMetricFamily("ask_redis_expired_keys", "Keys the cache Redis expired by TTL, server-wide.",
                                      value=stats.get("expired_keys", 0))
            yield CounterMetricFamily("ask_redis_evicted_keys", "Keys the cache Redis evicted under maxmemory.",
                                      value=stats.get("evicted_keys", 0))
        yield up


class StateCollector:
    """Read at scrape time from the database: states that hold until someone acts, which a counter
    in one worker process cannot say. ``fell_back`` returns the slugs of the tenants whose semantic
    layer is in shadow because it fell back by itself."""

    def __init__(self, fell_back):
        self.fell_back = fell_back

    def collect(self):
        gauge = GaugeMetricFamily("ask_semantic_fell_back", "1 while a tenant's semantic layer is in shadow because "
                                  "it fell back by itself (until staff switch it again).", labels=["tenant"])
        try:
            for slug in self.fell_back():
                gauge.add_metric([slug], 1)
        except Exception as exc:  # noqa: BLE001 - a scrape reports what it can
            log.warning("metrics: semantic modes unreadable (%s)", type(exc).__name__)
        yield gauge


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


def exposition(extra_collectors=()) -> bytes:
    """The text exposition of every process's metrics (multiprocess mode) or of this one's."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY

        registry = CollectorRegistry()
        registry.register(_Union(REGISTRY))
    for collector in extra_collectors:
        registry.register(collector)
    return generate_latest(registry)


class _Union:
    """The default registry's metrics, collected into a registry of the scrape's own (so a
    scrape-time collector never registers twice in the process-wide one)."""

    def __init__(self, registry):
        self.registry = registry

    def collect(self):
        return self.registry.collect()


def process_dead(pid: int) -> None:
    """A worker process exited: its live gauges stop counting (gunicorn ``child_exit``,
    Celery ``worker_process_shutdown``)."""
    if multiprocess_dir():
        multiprocess.mark_process_dead(pid)
