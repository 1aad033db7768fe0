"""Every benchmark still runs: each module in ``bench/`` runs at a tiny size as ``python -m bench.NAME``, exits 0,
and ends with the summary line it documents (the keys below). The speed targets stay in the benchmarks; this only
proves they run, so a renamed column or a changed signature fails ``make test`` instead of the next ``make bench``.

Table-driven: a new benchmark adds a row to ``SMOKE`` (its tiny arguments and the keys of its last line), or to
``NOT_YET_TINY`` with the reason it cannot run tiny yet; ``test_every_benchmark_is_in_the_table`` fails until it
does. Results go to a scratch folder (``BENCH_RESULTS_DIR``), never over the real ``var/bench``.

Cheap: the benchmarks that start no server of their own run one after the other in one process
(``IN_ONE_PROCESS``, through ``bench._smoke``), so Python, Django and the embedding model start once for them.
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
        "eligibility_seen_general_precision", "eligibility_seen_general_recall", "eligibility_heldout_questions",
        "strict_heldout_pairs_hit_rate", "strict_heldout_pairs_false_rate", "strict_fow_hit_rate", "strict_fow_false_rate"]),
    "semantic_scale": (["--entries", "2000", "--tenants", "10", "--pool", "300", "--queries", "10", "--designs", "partial,global",
                        "--partial-min-rows", "200"],
                       ["entries", "tenants", "design", "p50_ms_large", "p50_ms_small", "recall_at_1_small", "build_s"]),
    "hit_path_overhead": (["--iterations", "200"], [
        "exact_hit_us", "metrics_us", "tracing_off_us", "tracing_on_us", "cachetools_us", "localcache_us", "dict_us"]),
    "reembed": (["--articles", "20", "--sections", "3", "--changed-sections", "1", "--changed-share", "0.1",
                 "--trials", "2", "--no-speed-targets"], ["chunks", "changed_chunks", "embed_calls", "incremental_over_full", "purge_p50_s"]),
    "answer_quality": (["--limit", "2", "--asks", "1"], [
        "answerer", "questions", "answers", "correct", "wrong", "not_covered", "incomplete", "wrong_admitted"]),
    "banking77": (["--intents", "3", "--seeds", "1"], [
        "banking77_eligible_share", "banking77_hit_rate", "banking77_false_hit_rate"]),
    "retrieval_recall": (["--limit", "3"], [
        "questions", "k", "hybrid_recall", "vector_recall", "worst_locale", "worst_recall", "off_topic_refused",
        "search_p50_ms"]),
    "knowledge_change": (["--limit", "3"], [
        "answers", "revision_lost_per_change", "targeted_lost_per_change", "revision_kept_per_day",
        "targeted_kept_per_day", "purge_ms_per_answer"]),
    "guards_eval": (["--quick"], ["dev_paraphrase_hit_rate", "dev_false_hit_rate", "heldout_hit_rate",
                                  "heldout_false_hit_rate"]),
    "judge_replay": (["--queries", "3"], [  # the tests' small judge (tests/conftest.py)
        "judge_replay_strict_hit", "judge_replay_strict_false", "judge_replay_judge_hit", "judge_replay_judge_false"]),
    "judge_eval": (["--splits", "heldout", "--recipe", "small", "--ce-steps", "3"], [
        "judge_eval_heldout_stacked_precision", "judge_eval_heldout_stacked_recall"]),
    # these start servers of their own (a model server, gunicorn, Celery, a Redis Cluster): one process each
    "judge_verifier": (["--pairs", "1", "--dev-pairs", "1"], [
        "model", "pairs", "precision", "recall", "no_verdict", "p50_ms", "p90_ms", "cached_share"]),
    "prefix_reuse": (["--questions", "2", "--repeats", "1", "--answer-tokens", "4", "--streamed", "0"], [
        "cold_prefill_ms", "warm_prefill_ms", "warm_over_cold", "cached_token_share"]),
    "fleet": (["--web", "1", "--seconds", "3", "--ramp", "1", "--model", "none", "--edit-every", "0",
               "--hit-threads", "2"], [
        "web", "rps", "web_cpu_ms", "pg_cpu_ms", "redis_cpu_ms", "celery_cpu_ms", "saturates_first", "shared_limit"]),
    "load_faults": (["--duration", "12", "--fault-scale", "0.1", "--hit-threads", "1", "--workers", "1",
                     "--threads", "2"], ["requests", "rps", "p99_ms", "errors", "cross_scope_serves", "lost"]),
    "cluster_failover": (["--duration", "10", "--hit-threads", "1", "--workers", "1", "--threads", "2"], [
        "requests", "errors", "cross_scope_serves", "lost", "failover_s", "exact_before", "victim_exact_lost",
        "other_exact_lost"]),
    "warmup": (["--questions", "4", "--asks", "12", "--top", "4", "--per-second", "0"],
               ["hit_rate_before", "hit_rate_after_bump", "hit_rate_after_warmup", "warmup_s", "job_s", "admitted"]),
    "stream_load": (["--ramp", "2", "--interval-ms", "50", "--hold-s", "1", "--arrival-per-s", "10", "--hit-clients", "1",
                     "--hit-rate", "20", "--workers", "1"],
                    ["streams_held_async", "streams_held_threads", "exact_p99_ms_at_peak", "mb_per_stream",
                     "exact_p99_ms_arriving_at_peak", "arrival_per_s", "fresh_ask_cpu_ms", "stream_s_cpu_ms"]),
    "cache_latency": (["--requests", "20", "--seconds", "0.5", "--rounds", "1", "--threads", "2", "--workers", "1",
                       "--entries", "2000", "--pairs", "3"],
                      ["exact_p50_ms", "exact_vs_bare_throughput", "semantic_p50_ms", "lookup_100k_p50_ms"]),
}
# Run together in one process (``bench._smoke``: one Python, Django and model start for all); the others
# start servers of their own (reembed: a Celery worker), or measure the process itself (hit_path_overhead: its admission fails after
# another benchmark's in the same process), and run alone.
IN_ONE_PROCESS = ("eligibility_rules", "guards_eval", "semantic_scale", "banking77",
                  "retrieval_recall", "knowledge_change", "answer_quality", "answerability", "conversations",
                  "judge_replay", "judge_eval")

# Call the embedded model (its prefill of a ~1,300-token prompt is seconds on an idle machine, a minute on a
# busy one): marked ``slow``, like the suite's other tests that call it.
CALL_THE_MODEL = ("judge_verifier", "prefix_reuse", "load_faults")

# Benchmarks without a tiny size yet (the run is minutes at its smallest, or needs a model server or a
# cluster the suite does not start): each one's reason. Moving one into SMOKE is the work left.
NOT_YET_TINY: dict[str, str] = {
}

TIMEOUT_S = 900  # a tiny run takes seconds to a few minutes on a busy machine; this only stops a hung one


def test_every_benchmark_is_in_the_table():
    benches = set(bench_all.discover())
    missing = benches - set(SMOKE) - set(NOT_YET_TINY)
    assert not missing, f"benchmarks without a smoke row (add one to SMOKE): {sorted(missing)}"
    gone = (set(SMOKE) | set(NOT_YET_TINY)) - benches
    assert not gone, f"rows for benchmarks that no longer exist: {sorted(gone)}"
    assert not set(SMOKE) & set(NOT_YET_TINY)
    assert set(IN_ONE_PROCESS) <= set(SMOKE) and set(CALL_THE_MODEL) <= set(SMOKE)


def summary_keys(stdout: str) -> set[str]:
    """The keys of the last non-empty line, ``key=value key=value ...``."""
    last = next((line for line in reversed(stdout.splitlines()) if line.strip()), "")
    return {token.split("=", 1)[0] for token in last.split() if "=" in token}


def test_summary_keys_reads_only_the_last_line():
    assert summary_keys("a=1\nb=2 c=x\n\n") == {"b", "c"}
    assert summary_keys("") == set()


def _real_results() -> dict[str, int | None]:
    """The modification times of the real results (``var/bench``), which a smoke run must leave alone."""
    return {name: ((ROOT / "var" / "bench" / f"{name}.json").stat().st_mtime_ns
                   if (ROOT / "var" / "bench" / f"{name}.json").exists() else None) for name in SMOKE}


@pytest.fixture(scope="module")
def grouped_runs(request, tmp_path_factory):
    """``{name: (exit code, output)}`` of the benchmarks of ``IN_ONE_PROCESS`` this session selected (``-k``),
    run once for the module."""
    from bench import _smoke

    selected = {item.callspec.params.get("name") for item in request.session.items if hasattr(item, "callspec")}
    names = [name for name in IN_ONE_PROCESS if name in selected]
    argv = [token for name in names for token in (name, *SMOKE[name][0], "--")]
    env = {**os.environ, "BENCH_RESULTS_DIR": str(tmp_path_factory.mktemp("bench-results"))}
    before = _real_results()
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "bench._smoke", *argv], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=TIMEOUT_S * len(names))
    print(f"bench._smoke ({len(names)} benchmarks): {time.perf_counter() - started:.0f} s")
    for line in run.stdout.splitlines():  # each one's time, for the slowest-tests report
        if line.startswith("==== bench.") and " rc=" in line:
            print(line)
    found = _smoke.parse(run.stdout)
    for name in names:
        found.setdefault(name, (None, f"no result (the runner exited {run.returncode}):\n{run.stdout[-2000:]}\n"
                                      f"{run.stderr[-3000:]}"))
    return {"runs": found, "before": before, "after": _real_results(), "stderr": run.stderr}


def test_the_grouped_runner_reads_its_own_output():
    from bench import _smoke

    assert _smoke.split_runs(["a", "--x", "1", "--", "b", "--"]) == [("a", ["--x", "1"]), ("b", [])]
    out = "==== bench.a\nline\nk=1\n==== bench.a rc=0 seconds=1.0\n==== bench.b\n==== bench.b rc=2 seconds=0.1\n"
    assert _smoke.parse(out) == {"a": (0, "line\nk=1"), "b": (2, "")}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in CALL_THE_MODEL else n
                                  for n in sorted(SMOKE)])
def test_a_benchmark_runs_tiny_and_ends_with_its_documented_keys(name, request, tmp_path):
    args, keys = SMOKE[name]
    if name in IN_ONE_PROCESS:
        grouped = request.getfixturevalue("grouped_runs")
        returncode, stdout = grouped["runs"][name]
        errors = grouped["stderr"][-3000:]
        assert grouped["after"][name] == grouped["before"][name]  # the real results are untouched
    else:
        env = {**os.environ, "BENCH_RESULTS_DIR": str(tmp_path)}
        before = _real_results()[name]
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", f"bench.{name}", *args], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=TIMEOUT_S)
        returncode, stdout, errors = run.returncode, run.stdout, run.stderr[-3000:]
        assert _real_results()[name] == before  # the real results are untouched
        print(f"bench.{name} smoke run: {time.perf_counter() - started:.0f} s")
    assert returncode == 0, f"bench.{name} exited {returncode}:\n{stdout[-3000:]}\n{errors}"
    missing = set(keys) - summary_keys(stdout)
    assert not missing, f"bench.{name}'s last line lacks {sorted(missing)}:\n{stdout[-1000:]}"
