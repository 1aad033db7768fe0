"""Eligibility rules on labelled intents: precision and recall of "general" on intents held out from rule writing.

    .venv/bin/python -m bench.eligibility_rules [--splits train,test] [--heldout-share 0.3] [--show N]

The questions are those of every labelled CLINC150 and BANKING77 intent (``data/eligibility_intents.json``,
one category per intent, written before any rule or model was fitted to it; ``exclude`` intents, whose
questions mix categories, left out), each labelled with its intent's category. The rules
(``caching.guards.classify``) say general (eligible) or not; "general" is the positive class:

- precision: of the questions the rules let into the shared caches, the share labelled general (a
  miss here is a personal, action or time question that may share an answer);
- recall: of the questions labelled general, the share the rules let in (a miss costs hit rate only).

Held-out intents: a fixed share of the labelled intents, chosen by a hash of the intent's name
(``heldout_intents``), whose questions nobody reads while writing rules; the other intents are
reported apart as ``seen``. Per-intent labels are coarse (a "general" intent holds some first-person
questions and the reverse), so both figures are a floor on what the rules get right. No database.

Pairs: ``tests/data/heldout_pairs.jsonl`` (written before tuning) and the external fow pairs of the shared
data folder (``eval/external/fow_pairs.jsonl``, evaluation only: nobody tunes on it), served by eligibility and
the strict match alone (``guards.same_question``: both questions eligible, same tenant and locale, every
signature field, content term and word link equal; no judge, no cosine): the should-hit rate (recall), the
false-hit rate and the precision of what is served.

Ends with one line ``eligibility_heldout_general_precision=… eligibility_heldout_general_recall=… …
strict_heldout_pairs_hit_rate=… strict_heldout_pairs_false_rate=… strict_fow_hit_rate=… strict_fow_false_rate=…``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from bench.common import ROOT, SHARED_DIR, bench_result
from caching.guards import RULES, classify, same_question
from caching.pairs import read_pairs
from modelbuild import judge_data

LABELS = judge_data.DATA_DIR / "eligibility_intents.json"
PAIR_SETS = {"heldout_pairs": ROOT / "tests" / "data" / "heldout_pairs.jsonl",
             "fow": SHARED_DIR / "eval" / "external" / "fow_pairs.jsonl"}


def load_labels(path: Path = LABELS) -> dict[str, str]:
    """``{intent: category}`` of the labelled intents, ``exclude`` left out."""
    intents = json.loads(path.read_text())["intents"]
    return {name: row["category"] for name, row in intents.items() if row["category"] != "exclude"}


def heldout_intents(intents, share: float) -> set[str]:
    """A fixed ``share`` of the intents, by a hash of each name: the same intents on every run and machine."""
    return {i for i in intents if int(hashlib.sha256(f"eligibility-heldout:{i}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share}


def score(rows: list[tuple[str, str, str]]) -> dict:
    """Precision and recall of "general" and each category's refused share over ``(text, intent, category)``."""
    let_in = general = both = 0
    refused: Counter = Counter()
    total: Counter = Counter()
    soft = 0
    for text, _intent, category in rows:
        e = classify(text)
        total[category] += 1
        let_in += e.eligible
        general += category == "general"
        both += e.eligible and category == "general"
        refused[category] += not e.eligible
        soft += (not e.eligible) and RULES.get(e.rule) == "soft"
    return {"questions": len(rows), "general_precision": round(both / max(1, let_in), 4),
            "general_recall": round(both / max(1, general), 4), "let_in": let_in, "labelled_general": general,
            "refused_share": {c: round(refused[c] / total[c], 4) for c in sorted(total)}, "refused_by_a_soft_rule": soft}


def strict_pairs(pairs: list[dict]) -> dict:
    """What eligibility and the strict match alone serve of labelled pairs."""
    served = hit = false = 0
    should = sum(1 for p in pairs if p["should_hit"])
    for p in pairs:
        a, b = p["ctx_cached"], p["ctx_new"]
        ok = ((a["tenant"], a["locale"]) == (b["tenant"], b["locale"]) and classify(p["cached"]).eligible
              and classify(p["new"]).eligible and same_question(p["new"], p["cached"]))
        served += ok
        hit += ok and p["should_hit"]
        false += ok and not p["should_hit"]
    return {"pairs": len(pairs), "should_hit": should, "served": served, "hit_rate": round(hit / max(1, should), 4),
            "false_rate": round(false / max(1, len(pairs) - should), 4), "false": false,
            "precision": round(hit / served, 4) if served else None}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", default="train,test", help="data splits to read (train, test)")
    parser.add_argument("--heldout-share", type=float, default=0.3, help="share of intents held out from rule writing")
    parser.add_argument("--show", type=int, default=0, help="print up to N questions of the seen intents the rules let in wrongly (never the held-out ones: they stay unread)")
    parser.add_argument("--limit", type=int, default=0, help="read at most N questions of each set (a smoke run)")
    args = parser.parse_args(argv)
    labels = load_labels()
    held = heldout_intents(labels, args.heldout_share)
    splits = {s for s in args.splits.split(",") if s}
    questions = [q for q in judge_data.load_clinc150() + judge_data.load_banking77()
                 if q.intent in labels and q.split in splits and q.text.strip()]
    sets = {"heldout": [(q.text, q.intent, labels[q.intent]) for q in questions if q.intent in held],
            "seen": [(q.text, q.intent, labels[q.intent]) for q in questions if q.intent not in held]}
    if args.limit:
        sets = {name: rows[: args.limit] for name, rows in sets.items()}
    figures = {"heldout_intents": len(held), "seen_intents": len(labels) - len(held), "splits": sorted(splits)}
    for name, rows in sets.items():
        figures[name] = score(rows)
        f = figures[name]
        print(f"{name}: {f['questions']} questions; general precision {f['general_precision']:.3f} "
              f"recall {f['general_recall']:.3f} ({f['let_in']} let in, {f['labelled_general']} labelled general); "
              f"refused share by label {f['refused_share']}")
    if args.show:
        wrong = [(t, i, c) for t, i, c in sets["seen"] if c != "general" and classify(t).eligible]
        for text, intent, category in wrong[: args.show]:
            print(f"  let in, labelled {category} ({intent}): {text}")
    for name, path in PAIR_SETS.items():
        if not path.exists():
            raise SystemExit(f"{path.name}: not found (the shared data folder: ASK_SHARED_DIR)")
        pairs = read_pairs(path)[: args.limit or None]
        figures[f"strict_{name}"] = f = strict_pairs(pairs)
        print(f"{name} pairs, eligibility + strict match only: should-hit {f['hit_rate']:.3f}, false {f['false_rate']:.3f} "
              f"({f['served']} served of {f['pairs']}, {f['false']} wrongly; precision {f['precision']})")
    h, s = figures["heldout"], figures["seen"]
    bench_result("eligibility_rules", figures,
                 f"eligibility_heldout_general_precision={h['general_precision']:.3f} "
                 f"eligibility_heldout_general_recall={h['general_recall']:.3f} "
                 f"eligibility_seen_general_precision={s['general_precision']:.3f} "
                 f"eligibility_seen_general_recall={s['general_recall']:.3f} "
                 f"eligibility_heldout_questions={h['questions']} "
                 + " ".join(f"strict_{n}_hit_rate={figures[f'strict_{n}']['hit_rate']:.3f} "
                            f"strict_{n}_false_rate={figures[f'strict_{n}']['false_rate']:.3f}" for n in PAIR_SETS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
