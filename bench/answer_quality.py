"""Answer quality over the demo knowledge base: correct, wrong, not covered, and wrong answers cached.

    .venv/bin/python -m bench.answer_quality [--answerer extractive|model|all] [--limit N] [--only acme-de-03,...]
                                             [--questions kb/questions.jsonl] [--json out.json]
                                             [--asks 1|2]

The questions (``kb/questions.jsonl``, written by hand from the articles) cover both tenants, both
acme locales, yes/no and numeric questions, and questions whose answer differs between the
tenants. Each names the article that answers it, groups of facts a correct answer must contain
(one of each group) and facts that would make it wrong (the other tenant's value, a polarity
flip, an invented window).

The knowledge base is loaded into scratch tenants of the run's own (same articles, names and
instructions as the demo tenants; deleted at the end) and a Redis of its own, so a running app's
caches are neither used nor touched. For every question it measures:

1. Retrieval on its own, through the pipeline's own ``retrieve`` step: is the expected article
   among the passages the answerer gets (recall@k, k = ``RETRIEVAL_TOP_K``), per tenant and locale.
2. Per answerer, the question asked twice through the whole pipeline (``pipeline.ask``): the
   first answer is fresh (or a semantic hit of an earlier question), the second shows what the
   caches serve. Each answer is ``correct`` (every must-group present, no wrong fact), ``wrong``
   (a wrong fact present), ``not_covered`` (the bot handed off) or ``incomplete`` (answered, but
   a required fact is missing). ``wrong_admitted`` counts wrong answers that were admitted to a
   cache or served from one; ``incomplete_admitted`` the incomplete ones, to be read by hand: an
   answer with a wrong fact that the question's ``wrong`` list does not name ("valid for 24 hours"
   for a 30-minute link) is "incomplete" here. The ``must`` and ``wrong`` lists are substrings of the
   normalised answer, so a wrong value that a correct answer also quotes elsewhere ("10 days": the
   return label's, which the extractive answer quotes) cannot be listed. So every admitted answer is
   also put to the low-trust grounding check (``caching.answer_checks.grounding``) whatever
   ``GENERATION_TRUST`` the run has: ``ungrounded_admitted`` counts the admitted answers it would
   refuse (0 at low trust by construction), each flagged ``UNGROUNDED`` and to be read by hand.

The embedded model is slow on a CPU (10-40 s an answer): ``--limit`` asks the first N questions.
All figures are in-sample for the questions file (the answerer's rules were written before it,
but the extractive answerer's constants were checked against these questions).

Ends with one line:
``answerer=… trust=… questions=… answers=… correct=… wrong=… not_covered=… incomplete=… wrong_admitted=…
incomplete_admitted=… ungrounded_admitted=… admitted=… recall@4=…``
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.common import ROOT, bench_result, ensure_schema, scratch_tenants, setup

QUESTIONS = ROOT / "kb" / "questions.jsonl"


def normalise(text: str) -> str:
    text = text.casefold().replace("**", "")
    text = re.sub(r"\s*[-–—]\s*", "-", text)
    text = re.sub(r"(?<=\d)\s*-\s*(?=\d)", "-", text)
    return re.sub(r"\s+", " ", text)


def verdict(question: dict, outcome) -> str:
    if outcome.status != "answered":
        return "not_covered"
    text = normalise(outcome.answer)
    if any(normalise(w) in text for w in question["wrong"]):
        return "wrong"
    if all(any(normalise(alt) in text for alt in group) for group in question["must"]):
        return "correct"
    return "incomplete"


def load_questions(path: Path, only: set[str], limit: int | None) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for row in rows:
        missing = {"id", "tenant", "locale", "question", "article", "must", "wrong"} - set(row)
        if missing:
            raise SystemExit(f"{path}: question {row.get('id')} lacks {sorted(missing)}")
    if only:
        rows = [r for r in rows if r["id"] in only]
    return rows[:limit] if limit else rows


def demo_copy(scratch, slugs=None) -> dict:
    """Scratch tenants holding the demo knowledge base (of the demo tenants ``slugs``, or every one): {demo slug: tenant}."""
    from ingestion.services import ingest_directory
    from retrieval.services import index_sync
    from supportbot.services import TENANT_FIELDS, demo_dir

    root = demo_dir()
    tenants = {}
    for row in json.loads((root / "tenants.json").read_text()):
        if slugs is not None and row["slug"] not in slugs:
            continue
        tenant = scratch.tenant(row["slug"], locales=tuple(row["locales"]), **{
            k: row[k] for k in TENANT_FIELDS if k != "locales"})
        report = ingest_directory(root / row["slug"], tenant)
        if report.errors:
            raise SystemExit(f"could not ingest {row['slug']}: {report.errors[:3]}")
        tenants[row["slug"]] = tenant
    index_sync()
    return tenants


def retrieval_recall(questions: list[dict], tenants: dict) -> dict[str, list[bool]]:
    """Per tenant/locale, whether each question's expected article is among its retrieved passages."""
    from supportbot import pipeline

    found = defaultdict(list)
    for q in questions:
        state = pipeline.start(pipeline.Asker(tenants[q["tenant"]], q["locale"]), q["question"], streamed=False)
        pipeline.check_eligibility(state)
        pipeline.retrieve(state)
        found[f"{q['tenant']}_{q['locale']}"].append(q["article"] in {p.article_id for p in state.passages})
    return found


