"""What a knowledge-base change costs the answer caches, for the two ways of making it reach them.

    .venv/bin/python -m bench.knowledge_change [--questions kb/retrieval_questions.jsonl ...] [--changes-per-day 3] [--limit N]

Issue 13 asks to choose, by hit rate, between (a) a per-tenant, per-locale corpus revision in the
answer spec and the semantic scope (any change makes every cached answer of its tenant and locale
unreachable) and (b) a targeted purge of the answers whose question retrieves the new or changed
article (``caching.purge.purge_retrieving``, what the project does).

The demo knowledge base is ingested into scratch tenants (deleted at the end). Every answerable
question of the question files stands for one cached answer. For each article of a tenant and
locale, as if it were edited (or added: the questions that find it are the ones a new article
would reach), the share of the scope's cached answers each strategy removes is counted: the
revision removes all of them; the targeted purge removes those whose top-k evidence
(``search_hybrid``, as the Ask path and the purge search) holds the article. Then a day with
``--changes-per-day`` random edits per scope (1,000 draws): the share of cached answers still
served at the end of it. The targeted purge's own cost is one search per cached answer: its time is
measured.

Ends with one line:
``answers=… revision_lost_per_change=… targeted_lost_per_change=… revision_kept_per_day=… targeted_kept_per_day=… purge_ms_per_answer=…``
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
os.environ["JOBS_INDEX_ON_CHANGE"] = "false"

from bench.common import bench_result, scratch_tenants, setup  # noqa: E402
from bench.retrieval_recall import DEFAULT_QUESTIONS, demo_tenants, load_questions  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", nargs="*", type=Path, default=[DEFAULT_QUESTIONS])
    parser.add_argument("--changes-per-day", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="only the first N answerable questions of each file (a smoke run)")
    args = parser.parse_args()
    setup()
    from django.conf import settings

    from bench.common import ensure_schema
    from ingestion.models import Article
    from retrieval.embeddings import embed_query
    from retrieval.search import search_hybrid
    from retrieval.services import active_generation

    ensure_schema()
    questions = []
    for path in args.questions:
        questions += [q for q in load_questions(path) if q["articles"]][: args.limit or None]
    k = settings.RETRIEVAL_TOP_K
    with scratch_tenants("change") as scratch:
        tenants = demo_tenants(scratch, {q["tenant"] for q in questions})
        generation = active_generation()
        retrieves: dict[tuple[str, str], list[set[int]]] = defaultdict(list)
        search_ms = []
        for q in questions:
            tenant = tenants[q["tenant"]]
            vector = embed_query(q["question"])
            started = time.perf_counter()
            hits = search_hybrid(generation, tenant.pk, q["locale"], q["question"], vector, k)
            search_ms.append((time.perf_counter() - started) * 1000)
            retrieves[(q["tenant"], q["locale"])].append({h.article_pk for h in hits})
        articles = {scope: list(Article.objects.filter(tenant=tenants[scope[0]], locale=scope[1])
                                .values_list("pk", flat=True)) for scope in retrieves}

    rng = random.Random(13)
    print(f"{'scope':14} {'answers':>7} {'articles':>8} {'lost/change revision':>21} {'targeted':>9} "
          f"{'kept/day revision':>18} {'targeted':>9}")
    lost_rev, lost_tgt, kept_rev, kept_tgt, weights = [], [], [], [], []
    for scope, sets in sorted(retrieves.items()):
        n, pks = len(sets), articles[scope]
        per_article = [sum(1 for s in sets if pk in s) / n for pk in pks]
        days = []
        for _ in range(1000):
            changed = set(rng.sample(pks, min(args.changes_per_day, len(pks))))
            days.append(sum(1 for s in sets if not s & changed) / n)
        row = (1.0, statistics.mean(per_article), 0.0 if args.changes_per_day else 1.0, statistics.mean(days))
        lost_rev.append(row[0]), lost_tgt.append(row[1]), kept_rev.append(row[2]), kept_tgt.append(row[3])
        weights.append(n)
        print(f"{scope[0] + '/' + scope[1]:14} {n:7d} {len(pks):8d} {row[0]:21.1%} {row[1]:9.1%} {row[2]:18.1%} "
              f"{row[3]:9.1%}")

    def weighted(values):
        return sum(v * w for v, w in zip(values, weights)) / sum(weights)

    purge_ms = statistics.median(search_ms)
    print(f"targeted purge: one search per cached answer of the scope, median {purge_ms:.1f} ms "
          f"(p90 {sorted(search_ms)[int(0.9 * (len(search_ms) - 1))]:.1f} ms)")
    bench_result("knowledge_change", {"changes_per_day": args.changes_per_day, "answers": len(questions),
                                      "search_ms": search_ms},
                 f"answers={len(questions)} revision_lost_per_change={weighted(lost_rev):.3f} "
                 f"targeted_lost_per_change={weighted(lost_tgt):.3f} revision_kept_per_day={weighted(kept_rev):.3f} "
                 f"targeted_kept_per_day={weighted(kept_tgt):.3f} purge_ms_per_answer={purge_ms:.1f}")


if __name__ == "__main__":
    sys.exit(main())
