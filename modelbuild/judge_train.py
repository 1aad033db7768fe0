"""Training the semantic judge: trees over pair features and a MiniLM cross-encoder, calibrated on held-out intents.

The judge answers "is the cached answer the right answer to the new question?" for a pair the
vetoes let through. Two models read the pair:

* gradient-boosted trees over ``guards.judge.pair_features``: the MiniLM cosine (the shipped
  all-MiniLM-L6-v2 weights, the same vector the semantic layer already has) and the guards' soft
  evidence (which signature fields differ, shared content terms, word links and wording, opposite
  words, same kind of question);
* a cross-encoder fine-tuned from the same MiniLM weights (``train_cross_encoder``), reading both
  questions at once (``guards.cross_encoder``).

The recipe:

1. pairs from ``modelbuild.judge_data`` (same-intent positives, nearest-other-intent and one-detail
   perturbation negatives, the paraphrase sets); whole intents are held out for calibration
   (``calibration_share``), so the calibration pairs share no intent with the training pairs.
   Only pairs of two eligible questions that the vetoes let through are used: the judge never
   sees the others;
2. fit the trees and, as the simpler alternative, logistic regression on the training pairs;
   fine-tune the cross-encoder on the same pairs (one torch thread, seeded, ``ce_max_steps``); it is
   served int8-quantised (``ce_quantize``), so from here on its scores are the quantised model's;
3. on the calibration pairs (which none of them saw) score four candidates: trees, linear, the
   cross-encoder alone, and ``stacked``, a logistic regression over the trees' score and the
   cross-encoder's logit (fit on the calibration pairs; its own scores there are out-of-fold,
   folds grouped by intent). Keep the one that serves most of the calibration positives at
   ``target_precision`` (then by AUC);
4. calibrate its score on the calibration pairs (isotonic regression), so the probability is a
   calibrated P(same answer), and choose the operating threshold: the lowest probability at which
   the calibration pairs reach ``target_precision``. Every candidate's own calibration and
   threshold are kept in ``judge.json`` (``alternatives``) for ``bench.judge_eval``;
5. replay lookups by the calibration intents' questions in a dense cache of every intent
   (``modelbuild.judge_replay``) and keep the least cosine from which what the judge alone serves
   there is ``target_precision`` right (``min_similarity``): below it, the question's own entry was
   refused and the judge is asked about entries it barely resembles. The semantic layer serves
   with it unless ``SEMANTIC_JUDGE_MIN_SIMILARITY`` says otherwise, so a retrained judge never runs
   on a setting read off another.

The artefact is a directory ``<root>/<version>/`` (``model.pkl``, ``judge.json``, ``cross_encoder/``); ``version``
(``caching.guards.judge_recipe``, which the request path reads too) hashes the data files, both configs
and the base model, so the same inputs give the same
directory and ``ensure_artefact`` skips a build that exists. Runs without Django:
``python -m modelbuild.judge_train [--recipe small]``, ``manage.py train_judge`` or the background job
``modelbuild.tasks.judge_build`` that ``make run`` queues (``modelbuild.services``).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import pickle
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from caching.guards import judge_recipe, veto
from caching.guards.cross_encoder import CrossEncoderScorer
from caching.guards.eligibility import classify_rules
from caching.guards.judge import FEATURES, LearnedJudge, pair_features
# the recipe (its configs, where artefacts live) is shared with the request path from below
from caching.guards.judge_recipe import (  # noqa: F401
    DEFAULT_ROOT, FULL, RECIPE, RECIPES, Recipe, TrainConfig, base_model_dir, weights_digest)
from modelbuild import judge_data, judge_replay
from modelbuild.judge_data import Pair, PairConfig

log = logging.getLogger(__name__)


def artefact_version(recipe: Recipe = FULL, data_dir: Path = judge_data.DATA_DIR, model_dir: Path | None = None) -> str:
    """``judge-<12 hex>`` (``guards.judge_recipe.artefact_version`` over the judge's features): the
    version the request path loads for this recipe."""
    return judge_recipe.artefact_version(FEATURES, recipe, data_dir, model_dir)


def recipe_questions(recipe: Recipe) -> list[judge_data.Question]:
    """The training questions of a recipe: the ``train`` split of its datasets, its first intents only."""
    questions = [q for q in judge_data.load_questions(recipe.datasets) if q.split == "train"]
    if recipe.intents:
        keep = set(sorted({q.intent for q in questions})[:recipe.intents])
        questions = [q for q in questions if q.intent in keep]
    return questions


# --------------------------------------------------------------------------- features

def cosines(pairs: list[tuple[str, str]], model_dir: Path | None = None) -> np.ndarray:
    """The embedding cosine of each pair, as the semantic layer sees it (MiniLM, mean pooling, normalised).
    One thread: on a shared machine it is faster than two, and the vectors are the same."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from sentence_transformers import SentenceTransformer

    store = _vector_store(model_dir or base_model_dir())
    if not _vectors and store.exists():
        with np.load(store, allow_pickle=False) as saved:
            _vectors.update(zip(saved["texts"].tolist(), saved["vectors"]))
    texts = sorted({t for pair in pairs for t in pair} - set(_vectors))
    if texts:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            model = SentenceTransformer(str(model_dir or base_model_dir()), device="cpu")
            vectors = model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        finally:
            torch.set_num_threads(threads)
        _vectors.update(zip(texts, vectors))
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_name(store.name + ".tmp.npz")
        np.savez(tmp, texts=np.array(list(_vectors)), vectors=np.stack(list(_vectors.values())))
        tmp.replace(store)
    return np.array([float(_vectors[a] @ _vectors[b]) for a, b in pairs], dtype=np.float64)


_vectors: dict[str, np.ndarray] = {}  # question -> vector, kept for the process (several trainings share them)


def vectors(texts: list[str]) -> dict[str, np.ndarray]:
    """{text: its vector as the semantic layer sees it} for ``texts`` (embedded once, like ``cosines``)."""
    cosines([(t, t) for t in texts])
    return {t: _vectors[t] for t in texts}


def _vector_store(model_dir: Path) -> Path:
    """Where the training questions' vectors are kept between builds (``var/judge/vectors-<model>.npz``):
    a rebuild after a recipe change embeds only new questions."""
    return DEFAULT_ROOT / f"vectors-{weights_digest(model_dir)[:12]}.npz"


def features(pairs: list[tuple[str, str]], cosine: np.ndarray) -> np.ndarray:
    return np.array([pair_features(a, b, s) for (a, b), s in zip(pairs, cosine)], dtype=np.float64)


# --------------------------------------------------------------------------- models and calibration

def fit_model(x: np.ndarray, y: np.ndarray, config: TrainConfig, kind: str):
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # one thread: deterministic, and OpenMP's spinning costs more than it gains when shared
        return _fit_model(x, y, config, kind)


def _fit_model(x: np.ndarray, y: np.ndarray, config: TrainConfig, kind: str):
    if kind == "trees":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier(
            max_iter=config.max_iter, learning_rate=config.learning_rate, max_leaf_nodes=config.max_leaf_nodes,
            l2_regularization=config.l2_regularization, random_state=config.seed, early_stopping=False,
        ).fit(x, y)
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000)).fit(x, y)