def run_answerer(name: str, questions: list[dict], tenants: dict, asks: int = 2) -> dict:
    from dataclasses import replace
    from unittest import mock

    from django.test import override_settings

    from caching import admission as admission_module
    from caching.answer_checks.grounding import LOW, LowTrustGroundingCheck
    from supportbot import pipeline

    counts, rows = Counter(), []
    checked, evidence_of = [], admission_module.evidence_of  # what admission checked: for the low-trust check

    def recording(state):
        checked.append(evidence_of(state))
        return checked[-1]
    with override_settings(ASK_ANSWERER=name), mock.patch.object(admission_module, "evidence_of", recording):
        for q in questions:
            asker = pipeline.Asker(tenants[q["tenant"]], q["locale"])
            for attempt in range(1, asks + 1):
                started = time.perf_counter()
                checked.clear()
                outcome = pipeline.ask(asker, q["question"])
                seconds = time.perf_counter() - started
                judged = verdict(q, outcome)
                admission = next((d for d in outcome.decisions if d["layer"] == "admission"), None)
                admitted = admission is not None and admission["disposition"] == "stored"
                cached = outcome.layer in ("exact", "semantic")
                counts["answers"] += 1
                counts[judged] += 1
                counts["admitted"] += admitted
                counts["served_from_cache"] += cached
                if judged == "wrong" and (admitted or cached):
                    counts["wrong_admitted"] += 1
                if judged == "incomplete" and (admitted or cached):  # to read: a wrong fact no question lists
                    counts["incomplete_admitted"] += 1
                low = (LowTrustGroundingCheck().refusal(replace(checked[-1], trust=LOW))
                       if admitted and checked else None)
                counts["ungrounded_admitted"] += low is not None
                if admission is not None and not admitted:
                    counts[f"refused:{admission['reason'].split(':')[0]}"] += 1
                rows.append({"id": q["id"], "attempt": attempt, "verdict": judged, "layer": outcome.layer,
                             "admitted": admitted, "status": outcome.status, "seconds": round(seconds, 2),
                             "admission": admission["reason"] if admission else "", "answer": outcome.answer,
                             "low_trust": str(low) if low else ""})
                flag = ("" if judged == "correct" else "  <--") + (f"  UNGROUNDED ({low})" if low else "")
                print(f"{q['id']:<14} #{attempt} {judged:<11} {outcome.layer:<8} {'admitted' if admitted else '':<8} "
                      f"{seconds:6.2f}s  {q['question'][:60]}{flag}", flush=True)
                if (judged != "correct" or low) and attempt == 1:
                    print("      " + outcome.answer.replace("\n", " | ")[:300], flush=True)
                    if admission and not admitted:
                        print(f"      admission: {admission['reason'][:120]}", flush=True)
    return {"counts": dict(counts), "rows": rows, "trust": admission_module.generation_trust()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answerer", choices=("extractive", "model", "all"), default="extractive")
    parser.add_argument("--limit", type=int, default=None, help="ask only the first N questions")
    parser.add_argument("--only", default="", help="comma-separated question ids")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--json", type=Path, default=None, help="write every answer and verdict here")
    parser.add_argument("--asks", type=int, choices=(1, 2), default=2,
                        help="asks per question (1 halves a slow model run; the second ask shows what the caches serve)")
    args = parser.parse_args()

    setup(private_redis=True)
    ensure_schema()
    from django.conf import settings

    questions = load_questions(args.questions, {s for s in args.only.split(",") if s}, args.limit)
    names = ["extractive", "model"] if args.answerer == "all" else [args.answerer]
    k = settings.RETRIEVAL_TOP_K
    with scratch_tenants("answers") as scratch:
        t = time.perf_counter()
        tenants = demo_copy(scratch, {q["tenant"] for q in questions})
        print(f"knowledge base loaded into scratch tenants in {time.perf_counter() - t:.1f}s", flush=True)
        found = retrieval_recall(questions, tenants)
        recall = {group: sum(hits) / len(hits) for group, hits in sorted(found.items())}
        overall = sum(sum(h) for h in found.values()) / max(1, sum(len(h) for h in found.values()))
        for group, value in recall.items():
            print(f"retrieval recall@{k} {group}: {value:.3f} ({sum(found[group])}/{len(found[group])})", flush=True)
        results = {}
        for name in names:
            print(f"== answerer {name}", flush=True)
            results[name] = run_answerer(name, questions, tenants, args.asks)
    figures = {"questions": len(questions), "recall": recall, "recall_overall": overall,
               "answerers": {n: r["counts"] for n, r in results.items()}}
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "answers": {n: r["rows"] for n, r in results.items()}},
                                        indent=2, ensure_ascii=False))
    lines = []
    for name in names:
        c = results[name]["counts"]
        refused = " ".join(f"{key}={n}" for key, n in sorted(c.items()) if key.startswith("refused:"))
        print(f"{name}: admitted={c.get('admitted', 0)} served_from_cache={c.get('served_from_cache', 0)} {refused}")
        lines.append(f"answerer={name} trust={results[name]['trust']} questions={len(questions)} answers={c.get('answers', 0)} "
                     f"correct={c.get('correct', 0)} wrong={c.get('wrong', 0)} not_covered={c.get('not_covered', 0)} "
                     f"incomplete={c.get('incomplete', 0)} wrong_admitted={c.get('wrong_admitted', 0)} "
                     f"incomplete_admitted={c.get('incomplete_admitted', 0)} "
                     f"ungrounded_admitted={c.get('ungrounded_admitted', 0)} "
                     f"admitted={c.get('admitted', 0)}")
    recall_keys = " ".join(f"recall@{k}_{group}={value:.3f}" for group, value in recall.items())
    bench_result("answer_quality", figures, " ".join(lines) + f" recall@{k}={overall:.3f} {recall_keys}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
