"""The learned eligibility model: P(general) of a question, from its text alone.

A TF-IDF (word 1-2-grams and character 2-5-grams of the guards' normalised text) logistic
regression over four categories (general, personal, action, time), trained on CLINC150 and
BANKING77 questions whose *intent* carries one category (``data/eligibility_intents.json``; built
by ``caching.eligibility_train``). It only ever reads the text, so ``classify`` stays a pure,
remembered function of the question and runs before the exact-cache lookup.

``classify`` asks it only when a *soft* rule made a question ineligible, and lets the question
into the shared caches when P(general) reaches the artefact's threshold (chosen on held-out
intents for precision >= 0.99 of "general"); hard rules always decide (``eligibility.RULES``).

The artefact is a directory ``<ELIGIBILITY_MODEL_DIR>/<version>/`` (plain arrays and term lists,
``EligibilityModel``; ``eligibility.json``). ``version`` hashes the labels, the data files, the rules' source (the
threshold is chosen on the questions the soft rules refuse), the config and scikit-learn's version,
so the same inputs give the same directory. Not built, or switched off (``ELIGIBILITY_MODEL``):
the rules decide alone (logged once).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
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
RECIPE = 2  # 2: plain arrays instead of a pickle


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


FEATURE_PARTS = ("word", "char")


def vectorizer_params(config: EligibilityConfig) -> dict[str, dict]:
    """The TF-IDF vectorizers' settings, per feature part: the trainer fits with them, the loader
    rebuilds the same analyzers from them."""
    return {
        "word": {"analyzer": "word", "ngram_range": tuple(config.word_ngrams), "min_df": config.min_df,
                 "sublinear_tf": True, "token_pattern": r"(?u)\b\w+\b", "dtype": np.float64},
        "char": {"analyzer": "char_wb", "ngram_range": tuple(config.char_ngrams), "min_df": config.min_df,
                 "sublinear_tf": True, "dtype": np.float64},
    }


class EligibilityModel:
    """A built artefact: ``probabilities(norm)`` and the threshold at which it overrides a soft rule.

    Stored as plain arrays, not a pickle, so a rebuild gives the same bytes: per feature part its
    terms in column order (``terms-<part>.json``) and idf (``idf-<part>.npy``), the logistic
    regression's ``coef.npy`` (categories x columns, the parts side by side) and ``intercept.npy``.
    Scoring is the fitted pipeline's arithmetic: sublinear tf x idf, each part L2-normalised, a
    softmax over the categories (``tests/caching/test_eligibility_model.py`` checks it against
    scikit-learn's ``predict_proba``): tens of microseconds where ``predict_proba`` takes milliseconds."""

    def __init__(self, path: Path):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.path = Path(path)
        self.meta = json.loads((self.path / "eligibility.json").read_text())
        self.version: str = self.meta["version"]
        self.threshold: float = float(self.meta["threshold"])
        self.classes: list[str] = list(self.meta["classes"])
        config = EligibilityConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in self.meta["config"].items()})
        params = vectorizer_params(config)
        coef = np.load(self.path / "coef.npy")
        self._intercept = np.load(self.path / "intercept.npy")
        self._parts = []
        offset = 0
        for part in FEATURE_PARTS:
            terms = json.loads((self.path / f"terms-{part}.json").read_text())
            vocabulary = {t: i for i, t in enumerate(terms)}
            self._parts.append((TfidfVectorizer(**params[part]).build_analyzer(), vocabulary,
                                np.load(self.path / f"idf-{part}.npy"),
                                np.ascontiguousarray(coef[:, offset:offset + len(terms)])))
            offset += len(terms)
        if offset != coef.shape[1] or coef.shape[0] != len(self.classes):
            raise ValueError(f"eligibility artefact {self.path}: coefficients {coef.shape} do not fit "
                             f"{offset} terms and {len(self.classes)} categories")

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
