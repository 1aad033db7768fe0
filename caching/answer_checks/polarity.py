"""Yes/no polarity: an answer that says yes (or no) to a yes/no question must agree with the
passage sentence that speaks to the question ("Do you ship to Canada?" "No" is refused when that
sentence is "Canada: all provinces and territories"). An answer saying yes or no with no such
sentence to check it against is refused too: it cannot be verified. When the question names a
country, plan or product line (``asked``), only passage sentences about that case count (the
sentence or its section names it), and they must share the rest of the question: "No" to "Can I get
Saturday delivery in the UK?" is not borne out by "Canada Post delivers Monday to Friday only"."""
from __future__ import annotations

import re

from caching.answer_checks.asked import YES_NO_QUESTION, all_cases_in, case_fit, case_terms, cases_in
from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.completeness import labelled_lines
from caching.answer_checks.text import CITATION_MARKER, name_terms, negated, sentences_of, stem, terms

_YES = re.compile(r"^\s*(?:yes|yeah|yep|sure|of course|absolutely|certainly|ja|jawohl|natürlich|klar)\b", re.I)
_NO = re.compile(r"^\s*(?:no|nope|unfortunately|sorry|nein|leider)\b", re.I)
# Words for the same act: "Do you ship to Canada?" is answered by "Acme Outfitters delivers to ...".
SYNONYMS = {stem(w): "ship" for w in ("ship", "shipping", "deliver", "delivers", "delivery", "send", "sends", "liefern",
                                       "liefert", "lieferung", "versenden", "versendet", "verschicken")}
MIN_OVERLAP = 0.5  # the passage sentence must share this share of the question's words (weighted)
NAME_WEIGHT = 2.0  # a name in the question (Canada, Premier, Apple Pay) weighs double


def _terms(text: str) -> set[str]:
    return {SYNONYMS.get(t, t) for t in terms(text)}


def answer_polarity(answer: str) -> str | None:
    """"yes", "no", or None for an answer that says neither."""
    first = (sentences_of(answer) or [""])[0]
    if _YES.match(first):
        return "yes"
    if _NO.match(first) or negated(first):
        return "no"
    return None


def evidence_polarity(question: str, passages_text: str, sections: tuple[tuple[str, str], ...] = ()) -> str | None:
    """The polarity of the passage sentences that share most of the question's words (None: none does),
    of those about the asked case when the question names one."""
    case = cases_in(question)
    # With a case named, only sentences about it count, and they must share the rest of the question:
    # "Saturday delivery is not available to Hawaii" does not speak to "express shipping to Hawaii".
    wanted = _terms(question) - (case_terms(question) if case else set())
    if not wanted:
        return None
    names = {SYNONYMS.get(t, t) for t in name_terms(question)}
    weight = {w: NAME_WEIGHT if w in names else 1.0 for w in wanted}
    total = sum(weight.values())
    lines = ([line for heading, text in sections for line in labelled_lines(text, heading)] if sections
             else [("", line) for line in passages_text.split("\n")])
    about = [(h, s) for h, line in lines for s in sentences_of(line)]
    # Sentences naming the asked case speak for it first; those naming no case only when none does.
    tiers = ([[(h, s) for h, s in about if case_fit(case, all_cases_in(f"{h}\n{s}")) == fit] for fit in (1, 0)]
             if case else [about])
    for tier in tiers:  # a sentence says what its section is about: "We do not charge a restocking fee" (Opened electronics)
        scored = [(sum(weight[w] for w in wanted & (_terms(s) | _terms(section_name(h)))) / total, s) for h, s in tier]
        best = max((score for score, _ in scored), default=0.0)
        if best >= MIN_OVERLAP:
            break
    else:
        return None
    polarities = {"no" if negated(s) else "yes" for score, s in scored if score == best}
    return polarities.pop() if len(polarities) == 1 else "mixed"


def section_name(heading: str) -> str:
    """A section's own name ("Opened electronics"), not its article's title, which every sentence shares."""
    first = heading.split("\n")[0]
    return first.split(" — ")[-1] if " — " in first else ""


class PolarityCheck(AnswerCheck):
    code = "polarity"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        if not YES_NO_QUESTION.match(evidence.question):
            return None
        said = answer_polarity(CITATION_MARKER.sub("", evidence.answer))
        if said is None:
            return None
        found = evidence_polarity(evidence.question, evidence.passages_text, evidence.sections)
        if found is None:
            return Refusal(self.code, f"says {said}, but no passage sentence speaks to the question")
        if found != said:
            return Refusal(self.code, f"says {said}, the passages say {found}")
        return None
