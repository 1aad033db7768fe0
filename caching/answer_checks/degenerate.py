"""Degenerate output: a small model's loops, repeated sentences and the prompt's scaffolding."""
from __future__ import annotations

import re
from collections import Counter

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.text import CITATION_MARKER, WORDS, sentences_of

LOOP_NGRAM = 4  # a run of this many words written three times is a loop
LOOP_REPEATS = 3
SCAFFOLDING = re.compile(
    r"\b(?:the\s+)?(?:final\s+)?answer\s+is\s*:|^\s*(?:answer|question|passages?|context|response|antwort|frage)\s*:"
    r"|\b(?:question|passage)\s*\[?\d+\]?\s*:|<\|[a-z_]{2,20}\|>|^\s*#{2,}|\b(?:assistant|user|system)\s*:",
    re.IGNORECASE | re.MULTILINE)


class DegenerateCheck(AnswerCheck):
    code = "degenerate"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        answer = CITATION_MARKER.sub("", evidence.answer)
        m = SCAFFOLDING.search(answer)
        if m:
            return Refusal("scaffolding", repr(m.group(0).strip())[:60])
        seen = Counter(_norm(s) for s in sentences_of(answer))
        repeated = [s for s, n in seen.items() if n > 1 and len(s) > 8]
        if repeated:
            return Refusal("repeated_sentence", repr(repeated[0])[:80])
        words = [w.casefold() for w in WORDS.findall(answer)]
        grams = Counter(tuple(words[i:i + LOOP_NGRAM]) for i in range(len(words) - LOOP_NGRAM + 1))
        if grams:
            gram, count = grams.most_common(1)[0]
            if count >= LOOP_REPEATS:
                return Refusal("loop", f"{' '.join(gram)!r} x{count}")
        return None


def _norm(sentence: str) -> str:
    return " ".join(WORDS.findall(sentence.casefold()))
