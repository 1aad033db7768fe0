"""The features of one (question, passage) pair that the answerability model reads.

Computed the same way when the model is trained (``train``) and when a question is asked
(``decision``), from the retrieved passages, the question's subject terms in the tenant's scope
(``retrieval.subject``) and the embedding model (through the embedding cache: the passage units are
embedded as the extractive answerer embeds them, so they are read back, not computed twice).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from retrieval.subject import Subject
from supportbot.answerers.extractive import section_of, split_units

NAMES = ("similarity", "best_unit", "coverage", "unseen", "missing", "terms", "gap",
         "named_unseen", "named_missing", "de", "de_best_unit", "de_coverage")
MAX_TERMS = 8
_WORD = re.compile(r"[^\W\d_][\w-]*", re.U)
_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})


def named_terms(question: str, terms) -> set[str]:
    """The terms of the question's capitalised words after its first: names in English ("Chicago",
    "Android"), and nouns too in German ("Studentenrabatt", "Hochzeit"). A term is a word's stem, so it
    is matched as a prefix of the word (umlauts folded)."""
    named = set()
    for word in _WORD.findall(question)[1:]:
        if not word[:1].isupper():
            continue
        folded = word.casefold().translate(_FOLD)
        named.update(t for t in terms if folded.startswith(t.translate(_FOLD)))
    return named


def unit_similarities(passages: Sequence, vector: np.ndarray, embed: Callable[[list[str]], np.ndarray]) -> list[float]:
    """Per passage, the best cosine of the question and one of its units ("section: text")."""
    texts, owner = [], []
    for i, p in enumerate(passages):
        for u in split_units(p.text):
            texts.append(f"{section_of(p)}: {u.text}")
            owner.append(i)
    best = [float(p.similarity) for p in passages]  # a passage without units: its own similarity
    if texts:
        scores = embed(texts) @ np.asarray(vector, dtype=np.float32)
        seen: set[int] = set()
        for i, s in zip(owner, scores):
            best[i] = max(best[i], float(s)) if i in seen else float(s)
            seen.add(i)
    return best


def pair_features(passages: Sequence, subject: Subject, units: list[float], locale: str, question: str) -> np.ndarray:
    """One row of ``NAMES`` per passage."""
    if not passages:
        return np.zeros((0, len(NAMES)), dtype=np.float32)
    best = max(float(p.similarity) for p in passages)
    unseen = subject.unseen_share()
    total = subject.total or 1.0
    named = named_terms(question, subject.terms)
    named_unseen = sum(subject.weights[t] for t in named & set(subject.unseen())) / total
    de = 1.0 if locale == "de" else 0.0
    rows = []
    for p, unit in zip(passages, units):
        coverage = subject.coverage(p.chunk_id)
        have = subject.present.get(p.chunk_id, frozenset())
        exact = subject.present_exact.get(p.chunk_id, have)
        # a name the passage has only through a compound part ("Rabatt" of "Studentenrabatt") is half missing
        named_missing = sum(subject.weights[t] * (1.0 if t not in have else 0.5) for t in named - exact) / total
        rows.append([float(p.similarity), unit, coverage, unseen, subject.uncovered_weight(p.chunk_id),
                     min(len(subject.terms), MAX_TERMS) / MAX_TERMS, best - float(p.similarity), named_unseen, named_missing, de, de * unit, de * coverage])
    return np.asarray(rows, dtype=np.float32)
