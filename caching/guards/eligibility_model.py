"""The learned eligibility model: P(general) of a question, from its text alone.

A TF-IDF (word 1-2-grams and character 2-5-grams of the guards' normalised text) logistic
regression over four categories (general, personal, action, time), trained on CLINC150 and
BANKING77 questions whose *intent* carries one category (``data/eligibility_intents.json``; built
by ``caching.eligibility_train``). It only ever reads the text, so ``classify`` stays a pure,
remembered function of the question and runs before the exact-cache lookup.

``classify`` asks it only when a *soft* rule made a question ineligible, and lets the question
into the shared caches when P(general) reaches the artefact's threshold (chosen on held-out
intents for precision >= 0.99 of "general"); hard rules always decide (``eligibility.RULES``).

The artefact is a directory ``<ELIGIBILITY_MODEL_DIR>/<version>/`` (``model.pkl``,
``eligibility.json``). ``version`` hashes the labels, the data files, the rules' source (the
threshold is chosen on the questions the soft rules refuse), the config and scikit-learn's version,
so the same inputs give the same directory. Not built, or switched off (``ELIGIBILITY_MODEL``):
the rules decide alone (logged once).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import pickle
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent.parent
DATA_DIR = ROOT / "data"
LABELS_FILE = DATA_DIR / "eligibility_intents.json"
DEFAULT_ROOT = ROOT / "var" / "eligibility"
# Bump when the recipe changes in a way the config below does not show.
RECIPE = 1


@dataclass(frozen=True)
class EligibilityConfig:
    word_ngrams: tuple[int, int] = (1, 2)
    char_ngrams: tuple[int, int] = (2, 5)
    min_df: int = 2
    C: float = 4.0  # inverse regularisation of the logistic regression
    folds: int = 5  # grouped by intent, for the out-of-fold scores the threshold is chosen on
    target_precision: float = 0.99  # of "general", among the questions the soft rules refuse
    min_selected: int = 30  # a threshold must let at least this many held-out questions through
    min_threshold: float = 0.5
    seed: int = 0
    recipe: int = RECIPE


def source_files(data_dir: Path = DATA_DIR) -> list[Path]:
    """The files the artefact is built from: labels, the two data sets, and the rules' source (which
    questions a soft rule refuses decides the threshold). The model's own code is covered by ``RECIPE``."""
    guards = Path(__file__).resolve().parent
    return [data_dir / "eligibility_intents.json", data_dir / "clinc150" / "data_full.json.gz",
            data_dir / "clinc150" / "domains.json", data_dir / "banking77" / "train.csv.gz",
            data_dir / "banking77" / "test.csv.gz", guards / "eligibility.py", guards / "lexicon.py",
            guards / "signature.py"]


def artefact_version(config: EligibilityConfig = EligibilityConfig(), data_dir: Path = DATA_DIR) -> str:
    """``elig-<12 hex>``."""
    import sklearn

    digest = hashlib.sha256()
    for f in source_files(data_dir):
        digest.update(f.name.encode())
        digest.update(f.read_bytes())
    digest.update(json.dumps(dataclasses.asdict(config), sort_keys=True).encode())
    digest.update(sklearn.__version__.encode())
    return "elig-" + digest.hexdigest()[:12]


class EligibilityModel:
    """A built artefact: ``p_general(norm)`` and the threshold at which it overrides a soft rule."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.meta = json.loads((self.path / "eligibility.json").read_text())
        self.version: str = self.meta["version"]
        self.threshold: float = float(self.meta["threshold"])
        with open(self.path / "model.pkl", "rb") as fh:
            self.pipeline = pickle.load(fh)
        self.classes = [str(c) for c in self.pipeline.classes_]
        self._general = self.classes.index("general")
        # scikit-learn's predict_proba validates and converts for a batch: ~2 ms for one question. The
        # same arithmetic on the fitted vocabularies, idf and coefficients takes tens of microseconds
        # (``tests/caching/test_eligibility_model.py`` checks the two agree).
        lr = self.pipeline.named_steps["lr"]
        self._intercept = np.asarray(lr.intercept_, dtype=np.float64)
        self._parts = []
        offset = 0
        for _, vec in self.pipeline.named_steps["features"].transformer_list:
            size = len(vec.vocabulary_)
            self._parts.append((vec.build_analyzer(), vec.vocabulary_, np.asarray(vec.idf_, dtype=np.float64),
                                np.ascontiguousarray(lr.coef_[:, offset:offset + size], dtype=np.float64)))
            offset += size

    def probabilities(self, norm: str) -> dict[str, float]:
        """Each category's probability for a normalised question (``signature.parsed(question)[0]``)."""
        scores = self._intercept.copy()
        for analyse, vocabulary, idf, coef in self._parts:
            counts: dict[int, int] = {}
            for term in analyse(norm):
                col = vocabulary.get(term)
                if col is not None:
                    counts[col] = counts.get(col, 0) + 1
            if not counts:
                continue
            cols = np.fromiter(counts, dtype=np.intp, count=len(counts))
            values = (1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))) * idf[cols]
            scores += coef[:, cols] @ values / np.sqrt(values @ values)
        exp = np.exp(scores - scores.max())
        return dict(zip(self.classes, (exp / exp.sum()).tolist()))

    def p_general(self, norm: str) -> float:
        return self.probabilities(norm)["general"]


def model_root() -> Path:
    """``ELIGIBILITY_MODEL_DIR``; ``var/eligibility`` where Django is not configured."""
    from django.conf import settings

    if settings.configured:
        return Path(settings.ELIGIBILITY_MODEL_DIR)
    return DEFAULT_ROOT


def model_enabled() -> bool:
    from django.conf import settings

    return bool(settings.ELIGIBILITY_MODEL) if settings.configured else True


_model: EligibilityModel | None = None
_missing: str = ""
_lock = threading.Lock()


def learned_eligibility() -> EligibilityModel | None:
    """The process's model, loaded once; None (logged once) when it is off or not built."""
    global _model, _missing
    if _model is not None or _missing:
        return _model
    with _lock:
        if _model is None and not _missing:
            if not model_enabled():
                _missing = "off (ELIGIBILITY_MODEL=0)"
            else:
                path = model_root() / artefact_version()
                if (path / "eligibility.json").exists():
                    _model = EligibilityModel(path)
                else:
                    _missing = f"not built ({path.name} missing; run manage.py train_eligibility)"
            if _missing:
                log.warning("eligibility model: %s; the rules decide alone", _missing)
    return _model


def set_model(model: EligibilityModel | None) -> None:
    """Swap the process's model (a rebuilt artefact, tests); None loads it again on next use.
    Callers go through ``eligibility.set_eligibility_model``, which also forgets remembered decisions."""
    global _model, _missing
    _model, _missing = model, ""


def model_version() -> str:
    m = learned_eligibility()
    return m.version if m is not None else ""
