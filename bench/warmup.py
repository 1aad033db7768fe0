"""Warm-up after a bump: a scratch tenant with the demo help centre serves a skewed stream of its
customers' questions (exact and semantic caches fill), then its policy version is bumped (every
cached answer unreachable). The warm-up job (``supportbot.tasks.cache_warmup`` over
``supportbot.cache_warmup``) runs on a real Celery worker this benchmark starts (queue ``default``,
its own broker database, the app's settings ``CACHE_WARMUP_TOP_QUESTIONS`` and
``CACHE_WARMUP_PER_SECOND`` from the arguments): it re-answers the top questions through the usual
path and admission, rate-limited. The same stream's hit rate is measured before the bump, right
after it (lookups only) and once the job's run has finished.

``python -m bench.warmup [--questions 20] [--asks 200] [--top 20] [--per-second 5]``. The answerer is
the extractive one (no model server). In-sample: the demo knowledge base and its own questions.
Last line: ``questions=.. asks=.. hit_rate_before=.. hit_rate_after_bump=.. hit_rate_after_warmup=..
warmup_s=.. job_s=.. admitted=..``; ``warmup_s`` from queueing the task to the job run's end (what a
deploy waits), ``job_s`` the run itself.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import time

from bench.common import (ROOT, bench_result, ensure_schema, scratch_tenants, setup, start_celery_worker,
                          stop_process)


def stream(questions: list[str], asks: int, seed: int = 7) -> list[str]:
    """A Zipf-like stream: the i-th question is asked about 1/(i+1) as often as the first."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(questions))]
    return rng.choices(questions, weights=weights, k=asks)


def start_worker(per_second: float, top: int) -> tuple[subprocess.Popen, str]:
    """A Celery worker on the queue the warm-up is routed to, with the app's settings of this run
    (the extractive answerer, the warm-up's rate and size), against this process's Redis and broker."""
    env = dict(os.environ, ASK_ANSWERER="extractive", CACHE_WARMUP_PER_SECOND=str(per_second),
               CACHE_WARMUP_TOP_QUESTIONS=str(top), DATABASE_URL=os.environ["DATABASE_URL"])
    return start_celery_worker("warmup", "default", env=env)


def private_broker() -> None:
    """The broker gets a database of this run's private Redis: a running app's worker never takes the task."""
    from django.conf import settings

    from supportbot.celery import app

    url = os.environ["REDIS_URL"].rsplit("/", 1)[0] + "/1"
    os.environ["CELERY_BROKER_URL"] = os.environ["CELERY_RESULT_BACKEND"] = url
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = url
    app.conf.broker_url = app.conf.result_backend = url


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20, help="distinct questions in the stream")
    parser.add_argument("--asks", type=int, default=200, help="asks in the stream")
    parser.add_argument("--top", type=int, default=20, help="questions the warm-up re-answers (CACHE_WARMUP_TOP_QUESTIONS)")
    parser.add_argument("--per-second", type=float, default=5.0, help="the warm-up's rate (CACHE_WARMUP_PER_SECOND)")
    args = parser.parse_args(argv)
    setup(private_redis=True)
    ensure_schema()
    private_broker()
    from django.conf import settings

    settings.ASK_ANSWERER = "extractive"
    rows = [json.loads(line) for line in (ROOT / "kb" / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions = [r["question"] for r in rows if r["tenant"] == "acme" and r["locale"] == "en"][:args.questions]
    asks = stream(questions, args.asks)
    worker, _ = start_worker(args.per_second, args.top)
    try:
        with scratch_tenants("warmup") as scratch:
            figures = measure(scratch, questions, asks)
    finally:
        stop_process(worker)
    print(f"stream of {len(asks)} asks over {len(questions)} questions: hit rate {figures['hit_rate_before']:.1%} "
          f"before the bump, {figures['hit_rate_after_bump']:.1%} after it, {figures['hit_rate_after_warmup']:.1%} "
          f"after the worker's warm-up ({figures['warmup_s']:.1f} s from queueing, the run {figures['job_s']:.1f} s, "
          f"{figures['admitted']} admitted)")
    last = (f"questions={len(questions)} asks={len(asks)} hit_rate_before={figures['hit_rate_before']:.3f} "
            f"hit_rate_after_bump={figures['hit_rate_after_bump']:.3f} "
            f"hit_rate_after_warmup={figures['hit_rate_after_warmup']:.3f} warmup_s={figures['warmup_s']:.1f} "
            f"job_s={figures['job_s']:.1f} admitted={figures['admitted']}")
    bench_result("warmup", figures, last)
    return last


def measure(scratch, questions: list[str], asks: list[str]) -> dict:
    """Fill the caches, bump the policy, let the worker's warm-up run; the hit rates around it."""
    from core.models import JobRun, Tenant
    from retrieval.services import index_sync
    from supportbot import cache_warmup, pipeline, tasks

    tenant = scratch.tenant("shop")
    for path in sorted((ROOT / "kb" / "acme" / "en").glob("*.md")):
        scratch.article(tenant, path.stem, path.stem.replace("-", " ").title(), path.read_text())
    index_sync(tenant_id=tenant.pk)
    scratch.will_embed(questions)

    def lookups_only(t) -> float:
        hits = 0
        for q in asks:
            state = pipeline.start(pipeline.Asker(t, "en"), q, streamed=False)
            hits += pipeline.lookup(state) is not None
        return hits / len(asks)

    for q in asks:  # the caches fill
        pipeline.ask(pipeline.Asker(tenant, "en"), q)
    before = lookups_only(tenant)
    cache_warmup.warmup_due()  # the baseline fingerprint
    tenant.policy_version += 1
    tenant.save(update_fields=["policy_version"])
    tenant = Tenant.objects.get(pk=tenant.pk)
    after_bump = lookups_only(tenant)
    due = cache_warmup.warmup_due()
    assert tenant.pk in due, due
    last_pk = JobRun.objects.filter(job=cache_warmup.WARMUP_JOB).order_by("-pk").values_list("pk", flat=True).first()
    started = time.monotonic()
    # the worker's job, for this tenant only (beat's run would take every due tenant of the database)
    tasks.cache_warmup.apply_async(([tenant.pk],))
    while True:
        run = (JobRun.objects.filter(job=cache_warmup.WARMUP_JOB, pk__gt=last_pk or 0)
               .exclude(status=JobRun.Status.RUNNING).order_by("pk").first())
        if run is not None:
            break
        if time.monotonic() - started > 1800:
            raise RuntimeError("the worker's warm-up run did not finish within 30 minutes")
        time.sleep(0.2)
    warmup_s = time.monotonic() - started
    assert run.status == JobRun.Status.SUCCEEDED and run.task_id, (run.status, run.error)  # the worker ran it
    return {"questions": len(questions), "asks": len(asks), "hit_rate_before": before, "hit_rate_after_bump": after_bump,
            "hit_rate_after_warmup": lookups_only(tenant), "warmup_s": warmup_s, "job_s": run.duration_s,
            "admitted": run.detail.get("admitted", 0), "due": len(due), "worker_task": run.task_id}


if __name__ == "__main__":
    main()
