"""Training the eligibility model (``caching.guards.eligibility_model``) on intents labelled one category each.

The labels are per *intent*, not per question: ``data/eligibility_intents.json`` gives each
CLINC150 and BANKING77 intent one of general / personal / action / time, or ``exclude`` when its
questions mix general and ineligible ones ("how long does a card take to arrive" and "my card
hasn't arrived" share BANKING77's ``card_delivery_estimate``); excluded intents are neither trained
on nor evaluated. Nothing here reads ``../shared/eval``, ``dev_pairs`` or the held-out pairs.

The recipe:

1. every question of a labelled intent, normalised as the rules normalise it
   (``signature.parsed``), with its intent's category; the artefact trains on the ``train`` split
   (BANKING77's test rows stay unseen questions for ``bench.banking77``);
2. out-of-fold P(general) with folds grouped by intent (``StratifiedGroupKFold``): no question is
   scored by a model that saw its intent;
3. the threshold: the lowest P(general) at which, among the held-out questions a *soft* rule refuses
   (the only ones the model may let in), at least ``target_precision`` of those let in are labelled
   general (and at least ``min_selected`` are); none (1.01, never override) when no threshold does;
4. fit on every training question and store the fitted arrays (``save_pipeline``) and
   ``eligibility.json`` (version, threshold, the out-of-fold figures) under ``<root>/<version>/``.

Deterministic: fixed seeds and folds; the same inputs give the same bytes (``tests/caching/test_eligibility_model.py``). Runs without Django:
``python -m caching.eligibility_train`` (bootstrap) or ``manage.py train_eligibility``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modelbuild import judge_data
from caching.guards.eligibility import RULES, classify_rules
from caching.guards.eligibility_model import (
    DATA_DIR, DEFAULT_ROOT, FEATURE_PARTS, EligibilityConfig, artefact_version, vectorizer_params,
)
from caching.guards.signature import parsed

CATEGORIES = ("general", "personal", "action", "time")


@dataclass(frozen=True)
class Example:
    text: str
    norm: str
    category: str
    intent: str
    dataset: str
    split: str
    rule: str  # the rule that refuses it ("" when the rules call it general)
    soft: bool  # refused by a soft rule only as the first rule (the model may be asked)


def load_labels(data_dir: Path = DATA_DIR) -> dict[str, str]:
    """``{intent: category}`` of the labelled intents (``exclude`` left out)."""
    intents = json.loads((data_dir / "eligibility_intents.json").read_text())["intents"]
    bad = {k: v["category"] for k, v in intents.items() if v["category"] not in CATEGORIES + ("exclude",)}
    if bad:
        raise ValueError(f"unknown eligibility categories in eligibility_intents.json: {bad}")
    return {k: v["category"] for k, v in intents.items() if v["category"] != "exclude"}


def load_examples(data_dir: Path = DATA_DIR, splits: tuple[str, ...] = ("train", "test")) -> list[Example]:
    labels = load_labels(data_dir)
    questions = judge_data.load_clinc150(data_dir) + judge_data.load_banking77(data_dir)
    out = []
    for q in questions:
        if q.intent not in labels or q.split not in splits or not q.text.strip():
            continue
        rules = classify_rules(q.text)
        out.append(Example(q.text, parsed(q.text)[0], labels[q.intent], q.intent, q.dataset, q.split,
                           rules.rule, not rules.eligible and RULES[rules.rule] == "soft"))
    return out


def make_pipeline(config: EligibilityConfig):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, Pipeline

    params = vectorizer_params(config)
    features = FeatureUnion([(part, TfidfVectorizer(**params[part])) for part in FEATURE_PARTS])
    return Pipeline([("features", features),
                     ("lr", LogisticRegression(C=config.C, max_iter=3000, class_weight="balanced"))])


def grouped_folds(examples: list[Example], n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import StratifiedGroupKFold

    y = [e.category for e in examples]
    groups = [e.intent for e in examples]
    return list(StratifiedGroupKFold(n_splits=n, shuffle=True, random_state=seed).split(np.zeros(len(y)), y, groups))


def out_of_fold(examples: list[Example], config: EligibilityConfig, fit_predict=None) -> np.ndarray:
    """Class probabilities (columns in ``CATEGORIES`` order) of each example by a model that never
    saw its intent. ``fit_predict(train, test) -> probabilities`` defaults to the TF-IDF pipeline."""
    fit_predict = fit_predict or (lambda tr, te: _tfidf_fit_predict(tr, te, config))
    out = np.zeros((len(examples), len(CATEGORIES)))
    for train_idx, test_idx in grouped_folds(examples, config.folds, config.seed):
        out[test_idx] = fit_predict([examples[i] for i in train_idx], [examples[i] for i in test_idx])
    return out


def _tfidf_fit_predict(train: list[Example], test: list[Example], config: EligibilityConfig) -> np.ndarray:
    pipe = make_pipeline(config).fit([e.norm for e in train], [e.category for e in train])
    return _in_order(pipe.classes_, pipe.predict_proba([e.norm for e in test]))


def _in_order(classes, proba: np.ndarray) -> np.ndarray:
    out = np.zeros((proba.shape[0], len(CATEGORIES)))
    for j, c in enumerate(classes):
        out[:, CATEGORIES.index(c)] = proba[:, j]
    return out


def choose_threshold(p_general: np.ndarray, is_general: np.ndarray, target: float, min_selected: int,
                     floor: float) -> float:
    """The lowest P(general) >= ``floor`` at which the questions at or above it are at least ``target``
    general and number at least ``min_selected``; 1.01 (never) when there is none."""
    order = np.argsort(-p_general, kind="stable")
    p, g = p_general[order], is_general[order].astype(float)
    precision = np.cumsum(g) / np.arange(1, len(g) + 1)
    best = 1.01
    for k in range(len(p)):
        # a threshold sits between distinct scores: only the last of a run of ties counts
        if k + 1 < len(p) and p[k + 1] == p[k]:
            continue
        if p[k] < floor:
            break
        if k + 1 >= min_selected and precision[k] >= target:
            best = float(p[k])
    return best


def report(examples: list[Example], proba: np.ndarray, threshold: float) -> dict:
    """Per-category precision/recall of the argmax, and what overriding the soft rules at
    ``threshold`` would let in (precision of "general" among them)."""
    y = np.array([CATEGORIES.index(e.category) for e in examples])
    pred = proba.argmax(axis=1)
    per = {}
    for j, c in enumerate(CATEGORIES):
        tp = int(((pred == j) & (y == j)).sum())
        per[c] = {"precision": round(tp / max(1, int((pred == j).sum())), 4), "recall": round(tp / max(1, int((y == j).sum())), 4),
                  "n": int((y == j).sum())}
    soft = np.array([e.soft for e in examples])
    refused = np.array([bool(e.rule) for e in examples])
    general = y == 0
    let_in = soft & (proba[:, 0] >= threshold)
    return {
        "questions": len(examples), "intents": len({e.intent for e in examples}), "per_category": per,
        "rules": {"general_recall": round(float((~refused & general).sum() / max(1, general.sum())), 4),
                  "general_precision": round(float((~refused & general).sum() / max(1, (~refused).sum())), 4),
                  "refused": int(refused.sum()), "refused_soft": int(soft.sum()),
                  "refused_soft_general": int((soft & general).sum())},
        "override": {"threshold": round(threshold, 4), "let_in": int(let_in.sum()),
                     "let_in_general": int((let_in & general).sum()),
                     "precision": round(float((let_in & general).sum() / max(1, let_in.sum())), 4),
                     "recall_of_soft_general": round(float((let_in & general).sum() / max(1, (soft & general).sum())), 4),
                     "let_in_by_category": {c: int((let_in & (y == j)).sum()) for j, c in enumerate(CATEGORIES)}},
        "combined": {"general_recall": round(float(((~refused | let_in) & general).sum() / max(1, general.sum())), 4),
                     "general_precision": round(float(((~refused | let_in) & general).sum() / max(1, (~refused | let_in).sum())), 4)},
    }


def precision_curve(examples: list[Example], proba: np.ndarray,
                    cuts: tuple[float, ...] = (0.999, 0.995, 0.99, 0.98, 0.95, 0.9, 0.8, 0.5)) -> list[dict]:
    """Among the questions a soft rule refuses: how many P(general) >= cut would let in, and the share
    of them labelled general (the precision an override at that cut would have on held-out intents)."""
    soft = np.array([e.soft for e in examples])
    general = np.array([e.category == "general" for e in examples])
    out = []
    for cut in cuts:
        let_in = soft & (proba[:, 0] >= cut)
        out.append({"cut": cut, "let_in": int(let_in.sum()), "general": int((let_in & general).sum()),
                    "precision": round(float((let_in & general).sum() / max(1, let_in.sum())), 4)})
    return out


def threshold_for(examples: list[Example], proba: np.ndarray, config: EligibilityConfig) -> float:
    soft = np.array([e.soft for e in examples])
    is_general = np.array([e.category == "general" for e in examples])
    return choose_threshold(proba[soft, 0], is_general[soft], config.target_precision, config.min_selected,
                            config.min_threshold)


def train_artefact(out_dir: Path, config: EligibilityConfig = EligibilityConfig(), *, version: str | None = None,
                   data_dir: Path = DATA_DIR, examples: list[Example] | None = None, progress=print) -> dict:
    """Build ``out_dir`` (``examples``: the training split of every labelled intent unless given)."""
    started = time.perf_counter()
    version = version or artefact_version(config, data_dir)
    examples = examples if examples is not None else load_examples(data_dir, splits=("train",))
    progress(f"{len(examples)} questions of {len({e.intent for e in examples})} labelled intents; "
             f"{sum(e.soft for e in examples)} refused by a soft rule first")
    proba = out_of_fold(examples, config)
    threshold = threshold_for(examples, proba, config)
    figures = report(examples, proba, threshold)
    pipe = make_pipeline(config).fit([e.norm for e in examples], [e.category for e in examples])
    meta = {"version": version, "threshold": threshold, "config": dataclasses.asdict(config),
            "out_of_fold": figures, "curve": precision_curve(examples, proba), "classes": [str(c) for c in pipe.classes_]}
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    save_pipeline(pipe, tmp)
    (tmp / "eligibility.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    progress(f"eligibility model {version}: threshold {threshold:.3f}, held-out intents: soft-refused questions let in "
             f"{figures['override']['let_in']} at precision {figures['override']['precision']}, "
             f"{time.perf_counter() - started:.0f} s")
    return meta


def save_pipeline(pipe, out: Path) -> None:
    """The fitted pipeline as plain arrays and term lists (``EligibilityModel`` reads them): the same
    fit gives the same bytes, which a pickle does not promise across processes."""
    for part, vec in pipe.named_steps["features"].transformer_list:
        terms = sorted(vec.vocabulary_, key=vec.vocabulary_.get)
        (out / f"terms-{part}.json").write_text(json.dumps(terms, ensure_ascii=True))
        np.save(out / f"idf-{part}.npy", np.asarray(vec.idf_, dtype=np.float64))
    lr = pipe.named_steps["lr"]
    np.save(out / "coef.npy", np.asarray(lr.coef_, dtype=np.float64))
    np.save(out / "intercept.npy", np.asarray(lr.intercept_, dtype=np.float64))


def ensure_artefact(root: Path = DEFAULT_ROOT, *, force: bool = False, progress=print) -> Path:
    """Build the artefact for the current labels, data, rules and config unless it is already there."""
    version = artefact_version()
    out = Path(root) / version
    if (out / "eligibility.json").exists() and not force:
        progress(f"eligibility model {version} already built in {out}")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    train_artefact(out, version=version, progress=progress)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the eligibility model (see caching/eligibility_train.py).")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--force", action="store_true", help="rebuild even when the current version exists")
    args = parser.parse_args(argv)
    ensure_artefact(args.root, force=args.force, progress=lambda m: print(f"train_eligibility: {m}", flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
