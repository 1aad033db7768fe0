"""Retrieval alone: is the expected article among the passages of a question, per tenant and locale.

    .venv/bin/python -m bench.retrieval_recall [--questions kb/retrieval_questions.jsonl ...] [--k 4] [--limit N]

Ingests the demo knowledge base (``kb/``) into scratch tenants of its own (one per demo tenant,
same locales; deleted at the end, the app's data is not touched), indexes it in the active index
generation, then runs every question of the question files through the vector ranking alone
(``search_chunks``, the retrieval before issue 13) and through the hybrid search the Ask path uses
(``search_hybrid``: vectors + full-text in the locale's language, reciprocal rank fusion, the
evidence rule). A question counts as found when a passage of its expected article is among the
top k (``RETRIEVAL_TOP_K`` unless ``--k``).

A question file has one JSON object a line: ``tenant``, ``locale``, ``question`` and the expected
article's id as ``article`` (or a list, ``articles``: any of them counts); ``split`` and ``kind``
(``paraphrase`` or ``exact_term``) are reported when present. ``kb/retrieval_questions.jsonl`` was
written for this benchmark, and the hybrid search's settings were chosen looking at its ``dev``
half; ``kb/questions_de_dev.jsonl`` (German) was written to choose German rules. Held out: its ``test``
half, ``kb/questions.jsonl`` (``bench.answer_quality``'s) and the German ``kb/questions_de_holdout.jsonl``
and ``kb/questions_de_holdout2.jsonl``, written from the German articles before any measurement on them.
Two German rules were chosen on the tuning and dev files and run once on the held-out ones; neither
gained there, so neither was kept (``docs/architecture.md``, hybrid retrieval). The held-out misses have
been read since, so a third rule chosen now would need new held-out questions. By default every one of
these files is run.

Questions of kind ``off_topic`` (no article) measure the other side: the share answered "not covered"
(no passage is evidence).

Ends with one line:
``questions=… k=… hybrid_recall=… vector_recall=… worst_locale=… worst_recall=… off_topic_refused=… search_p50_ms=…``
(recall over all answerable questions at k; the worst tenant+locale of the hybrid search; the p50 of
one ``search_hybrid`` call, the work of a search-result cache miss after the query embedding,
over the demo knowledge base's small scopes: per tenant+locale p50/p90 are printed above it).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
# The scratch tenants are indexed here, synchronously: no re-index task per ingested article.
os.environ["JOBS_INDEX_ON_CHANGE"] = "false"

from bench.common import ROOT, Stopwatch, bench_result, fmt_ms, percentiles, scratch_tenants, setup  # noqa: E402

DEFAULT_QUESTIONS = ROOT / "kb" / "retrieval_questions.jsonl"
# The search settings were chosen on retrieval_questions.jsonl (dev half); questions_de_dev.jsonl chose two German rules
# that were not kept (neither carried over to the held-out German sets). The rest are held out.
QUESTION_FILES = [ROOT / "kb" / name for name in (
    "retrieval_questions.jsonl", "questions_de_dev.jsonl", "questions.jsonl",
    "questions_de_holdout.jsonl", "questions_de_holdout2.jsonl")]


def load_questions(path: Path) -> list[dict]:
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        q = json.loads(line)
        articles = q.get("articles") or ([q["article"]] if q.get("article") else [])
        if not (q.get("tenant") and q.get("locale") and q.get("question") and (articles or q.get("kind") == "off_topic")):
            raise SystemExit(f"{path}:{n}: needs tenant, locale, question and article(s), or kind off_topic")
        out.append({**q, "articles": articles, "source": Path(path).name})
    return out


def demo_tenants(scratch, slugs) -> dict:
    """Scratch tenants holding the demo knowledge base of these demo tenants, indexed; by demo slug."""
    from django.conf import settings

    from ingestion.services import ingest_directory
    from retrieval.embeddings import get_embedder
    from retrieval.services import generation_for, index_sync

    demo = {t["slug"]: t for t in json.loads((Path(settings.KB_DEMO_DIR) / "tenants.json").read_text())}
    tenants = {}
    for slug in sorted(slugs):
        tenants[slug] = scratch.tenant(slug, locales=tuple(demo[slug]["locales"]))
        report = ingest_directory(Path(settings.KB_DEMO_DIR) / slug, tenants[slug])
        if report.errors:
            raise SystemExit(f"{slug}: {report.errors}")
    embedder = get_embedder()
    generation = generation_for(embedder)
    for tenant in tenants.values():
        index_sync(generation, embedder, tenant_id=tenant.pk)
    return tenants


def recall(questions: list[dict], tenants: dict, k: int) -> list[dict]:
    """Each question with the rank (1-based, None if not in the top k) of its expected article in
    the vector ranking and in the hybrid search."""
    from django.conf import settings

    from retrieval.embeddings import embed_query
    from retrieval.search import search_chunks, search_hybrid
    from retrieval.services import active_generation

    generation = active_generation()
    rows = []
    for q in questions:
        tenant = tenants[q["tenant"]]
        vector = embed_query(q["question"])
        row = dict(q)
        by_vector = search_chunks(generation, tenant.pk, q["locale"], vector, k)
        watch = Stopwatch()
        by_hybrid = search_hybrid(generation, tenant.pk, q["locale"], q["question"], vector, k)
        row["hybrid_ms"] = watch.ms  # the search a result-cache miss makes (the query embedding is not in it)
        for name, hits in (("vector", by_vector), ("hybrid", by_hybrid)):
            if name == "vector":  # the evidence rule before hybrid search: cosine similarity alone
                hits = [h for h in hits if h.similarity >= settings.RETRIEVAL_MIN_SIMILARITY]
            ids = [h.article_id for h in hits]
            row[name] = next((i for i, a in enumerate(ids, start=1) if a in q["articles"]), None)
            row[f"{name}_top"] = ids
            row[f"{name}_refused"] = not hits  # no passage is evidence: the answer is "not covered"
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", nargs="*", type=Path, default=QUESTION_FILES)
    parser.add_argument("--k", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions of each file (a smoke run)")
    args = parser.parse_args()
    setup()
    from django.conf import settings

    from bench.common import ensure_schema

    ensure_schema()
    k = args.k or settings.RETRIEVAL_TOP_K
    questions = [q for path in args.questions for q in load_questions(path)[: args.limit or None]]
    with scratch_tenants("recall") as scratch:
        tenants = demo_tenants(scratch, {q["tenant"] for q in questions})
        rows = recall(questions, tenants, k)

    answerable = [r for r in rows if r["articles"]]
    off_topic = [r for r in rows if not r["articles"]]
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in answerable:
        groups[f"{r['source']} {r['tenant']}/{r['locale']}"].append(r)
        groups[f"{r['source']} {r['tenant']}/{r['locale']} split={r.get('split', '-')}"].append(r)
        groups[f"{r['source']} kind={r.get('kind', '-')}"].append(r)

    def rate(rs, name):
        return sum(1 for r in rs if r[name] is not None) / len(rs) if rs else 0.0

    def refused(rs, name):
        return sum(1 for r in rs if r[f"{name}_refused"]) / len(rs) if rs else 0.0

    print(f"recall@{k} of the expected article ({len(answerable)} questions; vector = cosine ranking with "
          f"RETRIEVAL_MIN_SIMILARITY={settings.RETRIEVAL_MIN_SIMILARITY}, the retrieval before hybrid search)")
    print(f"{'group':58} {'n':>3} {'vector':>7} {'hybrid':>7}")
    for name in sorted(groups):
        rs = groups[name]
        print(f"{name:58} {len(rs):3d} {rate(rs, 'vector'):7.1%} {rate(rs, 'hybrid'):7.1%}")
    for r in answerable:
        if r["hybrid"] is None:
            print(f"miss: {r['tenant']}/{r['locale']} {r['question']!r} expected {r['articles']} got {r['hybrid_top']}")
    if off_topic:
        print(f"off-topic questions answered 'not covered' (no passage is evidence), {len(off_topic)} questions:")
        for loc in sorted({f"{r['tenant']}/{r['locale']}" for r in off_topic}):
            rs = [r for r in off_topic if f"{r['tenant']}/{r['locale']}" == loc]
            print(f"  {loc:20} n={len(rs)} vector={refused(rs, 'vector'):.1%} hybrid={refused(rs, 'hybrid'):.1%}")
        for r in off_topic:
            if not r["hybrid_refused"]:
                print(f"  passages for off-topic {r['tenant']}/{r['locale']} {r['question']!r}: {r['hybrid_top']}")
    latency = {loc: percentiles(r["hybrid_ms"] for r in rows if f"{r['tenant']}/{r['locale']}" == loc)
               for loc in sorted({f"{r['tenant']}/{r['locale']}" for r in rows})}
    for loc, stats in latency.items():
        print(f"search_hybrid latency {loc:20} {fmt_ms(stats)}")
    search_p50 = percentiles(r["hybrid_ms"] for r in rows)["p50"]
    locales = sorted({f"{r['tenant']}/{r['locale']}" for r in answerable})
    by_locale = {loc: rate([r for r in answerable if f"{r['tenant']}/{r['locale']}" == loc], "hybrid") for loc in locales}
    worst = min(locales, key=lambda loc: by_locale[loc])
    figures = {"k": k, "questions": len(answerable), "off_topic": len(off_topic),
               "files": [str(p) for p in args.questions],
               "groups": {name: {"n": len(rs), "vector": rate(rs, "vector"), "hybrid": rate(rs, "hybrid")}
                          for name, rs in sorted(groups.items())},
               "search_ms": latency,
               "off_topic_refused": {"vector": refused(off_topic, "vector"), "hybrid": refused(off_topic, "hybrid")},
               "misses": [{k_: r[k_] for k_ in ("tenant", "locale", "question", "articles", "hybrid_top")}
                          for r in answerable if r["hybrid"] is None]}
    bench_result("retrieval_recall", figures,
                 f"questions={len(answerable)} k={k} hybrid_recall={rate(answerable, 'hybrid'):.3f} "
                 f"vector_recall={rate(answerable, 'vector'):.3f} worst_locale={worst} "
                 f"worst_recall={by_locale[worst]:.3f} off_topic_refused={refused(off_topic, 'hybrid'):.3f} "
                 f"search_p50_ms={search_p50:.1f}")

if __name__ == "__main__":
    sys.exit(main())
