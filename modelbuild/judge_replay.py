"""The judge's calibration intents asked of a dense cache: where the judge alone may serve.

The judge's operating point is chosen on balanced *pairs* of its held-out calibration intents
(``modelbuild.judge_train``: same-intent positives against nearest-other-intent and perturbation
negatives). A lookup is another distribution: a question meets its *nearest* cached entries, most
of them another intent's, and the first that passes is served. Where a veto or the floor refused
the question's own entry, the judge is asked about entries the question barely resembles, and at
a low cosine what it serves alone is often another intent's answer. This replays lookups on
questions the judge never trained on:

- per data set (BANKING77, CLINC150, NLU++ banking), the ``seeds`` most central eligible train
  questions of *every* intent are the cached entries, one answer an intent (as ``bench.banking77``
  seeds its cache), so the cache is as dense as the data set;
- up to ``queries`` other eligible train questions of each *calibration* intent (held out of the
  judge's training, ``judge_train.split_for_calibration``) ask, each against its ``CANDIDATES``
  nearest entries, served as the semantic layer serves: the first strict match or, with the judge
  serving, the first whose probability reaches the threshold, then the ambiguity check (another
  entry with another answer nearer, whatever refused it, or a contender within the margin refuses).

Eligible means by the rules alone (``classify_rules``), as for the judge's training pairs: what the
replay chooses does not depend on the eligibility model.

``choose_least_cosine`` reads the replay for the judge's own setting: the least cosine (of
``LEAST_COSINES``) from which what the judge alone serves is ``target`` right. ``modelbuild.judge_train``
stores it in the artefact (``min_similarity``), the semantic layer serves with it unless
``SEMANTIC_JUDGE_MIN_SIMILARITY`` overrides it, and ``bench.judge_replay`` prints the whole table.
"""
from __future__ import annotations

import random

import numpy as np

from caching import guards
from modelbuild import judge_data
from caching.guards import CANDIDATES
from caching.guards.eligibility import classify_rules

# the least cosines the judge alone may serve from that the replay compares (1.0: it never serves alone)
LEAST_COSINES = (0.0, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)


def _central(texts: list[str], n: int, vectors: dict[str, np.ndarray]) -> list[str]:
    centroid = np.mean([vectors[t] for t in texts], axis=0)
    return sorted(texts, key=lambda t: (-float(vectors[t] @ centroid), t))[:n]


def replay_rows(judge, questions: list, config, embed, seeds: int = 1, queries: int = 50, seed: int = 12,
                progress=print) -> list[dict]:
    """One row per calibration question asked: its intent and its nearest entries (intent, cosine,
    contender, strict match, the judge's probability for contenders), nearest first. ``questions``:
    the train questions the judge was built from; ``config``: its ``TrainConfig`` (which intents
    were held out for calibration); ``embed``: texts -> {text: normalised MiniLM vector}
    (``judge_train.vectors``)."""
    _, held = judge_data.split_intents(questions, config.calibration_share, f"calibration:{config.seed}")
    eligible = [q for q in questions if classify_rules(q.text).eligible]
    vectors, rng, rows = embed([q.text for q in eligible]), random.Random(f"replay:{seed}"), []
    for dataset in sorted({q.dataset for q in eligible}):
        by_intent: dict[str, set[str]] = {}
        for q in eligible:
            if q.dataset == dataset:
                by_intent.setdefault(q.intent, set()).add(q.text)
        cached, asks = [], []
        for intent, texts in sorted(by_intent.items()):
            if len(texts) <= seeds:
                continue
            central = _central(sorted(texts), seeds, vectors)
            cached += [(intent, t) for t in central]
            if intent in held:
                rest = sorted(texts - set(central))
                asks += [(intent, t) for t in rng.sample(rest, min(queries, len(rest)))]
        if not cached or not asks:
            continue
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
        progress(f"replay {dataset}: {len(cached)} cached entries, {len(asks)} calibration questions asked")
    return rows


def served(row: dict, threshold: float, margin: float | None, judge_serves: bool, least: float = 0.0) -> dict | None:
    """The candidate the semantic layer serves for a row, or None. ``least``: the least cosine at
    which the judge alone serves."""
    cands = row["candidates"]
    for i, c in enumerate(cands):
        if c["contender"] and (c["strict"] or (judge_serves and c["p"] is not None and c["p"] >= threshold
                                               and c["cosine"] >= least)):
            if margin is not None and any(
                    j != i and d["intent"] != c["intent"]
                    and (d["cosine"] > c["cosine"] or (d["contender"] and d["cosine"] >= c["cosine"] - margin))
                    for j, d in enumerate(cands)):
                return None  # ambiguous
            return c
    return None


def figures(rows: list[dict], threshold: float, margin: float | None, judge_serves: bool, least: float = 0.0) -> dict:
    out = [(r, served(r, threshold, margin, judge_serves, least)) for r in rows]
    out = [(r, c) for r, c in out if c is not None]
    false = sum(c["intent"] != r["intent"] for r, c in out)
    judged = [(r, c) for r, c in out if not c["strict"]]
    judged_false = sum(c["intent"] != r["intent"] for r, c in judged)
    return {"asked": len(rows), "served": len(out), "false": false, "hit_rate": len(out) / max(1, len(rows)),
            "false_share": false / len(out) if out else 0.0, "judge_served": len(judged), "judge_false": judged_false,
            "judge_precision": 1 - judged_false / len(judged) if judged else 1.0}


def choose_least_cosine(rows: list[dict], threshold: float, margin: float | None, target: float,
                        min_served: int = 20) -> tuple[float, dict]:
    """The least of ``LEAST_COSINES`` from which what the judge alone serves (at ``threshold``, with
    the ambiguity ``margin``) is at least ``target`` right, and the figures at each; 1.0 (the judge
    alone never serves) when none is. Scanning up from 0, the first that reaches the target is
    taken, once the judge alone serves at least ``min_served`` there (as ``judge_train.
    choose_threshold`` asks of a threshold): 6 right of 6 says little of a 99% target."""
    table = {least: figures(rows, threshold, margin, True, least) for least in LEAST_COSINES}
    for least, f in table.items():
        if f["judge_served"] >= max(1, min_served) and f["judge_precision"] >= target:
            return least, table
    return 1.0, table