def fit_calibration(scores: np.ndarray, labels: np.ndarray) -> dict:
    """Isotonic regression from the model's score to P(same answer), as a piecewise-linear map."""
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(scores, labels)
    return {"x": [float(v) for v in iso.X_thresholds_], "y": [float(v) for v in iso.y_thresholds_]}


def choose_threshold(prob: np.ndarray, labels: np.ndarray, target: float, min_served: int = 20) -> float:
    """Scanning down from the most probable pair, the last threshold before the served pairs'
    (prob >= threshold) precision first falls below ``target``, once at least ``min_served`` are
    served; 1.0 (serve nothing) when none qualifies. Ties serve together. Conservative: a lower
    threshold where precision recovers is not taken."""
    best = 1.0
    for t in sorted(set(prob.tolist()), reverse=True):
        served = prob >= t
        n = int(served.sum())
        if n >= min_served and labels[served].mean() >= target:
            best = float(t)
        elif n >= min_served:
            break
    return best


def precision_recall(served: np.ndarray, labels: np.ndarray) -> dict:
    tp = int(np.sum(served & (labels == 1)))
    fp = int(np.sum(served & (labels == 0)))
    pos = int(np.sum(labels == 1))
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / pos if pos else 0.0,
            "served": tp + fp, "false": fp, "pairs": int(len(labels)), "positives": pos}


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels) else float("nan")


