"""What operations cost a cache hit: the metrics, the traces and the library caches, per hit.

    .venv/bin/python -m bench.hit_path_overhead [--iterations 20000]

An exact hit costs about a millisecond end to end (``bench.cache_latency``), so on a loaded
2-core machine the throughput ratio of two gunicorn runs cannot resolve a few microseconds. This
measures them directly, in one process, with the code the hit runs:

1. metrics: ``metrics.ask_observe`` for an exact hit's decisions and timings, in prometheus_client's
   multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, as under ``make run``): values go to mmap files;
2. tracing: the step decorators and ``ask_finish`` around an exact hit (the ``ask``, ``ask.guards`` and
   ``ask.exact`` spans), off (one check) and on (the SDK's BatchSpanProcessor and OTLP/HTTP exporter
   sending to a local sink; the export thread's work is included: the clock stops after a flush),
   every trace recorded or 10 % sampled (``OTEL_TRACES_SAMPLER=parentbased_traceidratio``);
3. per-process caches: ``cachetools`` (LRUCache, TTLCache behind ``cachetools.cached`` with a lock)
   and the project's one helper (``core.localcache.LocalCache``, what the hit path runs) against a
   plain dict memo, for the lookups a hit makes.

Each figure is the median of five repeats (tracing: minus the same hit without the decorators).
The reference is an exact hit's own pipeline work in the same process (a scratch tenant, one
Redis round trip). Ends with one line:
``exact_hit_us=… metrics_us=… tracing_off_us=… tracing_on_us=… cachetools_us=… localcache_us=… dict_us=…``
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="bench-hit-overhead-")  # before prometheus_client
# The scratch hit is a hand-written answer offered to admission, which trusts it as it trusts vLLM (at the
# embedded model's low trust it must restate its passage near-verbatim, and this one does not).
os.environ.setdefault("GENERATION_TRUST", "standard")

from bench.common import TraceSink, bench_result, ensure_schema, scratch_tenants, setup  # noqa: E402

setup(private_redis=True)

import cachetools  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased  # noqa: E402

from core import metrics  # noqa: E402
from core.cachelayer import LayerResult  # noqa: E402
from core.localcache import MISSING, LocalCache  # noqa: E402
from core.models import Tenant  # noqa: E402
from supportbot import tracing  # noqa: E402
from supportbot.pipeline import AskState, Asker  # noqa: E402

TENANT = Tenant(slug="bench", name="Bench", locales=["en"])


def bare_guards_step(state):
    state.layers.append(LayerResult("eligibility", "miss", reason="general question", intent="policy"))


def bare_exact_step(state):
    state.layers.append(LayerResult("exact", "hit", reason="exact match", key_version="k1", candidate="abcd",
                                    entry_age_s=12.5, saved_tokens=950, saved_ms=4200.0, lookup_ms=0.4))


guards_step = tracing.step("guards")(bare_guards_step)
exact_step = tracing.step("exact")(bare_exact_step)


def new_state() -> AskState:
    return AskState(asker=Asker(TENANT, "en"), question="How long do I have to return a jacket?",
                    normalized="how long do i have to return a jacket", streamed=False)


def per_call_us(fn, iterations: int, repeats: int = 5, after=None) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(iterations):
            fn()
        if after is not None:
            after()
        samples.append((time.perf_counter() - started) / iterations * 1e6)
    return statistics.median(samples)


def measure_metrics(iterations: int) -> float:
    state = new_state()
    guards_step(state)
    exact_step(state)
    state.timings.update(guards=0.05, exact=0.4, total=1.0)
    return per_call_us(lambda: metrics.ask_observe("bench", "exact", "answered", 1.0, state.timings, state.layers),
                       iterations)


def measure_tracing(iterations: int) -> dict:
    """Microseconds a hit's tracing adds to the same hit with undecorated steps."""
    def bare():
        state = new_state()
        bare_guards_step(state)
        bare_exact_step(state)
        state.timings["total"], state.layer = 1.0, "exact"

    def hit():
        state = new_state()
        guards_step(state)
        exact_step(state)
        state.timings["total"], state.layer = 1.0, "exact"
        tracing.ask_finish(state)

    base = per_call_us(bare, iterations)
    out = {"tracing_off_us": per_call_us(hit, iterations) - base}
    for name, sampler in (("tracing_on_us", None), ("tracing_sampled_10pct_us", ParentBased(TraceIdRatioBased(0.1)))):
        sink = TraceSink()
        provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
        # a queue that holds a whole repeat: the export thread's work is measured, no span is dropped
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sink.url + "/v1/traces"),
                                                       max_queue_size=4 * iterations))
        tracing.configure(provider)
        try:
            out[name] = per_call_us(hit, iterations, after=provider.force_flush) - base
        finally:
            tracing.configure(None)
            provider.shutdown()
            sink.close()
        out[name.replace("_us", "_batches")] = sink.batches
    return out


