"""BANKING77 through the answer caches: eligibility, hit rate and false-hit rate on real questions.

    .venv/bin/python -m bench.banking77 [--data DIR] [--intents N] [--seeds 1,5]

``--data``: the BANKING77 folder (default: ``banking77`` in the shared data folder, ``ASK_SHARED_DIR``).
``--intents N``: only the first N intents by name (a smoke run: ``--intents 3 --seeds 1``).

The semantic cache of a scratch tenant is filled from ``train.csv`` with one synthetic answer per
intent: the intent's most central train question (nearest the centroid of its train questions)
that the guards let into a shared cache, offered to the normal admission with ``offer_answer``.
Then every row of ``test.csv`` (3,080 questions, 40 per intent) goes through ``pipeline.start`` and
``pipeline.lookup``, exactly the view's path before retrieval. A variant seeds 5 questions per
intent. Reported:

- eligible share: test questions the guards let near a shared cache (many BANKING77 questions are
  about the customer's own card or transfer, which must bypass it);
- read-only share: test questions only soft rules refused, which read the semantic cache but are
  never stored (``SEMANTIC_SOFT_READS``); their hits and wrong answers are also counted apart;
- hit rate: test questions answered from a cache, over all test questions (and over those that looked);
- false-hit rate: served answers written for another intent (the entry's intent label is not the
  test row's category), over served answers.

Runs against a private Redis and scratch tenants, deleted at the end. Ends with one line:
``banking77_eligible_share=… banking77_hit_rate=… banking77_false_hit_rate=…``
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import SHARED_DATA, bench_result, ensure_schema, scratch_tenants, setup

setup(private_redis=True)

import numpy as np  # noqa: E402

from caching import guards  # noqa: E402
from retrieval.embeddings import embed_texts  # noqa: E402
from supportbot import pipeline  # noqa: E402

DATA = SHARED_DATA / "banking77"  # the shared data folder (ASK_SHARED_DIR)
SOURCE_TEXT = ("Synthetic help-centre text for the BANKING77 benchmark. Every synthetic answer cites it; it "
               "states no links, numbers or amounts, so the synthetic answers are grounded.")


def read_rows(path: Path) -> list[tuple[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return [(row["text"].strip(), row["category"]) for row in csv.DictReader(f) if row["text"].strip()]


def answer_for(category: str) -> str:
    return f"Synthetic verified answer for the {category.replace('_', ' ')} intent [1]"


def seeds_per_intent(train: list[tuple[str, str]], vectors: np.ndarray, per_intent: int) -> dict[str, list[str]]:
    """The most central eligible train questions of each intent."""
    by_intent: dict[str, list[int]] = defaultdict(list)
    for i, (_, category) in enumerate(train):
        by_intent[category].append(i)
    seeds = {}
    for category, rows in sorted(by_intent.items()):
        centroid = vectors[rows].mean(axis=0)
        ranked = sorted(rows, key=lambda i: -float(vectors[i] @ centroid))
        eligible = [train[i][0] for i in ranked if guards.classify(train[i][0]).eligible]
        seeds[category] = eligible[:per_intent]
    return seeds


def seed(scratch, label: str, seeds: dict[str, list[str]]) -> tuple[object, dict]:
    from ingestion.models import Chunk
    from generation.base import Passage

    tenant = scratch.tenant(label)
    article = scratch.article(tenant, "banking-source", "BANKING77 source", SOURCE_TEXT)
    chunk = Chunk.objects.filter(article=article, is_current=True).first()
    passage = Passage(1, chunk.pk, article.external_id, article.title, article.url, article.version, chunk.text, 1.0)
    asker = pipeline.Asker(tenant, "en")
    stats = Counter()
    for category, questions in seeds.items():
        admitted = 0
        for q in questions:
            state = pipeline.offer_answer(asker, q, answer_for(category), [passage], {passage.chunk_id: article.pk},
                                          checks=False)  # placeholder text: the guards are measured
            admitted += state.admitted
        stats["offered"] += len(questions)
        stats["admitted"] += admitted
        stats["intents_with_entry"] += admitted > 0
    return tenant, dict(stats)


def replay(tenant, test: list[tuple[str, str]], intent_of_answer: dict[str, str]) -> dict:
    asker = pipeline.Asker(tenant, "en")
    counts, layers, confusions, examples = Counter(), Counter(), Counter(), []
    started = time.perf_counter()
    for text, category in test:
        state = pipeline.start(asker, text, streamed=False)
        served = pipeline.lookup(state)
        counts["rows"] += 1
        counts["eligible"] += state.eligibility.eligible
        reads = pipeline.reads_only(state)
        counts["reads"] += reads
        if served is None:
            continue
        counts["served"] += 1
        counts["served_reads"] += reads
        layers[str(state.layer)] += 1
        served_intent = intent_of_answer.get(served.answer, "?")
        if served_intent != category:
            counts["false"] += 1
            counts["false_reads"] += reads
            confusions[(category, served_intent)] += 1
            examples.append(f"{text!r} ({category}) got the answer to {served.question!r} ({served_intent})")
    n, served, looked = counts["rows"], counts["served"], counts["eligible"] + counts["reads"]
    return {
        "rows": n, "eligible_share": counts["eligible"] / n, "read_share": counts["reads"] / n, "hit_rate": served / n,
        "hit_rate_of_looked": served / looked if looked else 0.0,
        "served_reads": counts["served_reads"], "false_reads": counts["false_reads"],
        "false_hit_rate": counts["false"] / served if served else 0.0,
        "false_hits": counts["false"], "false_hits_of_all": counts["false"] / n, "served": served,
        "by_layer": dict(layers), "seconds": time.perf_counter() - started,
        "top_confusions": [f"{a} -> {b} ({c})" for (a, b), c in confusions.most_common(8)],
        "false_hit_examples": examples[:10],
    }


def report(name: str, seeded: dict, r: dict) -> None:
    print(f"\n{name}: {seeded['admitted']}/{seeded['offered']} seed questions admitted, "
          f"{seeded['intents_with_entry']}/77 intents have an entry")
    print(f"  eligible share        {r['eligible_share']:.3f}, read only (soft rules) {r['read_share']:.3f}")
    print(f"  hit rate              {r['hit_rate']:.3f} of all test rows, {r['hit_rate_of_looked']:.3f} of those that looked "
          f"({r['served']} served: {r['by_layer']}; {r['served_reads']} to read-only questions)")
    print(f"  false-hit rate        {r['false_hit_rate']:.3f} of served ({r['false_hits']} answers of another intent, "
          f"{r['false_reads']} of them to read-only questions, {r['false_hits_of_all']:.4f} of all rows)")
    print(f"  replay                {r['rows']} questions in {r['seconds']:.1f} s")
    for line in r["top_confusions"]:
        print(f"    false hits by intent: {line}")
    for line in r["false_hit_examples"]:
        print(f"    e.g. {line}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--intents", type=int, default=0, help="only the first N intents by name (0: all 77)")
    parser.add_argument("--seeds", default="1,5", help="cached questions per intent, one run each (comma-separated)")
    args = parser.parse_args(argv)
    seed_counts = [int(n) for n in args.seeds.split(",") if n.strip()]
    if not seed_counts or min(seed_counts) < 1 or args.intents < 0:
        parser.error("--seeds takes positive numbers, --intents 0 or more")
    ensure_schema()
    started = time.perf_counter()
    train, test = read_rows(args.data / "train.csv"), read_rows(args.data / "test.csv")
    if args.intents:
        kept = set(sorted({c for _, c in train})[: args.intents])
        train, test = [r for r in train if r[1] in kept], [r for r in test if r[1] in kept]
    print(f"BANKING77: {len(train)} train and {len(test)} test questions, "
          f"{len({c for _, c in train})} intents", flush=True)
    vectors = embed_texts([t for t, _ in train])  # also warms the embedding cache the seeds use
    embed_texts([t for t, _ in test])
    print(f"embedded in {time.perf_counter() - started:.0f} s", flush=True)
    train_eligible = sum(guards.classify(t).eligible for t, _ in train) / len(train)
    print(f"eligible share of train: {train_eligible:.3f}")
    intent_of_answer = {answer_for(c): c for _, c in train}

    figures = {"train_eligible_share": train_eligible}
    with scratch_tenants("banking77") as scratch:
        for per_intent in seed_counts:
            seeds = seeds_per_intent(train, vectors, per_intent)
            tenant, seeded = seed(scratch, f"seed{per_intent}", seeds)
            result = replay(tenant, test, intent_of_answer)
            report(f"{per_intent} question(s) per intent", seeded, result)
            figures[f"seed{per_intent}"] = {**seeded, **result}
    figures["seconds"] = time.perf_counter() - started
    one = figures[f"seed{seed_counts[0]}"]
    last = (f"banking77_eligible_share={one['eligible_share']:.3f} banking77_hit_rate={one['hit_rate']:.3f} "
            f"banking77_false_hit_rate={one['false_hit_rate']:.3f}")
    print(f"\ntotal {figures['seconds']:.0f} s")
    bench_result("banking77", figures, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
