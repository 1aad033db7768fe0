"""The judge's calibration intents asked of a dense cache: precision of the served answers by policy.

    .venv/bin/python -m bench.judge_replay [--seeds 1] [--queries 50]

The judge's operating point is chosen on balanced *pairs* of its held-out calibration intents
(``caching.judge_train``: same-intent positives against nearest-other-intent and perturbation
negatives). A lookup is another distribution: a question meets its *nearest* cached entries, most
of them another intent's, and the first that passes is served. This replays that, on questions
the judge never trained on:

- per data set (BANKING77, CLINC150, NLU++ banking), the ``--seeds`` most central eligible train
  questions of *every* intent are the cached entries, one answer an intent (as ``bench.banking77``
  seeds its cache), so the cache is as dense as the data set;
- up to ``--queries`` other eligible train questions of each *calibration* intent (held out of the
  judge's training, ``judge_train.split_for_calibration``) ask, each against its 3 nearest entries
  (``caching.layers.semantic.CANDIDATES``), served as the semantic layer serves: the first strict
  match or, with the judge serving, the first whose probability reaches the threshold, then the
  ambiguity check (``caching.layers.semantic._rival``: another entry with another answer nearer,
  whatever refused it, or a contender within the margin refuses).

Reported for the default policy (strict match only) and the judge serving, at the artefact's
threshold and above it, for ambiguity margins off / 0 / 0.02 / 0.05 / 0.1: hit rate (of questions
asked), false share (of served answers, another intent's), and the judge's own serves (beyond
strict matches); then the judge serving at the artefact's threshold by the least cosine at which
the judge alone serves (``SEMANTIC_JUDGE_MIN_SIMILARITY``), with the least at which what the judge
alone serves is 99% right: the setting's value for the judge it was run on. Nothing is chosen here:
``SEMANTIC_AMBIGUITY_MARGIN``'s and ``SEMANTIC_JUDGE_MIN_SIMILARITY``'s defaults were read off these
tables. The cached side of a pair may be a training intent's question; the asking side never is.
The judge's current artefact is used as built (no training): a few minutes on 2 cores. Ends with
one line ``judge_replay_strict_false=… judge_replay_strict_hit=… judge_replay_judge_false=… …``
at ``SEMANTIC_AMBIGUITY_MARGIN`` and ``SEMANTIC_JUDGE_MIN_SIMILARITY``.
"""
from __future__ import annotations

import argparse
import random
import sys
import time

import numpy as np

from bench.common import bench_result, setup

setup()

from django.conf import settings  # noqa: E402

from caching import guards, judge_data, judge_train  # noqa: E402
from caching.layers.semantic import CANDIDATES  # noqa: E402