def measure_caches(iterations: int) -> tuple[float, float, float]:
    """The lookups a hit makes in per-process caches: the tenant prompt version (LRUCache) and the
    active generation (TTLCache), through ``cachetools.cached`` with a lock, through ``LocalCache``
    (as ``pipeline.tenant_prompt_version`` and ``retrieval.services.active_generation_cached`` use
    it), and through a dict memo."""
    @cachetools.cached(cachetools.LRUCache(maxsize=1024), lock=threading.Lock(),
                       key=lambda tenant: (tenant.name, tenant.instructions, repr(tenant.few_shot)))
    def prompt_version(tenant):
        return "v1"

    @cachetools.cached(cachetools.TTLCache(maxsize=1, ttl=5.0), lock=threading.Lock())
    def generation():
        return object()

    memo: dict = {}
    generation_memo: list = [None]

    def prompt_version_dict(tenant):
        key = (tenant.name, tenant.instructions, repr(tenant.few_shot))
        version = memo.get(key)
        if version is None:
            version = memo[key] = "v1"
        return version

    def generation_dict():
        now = time.monotonic()
        if generation_memo[0] is None or now - generation_memo[0][0] > 5.0:
            generation_memo[0] = (now, object())
        return generation_memo[0][1]

    prompt_versions: LocalCache[str] = LocalCache("bench prompt versions")
    generations: LocalCache[object] = LocalCache("bench generation", ttl_s=5.0, max_entries=1)

    def prompt_version_local(tenant):
        key = (tenant.name, tenant.instructions, repr(tenant.few_shot))
        version = prompt_versions.lookup(key)
        if version is MISSING:
            version = prompt_versions.put(key, "v1")
        return version

    def generation_local():
        return generations.get("active", object)

    def with_localcache():
        prompt_version_local(TENANT)
        generation_local(), generation_local(), generation_local()

    def with_cachetools():
        prompt_version(TENANT)
        generation(), generation(), generation()  # answer_spec, retrieval_version, the semantic scope

    def with_dicts():
        prompt_version_dict(TENANT)
        generation_dict(), generation_dict(), generation_dict()

    return (per_call_us(with_cachetools, iterations), per_call_us(with_localcache, iterations),
            per_call_us(with_dicts, iterations))


def measure_exact_hit(iterations: int) -> float:
    """The reference: an exact hit's own pipeline work in this process (guards, key, one Redis
    round trip, the answer), without the record the web process writes in the background."""
    from supportbot import pipeline
    from ingestion.models import Chunk
    from generation.base import Passage

    with scratch_tenants("overhead") as scratch:
        tenant = scratch.tenant("hit")
        article = scratch.article(tenant, "bench-source", "Benchmark source",
                                  "To reset your password, open Settings, choose Security and follow the link we e-mail you.")
        chunk = Chunk.objects.filter(article=article, is_current=True).first()
        passage = Passage(1, chunk.pk, article.external_id, article.title, article.url, article.version, chunk.text, 1.0)
        question = "How do I reset my password?"
        scratch.will_embed([question])
        asker = pipeline.Asker(tenant, "en")
        assert pipeline.offer_answer(asker, question, "Open Settings, then Security [1].", [passage],
                                     {passage.chunk_id: article.pk}).admitted

        def hit():
            state = pipeline.prepare(asker, question)
            served = pipeline.lookup(state)
            assert served is not None
            pipeline.serve_cached(state, served)

        return per_call_us(hit, max(200, iterations // 20))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args(argv)
    figures = {"iterations": args.iterations, "multiprocess_dir": os.environ["PROMETHEUS_MULTIPROC_DIR"]}
    ensure_schema()
    figures["exact_hit_us"] = measure_exact_hit(args.iterations)
    print(f"an exact hit's pipeline work (reference)        {figures['exact_hit_us']:7.1f} µs", flush=True)
    figures["metrics_us"] = measure_metrics(args.iterations)
    print(f"metrics per exact hit (multiprocess mode)      {figures['metrics_us']:7.1f} µs", flush=True)
    figures.update(measure_tracing(args.iterations))
    off, on = figures["tracing_off_us"], figures["tracing_on_us"]
    print(f"tracing off: step decorators + finish           {off:7.1f} µs", flush=True)
    print(f"tracing on: 3 spans, batched OTLP/HTTP export   {on:7.1f} µs  ({figures['tracing_on_batches']} batches)",
          flush=True)
    print(f"tracing on, 10 % of traces sampled              {figures['tracing_sampled_10pct_us']:7.1f} µs", flush=True)
    lib, local, plain = measure_caches(args.iterations)
    figures.update(cachetools_us=lib, localcache_us=local, dict_us=plain)
    print(f"per-process caches of a hit: cachetools         {lib:7.2f} µs  (LocalCache {local:.2f} µs, dict memo "
          f"{plain:.2f} µs)", flush=True)
    hit = figures["exact_hit_us"]
    print(f"per exact hit: metrics {figures['metrics_us'] / hit:.1%}, tracing off {off / hit:.1%}, tracing on "
          f"{on / hit:.1%}, 10 % sampled {figures['tracing_sampled_10pct_us'] / hit:.1%}, "
          f"cachetools instead of dicts {(lib - plain) / hit:.1%}, LocalCache instead of dicts "
          f"{(local - plain) / hit:.1%}", flush=True)
    last = (f"exact_hit_us={hit:.0f} metrics_us={figures['metrics_us']:.1f} tracing_off_us={off:.1f} "
            f"tracing_on_us={on:.1f} cachetools_us={lib:.2f} localcache_us={local:.2f} dict_us={plain:.2f}")
    bench_result("hit_path_overhead", figures, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
