"""The answerability model's artefact: a logistic regression over ``features.NAMES`` with
per-locale thresholds, stored as JSON (``ANSWERABILITY_MODEL``) and read once per file version."""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from supportbot.answerability.features import NAMES


class ModelUnavailable(Exception):
    pass


def required(stated: bool, headed: bool, low: float, high: float, head: float | None = None) -> float:
    """The probability a passage must reach under thresholds ``low`` (its article states every noun of the
    question), ``high`` (it leaves a noun unstated) and ``head`` (it leaves the first noun unstated; ``None``:
    ``high``). One rule for the artefact (``AnswerabilityModel.needed``) and for calibration, which tries
    candidate thresholds before there is an artefact."""
    return low if stated else high if headed or head is None else head


@dataclass(frozen=True)
class AnswerabilityModel:
    version: str
    coef: np.ndarray
    intercept: float
    mean: np.ndarray
    scale: np.ndarray
    # locale -> least P(answers) of an answerable question; "default" too; "<locale>:nouns" -> the least P of a
    # passage whose article does not state every noun of the question (``retrieval.subject.nouns_of``); "<locale>:head"
    # -> the least P of a passage whose article does not state the question's first noun (what it asks about)
    thresholds: dict[str, float]

    def probabilities(self, rows: np.ndarray) -> np.ndarray:
        if not len(rows):
            return np.zeros(0, dtype=np.float32)
        z = ((rows - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    def threshold(self, locale: str) -> float:
        return float(self.thresholds.get(locale, self.thresholds["default"]))

    def nouns_threshold(self, locale: str) -> float:
        """The threshold for a passage whose article leaves a noun of the question unstated (never below
        the locale's own)."""
        return max(self.threshold(locale), float(self.thresholds.get(f"{locale}:nouns", 0.0)))

    def head_threshold(self, locale: str) -> float:
        """The threshold for a passage whose article leaves the question's first noun unstated (``Nouns.head``:
        "Wie lange hält der Akku der GPS-Uhr?" asks about the battery, not the watch); never below the nouns
        threshold."""
        return max(self.nouns_threshold(locale), float(self.thresholds.get(f"{locale}:head", 0.0)))

    def store_threshold(self, locale: str) -> float:
        """The least probability of a passage an answer cites for the answer to enter a shared cache (0 where
        the artefact has none for the locale: the answer threshold alone)."""
        return float(self.thresholds.get(f"{locale}:store", 0.0))

    def sure(self, probabilities: np.ndarray, passing: list[bool], locale: str) -> bool:
        """Whether the likeliest passing passage reaches the store threshold: the question is answerable surely
        enough for its answer to be cached."""
        store = self.store_threshold(locale)
        return any(ok and p >= store for ok, p in zip(passing, probabilities))

    def passing(self, probabilities: np.ndarray, stated: list[bool], locale: str,
                grounded: list[bool] | None = None, headed: list[bool] | None = None) -> list[bool]:
        """Per passage, whether it answers: it reaches the locale's threshold and, when its article leaves a
        noun of the question unstated, the higher nouns threshold, or the head threshold when that noun is the
        question's first (``headed`` False); a passage whose article states none of the question's subject terms
        (``grounded`` False, ``SUBJECT_GROUNDED_LOCALES``) never answers."""
        grounded = [True] * len(stated) if grounded is None else grounded
        headed = [True] * len(stated) if headed is None else headed
        return [bool(g and p >= self.needed(ok, h, locale))
                for p, ok, g, h in zip(probabilities, stated, grounded, headed)]

    def needed(self, stated: bool, headed: bool, locale: str) -> float:
        """The probability a passage must reach: by whether its article states every noun of the question, and
        its first."""
        return required(stated, headed, self.threshold(locale), self.nouns_threshold(locale),
                        self.head_threshold(locale))

    @classmethod
    def from_dict(cls, data: dict) -> "AnswerabilityModel":
        if list(data.get("features", [])) != list(NAMES):
            raise ModelUnavailable(f"the artefact's features {data.get('features')} are not {list(NAMES)}")
        return cls(version=data["version"], coef=np.asarray(data["coef"], dtype=np.float64),
                   intercept=float(data["intercept"]), mean=np.asarray(data["mean"], dtype=np.float64),
                   scale=np.asarray(data["scale"], dtype=np.float64),
                   thresholds={k: float(v) for k, v in data["thresholds"].items()})


_lock = threading.Lock()
_loaded: dict[tuple[str, float], AnswerabilityModel] = {}


def current_model() -> AnswerabilityModel:
    """The artefact at ``ANSWERABILITY_MODEL``, loaded again when the file changes."""
    path = Path(settings.ANSWERABILITY_MODEL)
    try:
        stamp = (str(path), path.stat().st_mtime)
    except OSError as exc:
        raise ModelUnavailable(f"no answerability model at {path.name}: {exc.strerror}") from exc
    model = _loaded.get(stamp)
    if model is None:
        with _lock:
            try:
                model = AnswerabilityModel.from_dict(json.loads(path.read_text()))
            except (OSError, ValueError, KeyError) as exc:
                raise ModelUnavailable(f"unreadable answerability model {path.name}: {exc}") from exc
            _loaded.clear()
            _loaded[stamp] = model
    return model