def passes_vetoes(pairs: list[tuple[str, str]]) -> np.ndarray:
    return np.array([veto(a, b) is None for a, b in pairs], dtype=bool)


def judge_sees(pairs: list[tuple[str, str]]) -> np.ndarray:
    """The pairs the judge is asked about in the semantic layer: both questions eligible, no veto.
    It is trained and calibrated on those only (a personal question never reaches it)."""
    # the rules alone: the judge's training pairs (and so its version) do not depend on the eligibility model
    eligible = np.array([classify_rules(a).eligible and classify_rules(b).eligible for a, b in pairs], dtype=bool)
    return eligible & passes_vetoes(pairs)


# --------------------------------------------------------------------------- building an artefact

def split_for_calibration(questions, config: TrainConfig, pair_config: PairConfig,
                          with_paraphrases: bool = True, with_oos: bool = False) -> tuple[list[Pair], list[Pair]]:
    """Training pairs from the kept intents, calibration pairs from the held-out ones."""
    kept, held = judge_data.split_intents(questions, config.calibration_share, f"calibration:{config.seed}")
    train = judge_data.build_pairs([q for q in questions if q.intent in kept], pair_config,
                                   with_paraphrases=with_paraphrases, with_oos=with_oos)
    calib_config = dataclasses.replace(pair_config, seed=pair_config.seed + 1,
                                       perturbations=max(200, pair_config.perturbations // 4),
                                       lexical=pair_config.lexical // 4)
    calibration = judge_data.build_pairs([q for q in questions if q.intent in held], calib_config,
                                         with_paraphrases=False)
    return train, calibration


def train_cross_encoder(out_dir: Path, pairs: list[tuple[str, str]], labels: np.ndarray, config: TrainConfig,
                        progress=print) -> dict:
    """Fine-tune a cross-encoder from the shipped MiniLM weights on (cached, new) pairs and save it to
    ``out_dir`` (``sentence_transformers.CrossEncoder`` format). Binary cross-entropy on one logit,
    AdamW with linear warm-up and decay, batches of ``ce_batch_size`` in a seeded order: the same
    pairs and config give the same weights. One torch thread (a fixed count, so the sums run in the
    same order on any machine). Returns the run's figures."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import get_linear_schedule_with_warmup
    from transformers.utils import logging as hf_logging

    started = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(config.seed)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "classifier weights newly initialised" is the point of training
    try:
        encoder = CrossEncoder(str(base_model_dir()), num_labels=1, max_length=config.ce_max_length, device="cpu")
    finally:
        hf_logging.set_verbosity(verbosity)
    model, tokenizer = encoder.model, encoder.tokenizer
    rng = np.random.default_rng(config.seed)
    order = np.concatenate([rng.permutation(len(pairs)) for _ in range(config.ce_epochs)])
    steps = min(config.ce_max_steps, (len(order) + config.ce_batch_size - 1) // config.ce_batch_size)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.ce_learning_rate, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimiser, int(steps * config.ce_warmup_share), steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    target = torch.tensor(labels, dtype=torch.float32)
    model.train()
    losses = []
    try:
        for step in range(steps):
            idx = order[step * config.ce_batch_size:(step + 1) * config.ce_batch_size]
            batch = tokenizer([pairs[i][0] for i in idx], [pairs[i][1] for i in idx], padding=True, truncation=True,
                              max_length=config.ce_max_length, return_tensors="pt")
            loss = loss_fn(model(**batch).logits[:, 0], target[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            if (step + 1) % 100 == 0 or step + 1 == steps:
                progress(f"cross-encoder step {step + 1}/{steps}: loss {np.mean(losses[-100:]):.3f}, "
                         f"{time.perf_counter() - started:.0f} s")
    finally:
        torch.set_num_threads(threads)
    model.eval()
    encoder.save(str(out_dir))
    window = max(1, min(100, steps // 2))  # the first and last 100 steps; the halves of a shorter run
    return {"steps": steps, "pairs": len(pairs), "loss_first_100": float(np.mean(losses[:window])),
            "loss_last_100": float(np.mean(losses[-window:])), "loss_window": window,
            "seconds": round(time.perf_counter() - started, 1)}


def cross_encoder_key(pairs: list[tuple[str, str]], labels: np.ndarray, config: TrainConfig) -> str:
    """What the fine-tuned weights depend on: the training pairs and labels, the settings
    ``train_cross_encoder`` reads and the base model. Training is deterministic (one thread, fixed
    seeds), so an artefact trained with the same key has these weights: a recipe change that only
    touches calibration or serving (``ce_quantize``, the stack) reuses them instead of a fine-tune."""
    settings = {k: v for k, v in dataclasses.asdict(config).items()
                if k in ("seed", "ce_epochs", "ce_max_steps", "ce_batch_size", "ce_learning_rate", "ce_warmup_share",
                         "ce_max_length")}
    digest = hashlib.sha256(json.dumps([pairs, [int(v) for v in labels], settings]).encode())
    digest.update(weights_digest(base_model_dir()).encode())
    return digest.hexdigest()[:16]


def _trained_cross_encoder(root: Path, key: str) -> Path | None:
    """An artefact under ``root`` whose cross-encoder was trained with ``key`` (``judge.json``), if any."""
    for meta_file in sorted(Path(root).glob("*/judge.json")):
        try:
            figures = json.loads(meta_file.read_text()).get("cross_encoder") or {}
        except (OSError, ValueError):
            continue
        if figures.get("key") == key and (meta_file.parent / "cross_encoder" / "config.json").exists():
            return meta_file.parent
    return None


# Which candidate serves, when several do about as well on the calibration pairs: the stacked model
# reads the guards' evidence (which words differ, direction, roles) on top of the cross-encoder.
PREFERENCE = ("stacked", "cross_encoder", "trees", "linear")


def choose_kind(ranking: dict[str, dict], prefer_within: float) -> str:
    """The candidate that serves most calibration positives at the target precision (then by AUC),
    except that a candidate earlier in ``PREFERENCE`` within ``prefer_within`` of it is taken instead.

    Why: with ~150 calibration positives a recall difference of 0.01-0.02 is one to three pairs,
    noise. Recipe 7's build picked the cross-encoder alone over the stack by 0.737 to 0.723; on
    held-out intents (``bench.judge_eval --splits heldout``) the stack was the more precise (0.992
    vs 0.985), and the cross-encoder alone served direction swaps the stack refuses ("export to
    CSV" / "import from CSV", "savings to checking" / "checking to savings")."""
    best = max(ranking, key=lambda k: (ranking[k]["recall_at_target"], ranking[k]["auc"]))
    for kind in PREFERENCE:
        if kind in ranking and ranking[kind]["recall_at_target"] >= ranking[best]["recall_at_target"] - prefer_within:
            return kind
    return best


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def stack_inputs(tree_score: np.ndarray, ce_logit: np.ndarray) -> np.ndarray:
    """The stacked judge's inputs: the trees' score as a logit, and the cross-encoder's logit."""
    return np.column_stack([_logit(tree_score), ce_logit])


def fit_stack(calibration: list[Pair], x: np.ndarray, y: np.ndarray, seed: int) -> tuple[dict, np.ndarray]:
    """Logistic regression over ``stack_inputs``, fit on the calibration pairs (the trees and the
    cross-encoder never saw them). Returns its coefficients and out-of-fold scores (folds grouped
    by intent), so that the calibration and the threshold are chosen on scores of pairs the
    stacker did not see either."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    groups = np.array([p.intents[0] if p.intents else f"pair{i}" for i, p in enumerate(calibration)])
    oof = np.zeros(len(y))
    for train_idx, test_idx in GroupKFold(n_splits=min(5, len(set(groups)))).split(x, y, groups):
        fold = LogisticRegression(C=1.0, max_iter=1000, random_state=seed).fit(x[train_idx], y[train_idx])
        oof[test_idx] = fold.predict_proba(x[test_idx])[:, 1]
    full = LogisticRegression(C=1.0, max_iter=1000, random_state=seed).fit(x, y)
    return {"coef": [float(c) for c in full.coef_[0]], "intercept": float(full.intercept_[0])}, oof


def recall_at_precision(scores: np.ndarray, labels: np.ndarray, target: float) -> float:
    """The share of positives served at the score cut ``choose_threshold`` picks for ``target``
    precision; by rank, so scores of any scale compare (1.0 there means "serve nothing")."""
    from scipy.stats import rankdata

    ranks = rankdata(scores, method="max") / (len(scores) + 1)
    cut = choose_threshold(ranks, labels, target)
    return precision_recall(ranks >= cut, labels)["recall"] if cut < 1.0 else 0.0


def train_judge(out_dir: Path, questions, config: TrainConfig = TrainConfig(), pair_config: PairConfig = PairConfig(),
                *, with_paraphrases: bool = True, with_oos: bool = True, version: str = "",
                progress=print) -> dict:
    """Train, calibrate and write an artefact to ``out_dir``; returns its ``judge.json`` contents."""
    started = time.perf_counter()
    train, calibration = split_for_calibration(questions, config, pair_config, with_paraphrases, with_oos)
    train_pairs = [(p.cached, p.new) for p in train]
    cal_pairs = [(p.cached, p.new) for p in calibration]
    keep_train, keep_cal = judge_sees(train_pairs), judge_sees(cal_pairs)
    progress(f"pairs: {len(train)} training, {int(keep_train.sum())} eligible and past the vetoes "
             f"({sum(p.label for p, k in zip(train, keep_train) if k)} positive); {len(calibration)} calibration, "
             f"{int(keep_cal.sum())} eligible and past the vetoes; {time.perf_counter() - started:.0f} s")
    train_pairs = [p for p, k in zip(train_pairs, keep_train) if k]
    cal_pairs = [p for p, k in zip(cal_pairs, keep_cal) if k]
    calibration = [p for p, k in zip(calibration, keep_cal) if k]
    y_train = np.array([p.label for p, k in zip(train, keep_train) if k])
    y_cal = np.array([p.label for p in calibration])
    cos = cosines(train_pairs + cal_pairs)
    progress(f"embedded {len({t for p in train_pairs + cal_pairs for t in p})} questions, "
             f"{time.perf_counter() - started:.0f} s")
    x_train, x_cal = features(train_pairs, cos[:len(train_pairs)]), features(cal_pairs, cos[len(train_pairs):])
    candidates = {}  # kind -> (score on the calibration pairs, the tree/linear model or None)
    for kind in ("trees", "linear"):
        model = fit_model(x_train, y_train, config, kind)
        candidates[kind] = (model.predict_proba(x_cal)[:, 1], model)
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cross_encoder, stack = None, None
    if config.cross_encoder:
        key = cross_encoder_key(train_pairs, y_train, config)
        done = _trained_cross_encoder(out_dir.parent, key)
        if done is not None:  # the same pairs and settings train the same weights: reuse them
            shutil.copytree(done / "cross_encoder", tmp / "cross_encoder")
            cross_encoder = {**json.loads((done / "judge.json").read_text())["cross_encoder"], "reused_from": done.name}
            progress(f"cross-encoder: the one trained in {done.name} on the same pairs and settings")
        else:
            cross_encoder = {**train_cross_encoder(tmp / "cross_encoder", train_pairs, y_train, config, progress),
                             "key": key}
        ce_cal = CrossEncoderScorer(tmp / "cross_encoder", config.ce_max_length, config.ce_quantize).logits(cal_pairs)
        candidates["cross_encoder"] = (ce_cal, candidates["trees"][1])
        stack, stacked = fit_stack(calibration, stack_inputs(candidates["trees"][0], ce_cal), y_cal, config.seed)
        candidates["stacked"] = (stacked, candidates["trees"][1])
    ranking = {k: {"auc": auc(v[0], y_cal), "recall_at_target": recall_at_precision(v[0], y_cal, config.target_precision)}
               for k, v in candidates.items()}
    for k, r in ranking.items():
        progress(f"{k}: calibration AUC {r['auc']:.3f}, recall at precision {config.target_precision} "
                 f"{r['recall_at_target']:.3f}")
    kind = choose_kind(ranking, config.prefer_within)
    alternatives = {}  # every candidate's own calibration and operating point (bench.judge_eval compares them)
    for k, (k_score, _) in candidates.items():
        k_map = fit_calibration(k_score, y_cal)
        k_prob = np.interp(k_score, k_map["x"], k_map["y"])
        alternatives[k] = {"calibration_map": k_map,
                           "threshold": choose_threshold(k_prob, y_cal, config.target_precision)}
    score, model = candidates[kind]
    calibration_map, threshold = alternatives[kind]["calibration_map"], alternatives[kind]["threshold"]
    prob = np.interp(score, calibration_map["x"], calibration_map["y"])
    meta = {
        "version": version, "model": kind, "features": list(FEATURES), "threshold": threshold,
        "calibration_map": calibration_map, "config": dataclasses.asdict(config),
        "pair_config": dataclasses.asdict(pair_config), "stack": stack, "alternatives": alternatives,
        "cross_encoder": cross_encoder,
        "calibration": {"auc": {k: r["auc"] for k, r in ranking.items()},
                        "recall_at_target": {k: r["recall_at_target"] for k, r in ranking.items()},
                        "auc_cosine": auc(x_cal[:, 0], y_cal), **precision_recall(prob >= threshold, y_cal)},
        "training_pairs": len(train_pairs), "seconds": round(time.perf_counter() - started, 1),
    }
    with open(tmp / "model.pkl", "wb") as fh:
        pickle.dump(model, fh)
    (tmp / "judge.json").write_text(json.dumps(meta, indent=2, sort_keys=True))  # the replay loads the judge from it
    meta["min_similarity"], meta["replay"] = choose_min_similarity(tmp, questions, config, progress)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    (tmp / "judge.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    progress(f"judge {version}: {kind}, threshold {threshold:.3f}, least cosine {meta['min_similarity']:.2f}, "
             f"calibration {json.dumps(meta['calibration'])}, {meta['seconds']:.0f} s")
    return meta


def choose_min_similarity(path: Path, questions, config: TrainConfig, progress=print) -> tuple[float, dict]:
    """The least cosine at which the judge built in ``path`` alone serves, read off the replay of its
    calibration intents (``modelbuild.judge_replay.choose_least_cosine``), and the replay's figures at each."""
    judge = LearnedJudge(path)
    rows = judge_replay.replay_rows(judge, questions, config, vectors, config.replay_seeds, config.replay_queries,
                                    progress=progress)
    least, table = judge_replay.choose_least_cosine(rows, judge.threshold, config.replay_margin, config.target_precision,
                                                    config.replay_min_served)
    at = table.get(least)
    progress(f"least cosine at which the judge alone serves: {least:.2f}"
             + (f" ({at['judge_false']} wrong of {at['judge_served']} it alone served on the replay)" if at else
                f" (never: nowhere on the replay does it alone serve {config.replay_min_served} or more, "
                f"{config.target_precision:.0%} right)"))
    return least, {"asked": len(rows), "by_least_cosine": {f"{k:.2f}": v for k, v in table.items()}}


def ensure_artefact(root: Path = DEFAULT_ROOT, *, recipe: Recipe = FULL, force: bool = False, progress=print) -> Path:
    """Build the recipe's artefact for the current data and configs unless it is already there."""
    version = artefact_version(recipe)
    out = Path(root) / version
    if (out / "judge.json").exists() and not force:
        progress(f"judge {version} already built in {out}")
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    train_judge(out, recipe_questions(recipe), recipe.train, recipe.pairs, version=version, progress=progress)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the semantic judge artefact (see modelbuild/judge_train.py).")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--recipe", choices=sorted(RECIPES), default=FULL.name,
                        help="full: the judge the app serves; small: the tests' judge, built in seconds")
    parser.add_argument("--force", action="store_true", help="rebuild even when the current version exists")
    args = parser.parse_args(argv)
    ensure_artefact(args.root, recipe=RECIPES[args.recipe], force=args.force,
                    progress=lambda m: print(f"train_judge: {m}", flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
