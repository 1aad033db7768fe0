"""Every benchmark still runs: each module in ``bench/`` runs at a tiny size as ``python -m bench.NAME``, exits 0,
and ends with the summary line it documents (the keys below). The speed targets stay in the benchmarks; this only
proves they run, so a renamed column or a changed signature fails ``make test`` instead of the next ``make bench``.

Table-driven: a new benchmark adds a row to ``SMOKE`` (its tiny arguments and the keys of its last line), or to
``NOT_YET_TINY`` with the reason it cannot run tiny yet; ``test_every_benchmark_is_in_the_table`` fails until it
does. Results go to a scratch folder (``BENCH_RESULTS_DIR``), never over the real ``var/bench``.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from bench import all as bench_all
from core.servers import ROOT

# name: (tiny arguments, keys its last line must hold)
SMOKE: dict[str, tuple[list[str], list[str]]] = {
    "conversations": ([], ["dev_served", "dev_wrong", "pairs"]),
    "answerability": (["--oos", "5"], ["unanswerable_refused", "answerable_refused", "oos_refused"]),
    "eligibility_rules": (["--limit", "300"], [
        "eligibility_heldout_general_precision", "eligibility_heldout_general_recall",
        "eligibility_seen_general_precision", "eligibility_seen_general_recall", "eligibility_heldout_questions"]),
    "semantic_scale": (["--entries", "2000", "--tenants", "10", "--pool", "300", "--queries", "10", "--designs", "global"],
                       ["entries", "tenants", "design", "p50_ms_large", "p50_ms_small", "recall_at_1_small", "build_s"]),
    "hit_path_overhead": (["--iterations", "200"], [
        "exact_hit_us", "metrics_us", "tracing_off_us", "tracing_on_us", "cachetools_us", "localcache_us", "dict_us"]),
    "reembed": (["--articles", "20", "--sections", "3", "--changed-sections", "1", "--changed-share", "0.1",
                 "--trials", "2"], ["chunks", "changed_chunks", "embed_calls", "incremental_over_full", "purge_p50_s"]),
    "stream_load": (["--ramp", "2", "--tokens", "5", "--interval-ms", "50", "--ramp-in-s", "0.5", "--hit-clients", "1",
                     "--workers", "1"], ["streams_held_async", "streams_held_threads", "exact_p99_ms_at_peak", "mb_per_stream"]),
    "cache_latency": (["--requests", "20", "--seconds", "0.5", "--rounds", "1", "--threads", "2", "--workers", "1",
                       "--entries", "2000", "--pairs", "3"],
                      ["exact_p50_ms", "exact_vs_bare_throughput", "semantic_p50_ms", "lookup_100k_p50_ms"]),
}

# Benchmarks without a tiny size yet (the run is minutes at its smallest, or needs a model server or a
# cluster the suite does not start): each one's reason. Moving one into SMOKE is the work left.
NOT_YET_TINY: dict[str, str] = {
    "answer_quality": "asks the embedded model (minutes); needs an extractive-only tiny run",
    "banking77": "no size flag: replays every BANKING77 test question",
    "cluster_failover": "starts a three-primary Redis Cluster and kills a node; --duration below 120 s not verified",
    "fleet": "starts web processes, Celery and the model; no tiny size verified",
    "guards_eval": "reads the shared eval folder beside the checkout (ASK_SHARED_DIR elsewhere); --quick not timed",
    "judge_eval": "trains folds of the judge (minutes)",
    "judge_replay": "needs the built judge artefact",
    "judge_verifier": "needs the model server",
    "knowledge_change": "no size flag for the question set",
    "load_faults": "minutes of load by design (--duration >= 180 s for the record)",
    "prefix_reuse": "needs the embedded model",
    "retrieval_recall": "no size flag for the question files",
}

TIMEOUT_S = 300  # a tiny run takes seconds; this only stops a hung one


def test_every_benchmark_is_in_the_table():
    benches = set(bench_all.discover())
    missing = benches - set(SMOKE) - set(NOT_YET_TINY)
    assert not missing, f"benchmarks without a smoke row (add one to SMOKE): {sorted(missing)}"
    gone = (set(SMOKE) | set(NOT_YET_TINY)) - benches
    assert not gone, f"rows for benchmarks that no longer exist: {sorted(gone)}"
    assert not set(SMOKE) & set(NOT_YET_TINY)


def summary_keys(stdout: str) -> set[str]:
    """The keys of the last non-empty line, ``key=value key=value ...``."""
    last = next((line for line in reversed(stdout.splitlines()) if line.strip()), "")
    return {token.split("=", 1)[0] for token in last.split() if "=" in token}


def test_summary_keys_reads_only_the_last_line():
    assert summary_keys("a=1\nb=2 c=x\n\n") == {"b", "c"}
    assert summary_keys("") == set()


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_a_benchmark_runs_tiny_and_ends_with_its_documented_keys(name, tmp_path):
    args, keys = SMOKE[name]
    env = {**os.environ, "BENCH_RESULTS_DIR": str(tmp_path)}
    real = ROOT / "var" / "bench" / f"{name}.json"
    before = real.stat().st_mtime_ns if real.exists() else None
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", f"bench.{name}", *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=TIMEOUT_S)
    assert run.returncode == 0, f"bench.{name} exited {run.returncode}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    missing = set(keys) - summary_keys(run.stdout)
    assert not missing, f"bench.{name}'s last line lacks {sorted(missing)}:\n{run.stdout[-1000:]}"
    assert (real.stat().st_mtime_ns if real.exists() else None) == before  # the real results are untouched
    print(f"bench.{name} smoke run: {time.perf_counter() - started:.0f} s")
