"""Facts the passages support *where the answer uses them*: a quantity in an answer must appear in a
passage sentence about the same thing, and a range must appear as that range.

``facts`` checks that every quantity of an answer is somewhere in the cited passages. A small model
stitches facts together from the wrong places, and each piece is then "in the passages":
- "The password reset link is valid for 24 hours": 24 hours is how long the e-mail change's
  confirmation link is valid; the reset link's is 30 minutes.
- "Support is open on Saturday, 10:00 a.m. - 11:00 a.m.": 10:00 opens the store, 11:00 opens it on
  Sundays; no passage has that range.

So, for each answer sentence: of the passage lines (a paragraph, or a list item with its lead-in or
heading) holding a quantity of a kind the answer states (a duration, a percentage, an amount of
money), those sharing the most content words with the answer sentence and the question are where the
answer should come from. If none of them holds a value the answer states, and the answer's value is
only on lines about something else, it is refused. And every range in the answer ("2-4", "9:00 a.m. -
5:00 p.m.", "9 bis 18 Uhr") must be a range of the passages. A sentence quoted from a passage passes.
"""
from __future__ import annotations

import re

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.facts import NUMBER_WORDS, UNITS, quantities
from caching.answer_checks.text import CITATION_MARKER, sentences_of, stem, terms

_ENDPOINT = r"\d{1,2}(?:[:.]\d{2})?(?:\s?[ap]\.?\s?m\.?)?"
_RANGE = re.compile(rf"(?<![\d:.,])(?P<a>{_ENDPOINT})\s?(?:-|–|—|to|bis)\s?(?P<b>{_ENDPOINT})(?![\d:,])",
                    re.IGNORECASE)
# Words that are part of a quantity, not of what it is about.
_QUANTITY_WORDS = frozenset(stem(w) for w in [*UNITS, *NUMBER_WORDS, "uhr", "a.m", "p.m"])


def _endpoint(text: str) -> str:
    """"10 a.m." / "10:00 am" / "10.00" -> "10:00"; the half of the day is not compared."""
    text = re.sub(r"\s?[ap]\.?\s?m\.?$", "", text.strip().lower()).replace(".", ":")
    return text if ":" in text else f"{int(text)}:00"


def ranges(text: str) -> set[tuple[str, str]]:
    return {(_endpoint(m.group("a")), _endpoint(m.group("b"))) for m in _RANGE.finditer(text)}


def _context(text: str) -> set[str]:
    return {t for t in terms(text) if not t.isdigit() and t not in _QUANTITY_WORDS}


def _normal(sentence: str) -> str:
    return re.sub(r"\W+", " ", sentence.casefold()).strip()


def _kind(fact: tuple[str, str]) -> str:
    """("24", "hour") -> "duration"; ("usd", "49") -> "money"; ("20", "percent") -> "percent"."""
    if fact[1] in _DURATIONS:
        return "duration"
    return "percent" if fact[1] == "percent" else "money"


_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s")
_DURATIONS = frozenset({"minute", "hour", "day", "week", "month", "year"})


class FactContextCheck(AnswerCheck):
    code = "fact_out_of_context"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        answer = CITATION_MARKER.sub("", evidence.answer)
        quoted = {_normal(s) for s in sentences_of(evidence.passages_text)}
        windows = []  # (facts of a passage line, content words of it and, for a list item, of its lead-in)
        lead_in = ""
        for line in evidence.passages_text.split("\n"):
            if not line.strip():
                continue
            item = bool(_LIST_ITEM.match(line))
            if not item:
                lead_in = line
            _, measures, amounts = quantities(line.replace("**", ""))
            if measures or amounts:
                windows.append((measures | amounts, _context(f"{lead_in}\n{line}" if item else line)))
        source_ranges = ranges(evidence.passages_text)
        question_words = _context(evidence.question)
        problems = []
        for sentence in sentences_of(answer):
            if _normal(sentence) in quoted:
                continue
            problems += [f"range {a}-{b} is no range of the passages"
                         for a, b in sorted(ranges(sentence) - source_ranges)]
            about = _context(sentence) | question_words
            _, measures, amounts = quantities(sentence)
            stated = measures | amounts
            for kind in sorted({_kind(f) for f in stated}):
                facts = {f for f in stated if _kind(f) == kind}
                scored = [(len(words & about), held) for held, words in windows if any(_kind(f) == kind for f in held)]
                best = max((n for n, _ in scored), default=0)
                if best == 0 or any(held & facts for n, held in scored if n == best):
                    continue
                elsewhere = sorted(f for f in facts if any(f in held for _, held in scored))
                if elsewhere:
                    problems.append(f"{', '.join(' '.join(f) for f in elsewhere)}: the passages say it of something "
                                    f"else")
        if problems:
            return Refusal(self.code, "; ".join(problems)[:200])
        return None