MARGINS = (None, 0.0, 0.02, 0.05, 0.1)
# what the judge's threshold is chosen for on balanced pairs; the least cosine is chosen for it here
PRECISION = judge_train.TrainConfig().target_precision
FLOORS = (0.0, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def _central(texts: list[str], n: int) -> list[str]:
    vectors = judge_train._vectors
    centroid = np.mean([vectors[t] for t in texts], axis=0)
    return sorted(texts, key=lambda t: (-float(vectors[t] @ centroid), t))[:n]


def replay_rows(judge, seeds: int, queries: int, seed: int = 12) -> list[dict]:
    """One row per calibration question asked: its intent and its nearest entries (intent, cosine,
    contender, strict match, the judge's probability for contenders), nearest first."""
    config = judge_train.TrainConfig()
    questions = [q for q in judge_data.load_questions() if q.split == "train"]
    _, held = judge_data.split_intents(questions, config.calibration_share, f"calibration:{config.seed}")
    eligible = [q for q in questions if guards.classify(q.text).eligible]
    judge_train.cosines([(q.text, q.text) for q in eligible])  # embeds them once (``judge_train._vectors``)
    vectors, rng, rows = judge_train._vectors, random.Random(f"replay:{seed}"), []
    for dataset in sorted({q.dataset for q in eligible}):
        by_intent: dict[str, set[str]] = {}
        for q in eligible:
            if q.dataset == dataset:
                by_intent.setdefault(q.intent, set()).add(q.text)
        cached, asks = [], []
        for intent, texts in sorted(by_intent.items()):
            if len(texts) <= seeds:
                continue
            central = _central(sorted(texts), seeds)
            cached += [(intent, t) for t in central]
            if intent in held:
                rest = sorted(texts - set(central))
                asks += [(intent, t) for t in rng.sample(rest, min(queries, len(rest)))]
        matrix = np.stack([vectors[t] for _, t in cached])
        for intent, text in asks:
            sims = matrix @ vectors[text]
            candidates = []
            for j in np.argsort(-sims, kind="stable")[:CANDIDATES]:
                other_intent, other = cached[j]
                cos = float(sims[j])
                plausible = guards.contender(text, other, cos)
                candidates.append({
                    "intent": other_intent, "cosine": cos, "contender": plausible,
                    "strict": plausible and guards.judge(text, other, cos, learned=None).serve,
                    "p": judge.probability(other, text, cos) if plausible else None})
            rows.append({"dataset": dataset, "intent": intent, "question": text, "candidates": candidates})
        print(f"{dataset}: {len(cached)} cached entries, {len(asks)} calibration questions asked", flush=True)
    return rows


def served(row: dict, threshold: float, margin: float | None, judge_serves: bool, floor: float = 0.0) -> dict | None:
    """The candidate the semantic layer serves for a row, or None. ``floor``: the least cosine at
    which the judge alone serves (``SEMANTIC_JUDGE_MIN_SIMILARITY``)."""
    cands = row["candidates"]
    for i, c in enumerate(cands):
        if c["contender"] and (c["strict"] or (judge_serves and c["p"] is not None and c["p"] >= threshold
                                               and c["cosine"] >= floor)):
            if margin is not None and any(
                    j != i and d["intent"] != c["intent"]
                    and (d["cosine"] > c["cosine"] or (d["contender"] and d["cosine"] >= c["cosine"] - margin))
                    for j, d in enumerate(cands)):
                return None  # ambiguous
            return c
    return None


def figures(rows: list[dict], threshold: float, margin: float | None, judge_serves: bool, floor: float = 0.0) -> dict:
    out = [(r, served(r, threshold, margin, judge_serves, floor)) for r in rows]
    out = [(r, c) for r, c in out if c is not None]
    false = sum(c["intent"] != r["intent"] for r, c in out)
    judged = [(r, c) for r, c in out if not c["strict"]]
    judged_false = sum(c["intent"] != r["intent"] for r, c in judged)
    return {"asked": len(rows), "served": len(out), "false": false, "hit_rate": len(out) / max(1, len(rows)),
            "false_share": false / len(out) if out else 0.0, "judge_served": len(judged), "judge_false": judged_false}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1, help="cached questions per intent")
    parser.add_argument("--queries", type=int, default=50, help="questions asked per calibration intent")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    judge = guards.learned_judge()
    if judge is None:
        print("the judge is not built: run manage.py train_judge", file=sys.stderr)
        return 2
    rows = replay_rows(judge, args.seeds, args.queries)
    print(f"judge {judge.version} (threshold {judge.threshold:.3f}); {len(rows)} questions asked, "
          f"{time.perf_counter() - started:.0f} s\n")
    thresholds = sorted({judge.threshold, 0.97, 0.99, 0.995})
    table = {}
    print(f"{'policy':28s} " + " ".join(f"{'margin ' + ('off' if m is None else f'{m:.2f}'):>24s}" for m in MARGINS))
    for policy, judge_serves, t in [("strict match only", False, 1.0)] + [
            (f"judge serving, p >= {t:.3f}", True, t) for t in thresholds]:
        cells = []
        for m in MARGINS:
            f = figures(rows, t, m, judge_serves)
            table[f"{policy} margin={m}"] = f
            cells.append(f"{f['hit_rate']:.3f} / {f['false_share']:.3f} ({f['false']}/{f['served']})")
        print(f"{policy:28s} " + " ".join(f"{c:>24s}" for c in cells))
    print("\ncells: hit rate / false share of served (false / served)")
    margin = settings.SEMANTIC_AMBIGUITY_MARGIN
    margin = None if margin < 0 else margin
    floor = settings.SEMANTIC_JUDGE_MIN_SIMILARITY
    print(f"\njudge serving at p >= {judge.threshold:.3f}, margin {settings.SEMANTIC_AMBIGUITY_MARGIN}, by the least "
          f"cosine at which the judge alone serves (SEMANTIC_JUDGE_MIN_SIMILARITY, now {floor}):")
    print(f"{'least cosine':>12s} {'hit rate':>9s} {'false/served':>13s} {'judge alone: false/served':>26s} {'precision':>9s}")
    recommended = None
    for least in FLOORS:
        f = figures(rows, judge.threshold, margin, True, least)
        table[f"judge serving floor={least}"] = f
        precision = 1 - f["judge_false"] / f["judge_served"] if f["judge_served"] else 1.0
        if recommended is None and f["judge_served"] and precision >= PRECISION:
            recommended = least
        print(f"{least:12.2f} {f['hit_rate']:9.3f} {f['false']:>6d}/{f['served']:<6d} "
              f"{f['judge_false']:>12d}/{f['judge_served']:<13d} {precision:9.3f}")
    print(f"the least cosine at which what the judge alone serves is {PRECISION:.0%} right: "
          f"{'none' if recommended is None else f'{recommended:.2f}'} (SEMANTIC_JUDGE_MIN_SIMILARITY is {floor})")
    strict, judged = figures(rows, 1.0, margin, False), figures(rows, judge.threshold, margin, True, floor)
    last = (f"judge_replay_strict_false={strict['false_share']:.3f} judge_replay_strict_hit={strict['hit_rate']:.3f} "
            f"judge_replay_judge_false={judged['false_share']:.3f} judge_replay_judge_hit={judged['hit_rate']:.3f} "
            f"judge_replay_margin={settings.SEMANTIC_AMBIGUITY_MARGIN} judge_replay_judge_floor={floor} "
            f"judge_replay_recommended_floor={recommended}")
    bench_result("judge_replay", {"judge": judge.version, "rows": len(rows), "table": table,
                                  "seconds": time.perf_counter() - started}, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
