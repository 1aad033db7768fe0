"""Warm-up after a bump: a scratch tenant with the demo help centre serves a skewed stream of its
customers' questions (exact and semantic caches fill), then its policy version is bumped (every
cached answer unreachable). The warm-up job (``supportbot.cache_warmup``) re-answers the top
questions through the usual path and admission, rate-limited; the same stream's hit rate is
measured before the bump, right after it (lookups only) and after the job's run.

``python -m bench.warmup [--questions 20] [--asks 200] [--top 20] [--per-second 5]``. The answerer is
the extractive one (no model server). In-sample: the demo knowledge base and its own questions.
Last line: ``questions=.. asks=.. hit_rate_before=.. hit_rate_after_bump=.. hit_rate_after_warmup=..
warmup_s=.. admitted=..``.
"""
from __future__ import annotations

import argparse
import json
import random
import time

from bench.common import ROOT, bench_result, ensure_schema, scratch_tenants, setup


def stream(questions: list[str], asks: int, seed: int = 7) -> list[str]:
    """A Zipf-like stream: the i-th question is asked about 1/(i+1) as often as the first."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(questions))]
    return rng.choices(questions, weights=weights, k=asks)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20, help="distinct questions in the stream")
    parser.add_argument("--asks", type=int, default=200, help="asks in the stream")
    parser.add_argument("--top", type=int, default=20, help="questions the warm-up re-answers (CACHE_WARMUP_TOP_QUESTIONS)")
    parser.add_argument("--per-second", type=float, default=5.0, help="the warm-up's rate (CACHE_WARMUP_PER_SECOND)")
    args = parser.parse_args(argv)
    setup(private_redis=True)
    ensure_schema()
    from django.conf import settings

    from core.models import Tenant
    from retrieval.services import index_sync
    from supportbot import cache_warmup, pipeline

    settings.ASK_ANSWERER = "extractive"
    rows = [json.loads(line) for line in (ROOT / "kb" / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions = [r["question"] for r in rows if r["tenant"] == "acme" and r["locale"] == "en"][:args.questions]
    asks = stream(questions, args.asks)
    with scratch_tenants("warmup") as scratch:
        tenant = scratch.tenant("shop")
        for path in sorted((ROOT / "kb" / "acme" / "en").glob("*.md")):
            scratch.article(tenant, path.stem, path.stem.replace("-", " ").title(), path.read_text())
        index_sync(tenant_id=tenant.pk)
        scratch.will_embed(questions)

        def replay() -> float:
            served = sum(pipeline.ask(pipeline.Asker(tenant, "en"), q).layer in cache_warmup.CACHED_LAYERS for q in asks)
            return served / len(asks)

        def lookups_only(t) -> float:
            hits = 0
            for q in asks:
                state = pipeline.start(pipeline.Asker(t, "en"), q, streamed=False)
                hits += pipeline.lookup(state) is not None
            return hits / len(asks)

        replay()  # the caches fill
        before = lookups_only(tenant)
        cache_warmup.warmup_due()  # the baseline fingerprint
        tenant.policy_version += 1
        tenant.save(update_fields=["policy_version"])
        tenant = Tenant.objects.get(pk=tenant.pk)
        after_bump = lookups_only(tenant)
        due = cache_warmup.warmup_due()
        started = time.monotonic()
        assert tenant.pk in due, due
        run = cache_warmup.warmup_run([tenant.pk], limit=args.top, per_second=args.per_second)  # never the app's
        warmup_s = time.monotonic() - started
        after_warmup = lookups_only(tenant)
    figures = {"questions": len(questions), "asks": len(asks), "hit_rate_before": before,
               "hit_rate_after_bump": after_bump, "hit_rate_after_warmup": after_warmup, "warmup_s": warmup_s,
               "admitted": run.detail.get("admitted", 0), "due": len(due)}
    print(f"stream of {len(asks)} asks over {len(questions)} questions: hit rate {before:.1%} before the bump, "
          f"{after_bump:.1%} after it, {after_warmup:.1%} after the warm-up ({warmup_s:.1f} s, "
          f"{figures['admitted']} admitted)")
    last = (f"questions={len(questions)} asks={len(asks)} hit_rate_before={before:.3f} "
            f"hit_rate_after_bump={after_bump:.3f} hit_rate_after_warmup={after_warmup:.3f} "
            f"warmup_s={warmup_s:.1f} admitted={figures['admitted']}")
    bench_result("warmup", figures, last)
    return last


if __name__ == "__main__":
    main()
