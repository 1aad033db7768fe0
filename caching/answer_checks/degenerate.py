"""Degenerate output: a small model's loops, repeated sentences, the prompt's scaffolding, and an
answer that states nothing (the question echoed back, or only questions)."""
from __future__ import annotations

import re
from collections import Counter

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.text import CITATION_MARKER, WORDS, sentences_of

LOOP_NGRAM = 4  # a run of this many words written three times is a loop
LOOP_REPEATS = 3
# The prompt's own structure showing through: "The answer to this question is:", "Answer:", talk
# of "the passage(s)" (customers are never shown passages), chat-template tokens, headings.
SCAFFOLDING = re.compile(
    r"\banswer\b[^.:\n]{0,40}\b(?:is|lautet)\s*:|^\s*(?:answer|question|passages?|context|response|antwort|frage)\s*:"
    r"|\bpassages?\b|<\|[a-z_]{2,20}\|>|^\s*#{2,}|\b(?:assistant|user|system)\s*:",
    re.IGNORECASE | re.MULTILINE)


class DegenerateCheck(AnswerCheck):
    code = "degenerate"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        answer = CITATION_MARKER.sub("", evidence.answer)
        m = SCAFFOLDING.search(answer)
        if m:
            return Refusal("scaffolding", repr(m.group(0).strip())[:60])
        sentences = sentences_of(answer)
        if _norm(answer) == _norm(evidence.question) or (sentences and all(s.endswith("?") for s in sentences)):
            return Refusal("no_statement", repr(sentences[0] if sentences else answer)[:80])
        seen = Counter(_norm(s) for s in sentences)
        repeated = [s for s, n in seen.items() if n > 1 and len(s) > 8]
        if repeated:
            return Refusal("repeated_sentence", repr(repeated[0])[:80])
        grams = _grams(answer)
        source = _grams(evidence.passages_text)  # quoted schedules repeat "5:00 p.m. MT" legitimately
        for gram, count in grams.most_common():
            if count < LOOP_REPEATS:
                break
            if count > source.get(gram, 0):
                return Refusal("loop", f"{' '.join(gram)!r} x{count}")
        return None


def _grams(text: str) -> Counter:
    words = [w.casefold() for w in WORDS.findall(text)]
    return Counter(tuple(words[i:i + LOOP_NGRAM]) for i in range(len(words) - LOOP_NGRAM + 1))


def _norm(sentence: str) -> str:
    return " ".join(WORDS.findall(sentence.casefold()))
