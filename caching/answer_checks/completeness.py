"""Completeness: an answer to a question that wants a fact states that fact, for the asked case.

"How long does shipping to the UK take?" wants a duration for the United Kingdom. An answer quoting
the article's neighbouring sentences ("Delivery times below are counted in business days") states
none; one quoting the US list ("Standard (3-5 business days): $4.95") states another country's.
Either is shown to the asker (it is still the help centre's text) but never cached, and the refusal
(``incomplete`` with its reason) is counted per tenant and per article on the staff dashboard, so an
article that cannot answer a frequent question is seen.

What the question wants comes from ``asked``. An answer is complete when one of its lines states a
fact of the wanted kind (an amount, a duration, a count, a time of day, a phone number or e-mail
address), not as the own figure of a plan or product line the question does not ask about
("Premier: $19 per month" for the Pro plan), about what the question asks (the line, its section
or the article it is quoted from holds one of the question's words: "Standardversand" is not
answered by "Plus kostet 45 € pro Jahr in Deutschland"), and, when the question names a country or
a plan that the passages name too, that line is
labelled with it (the line, or the section line it is listed under, names it, or an amount is in
its currency), or it names no case and its figure is not one the passages give only for other
cases. A figure of another case standing unlabelled beside the right one is refused as
``mixed_cases``: the customer cannot tell which applies. A yes/no question about a country is
complete only if the answer speaks of that country.
"""
from __future__ import annotations

import re

from caching.answer_checks.asked import (CHECKED_FAMILIES, FACT_KINDS, all_cases_in, asked, case_fit, focus_terms,
                                         kinds_in, special_fit)
from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.context import ranges
from caching.answer_checks.facts import quantities
from caching.answer_checks.text import CITATION_MARKER, terms

_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_CLOCK = re.compile(r"\b\d{1,2}[:.]\d{2}\b")


def labelled_lines(text: str, heading: str = "") -> list[tuple[str, str]]:
    """Each non-empty line of a text with what labels it: its section heading and, for a list item
    or a table row, the line that introduces the list ("United Kingdom:")."""
    out, lead_in = [], heading
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            lead_in = heading
            continue
        if _LIST_ITEM.match(line) or line.startswith("|"):
            out.append((lead_in, line))
        else:
            out.append((heading, line))
            if line.endswith(":"):
                lead_in = f"{heading}\n{line}"
    return out


def _plain(text: str) -> str:
    return re.sub(r"\W+", " ", text.casefold()).strip()


def source_heading(line: str, sections: tuple[tuple[str, str], ...]) -> str:
    """The heading (article title and section) of the cited section a quoted line comes from, or ""."""
    quoted = _plain(_LIST_ITEM.sub("", line))[:60]
    if len(quoted) < 12:
        return ""
    return next((heading for heading, text in sections if quoted in _plain(text)), "")


def figures(kind: str, text: str) -> set:
    """The figures of a kind a text states, comparable between answer and passages."""
    numbers, measures, amounts = quantities(text)
    if kind == "amount":
        return amounts | {m for m in measures if m[1] == "percent"}
    if kind == "duration":
        return {m for m in measures if m[1] != "percent"}
    if kind == "clock":
        return set(_CLOCK.findall(text)) | ranges(text)
    if kind == "count":
        return numbers
    return set()


class CompletenessCheck(AnswerCheck):
    code = "incomplete"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        wanted = asked(evidence.question)
        answer = CITATION_MARKER.sub("", evidence.answer)
        sources = ([line for heading, text in evidence.sections for line in labelled_lines(text, heading)]
                   if evidence.sections else labelled_lines(evidence.passages_text))
        source_text = "\n".join(f"{h}\n{t}" for h, t in sources) or evidence.passages_text
        named = all_cases_in(source_text)
        cases = {f: c for f, c in wanted.cases.items() if f in CHECKED_FAMILIES and c in named.get(f, ())}
        lines = labelled_lines(answer)
        if wanted.kind == "yesno":
            country = cases.get("country")
            if country and not any(country in all_cases_in(f"{h}\n{t}").get("country", ()) for h, t in lines):
                return Refusal(self.code, f"asks whether, for {country}; the answer does not speak of it")
            return None
        if wanted.kind not in FACT_KINDS:
            return None
        stating = [(h, t) for h, t in lines if wanted.kind in kinds_in(t) and special_fit(wanted, t) >= 0]
        if not stating:
            return Refusal(self.code, f"asks for {wanted.describe()}; the answer states none")
        about = focus_terms(evidence.question, cases=False) - terms(evidence.known_names)
        if about and not any(about & terms(f"{h}\n{t}\n{source_heading(t, evidence.sections)}") for h, t in stating):
            return Refusal(self.code, f"asks for {wanted.describe()}; the answer states one, but not of "
                                      f"{', '.join(sorted(about))}")
        if not cases:
            return None
        fits = [(case_fit(cases, all_cases_in(f"{h}\n{t}", with_currency=True)), t) for h, t in stating]
        others_only = [t for fit, t in fits if fit == 0 and self._only_for_other_cases(wanted.kind, t, cases, sources)]
        if any(fit == 1 for fit, _ in fits):
            if others_only:
                return Refusal("mixed_cases", f"another case's figure stands unlabelled beside the answer: "
                                              f"{others_only[0][:80]!r}")
            return None
        if any(fit == 0 for fit, _ in fits) and len(others_only) < sum(fit == 0 for fit, _ in fits):
            return None  # a figure no case labels, and the passages give it for no other case only
        for_ = " and ".join(cases.values())
        return Refusal(self.code, f"asks for {wanted.describe()}; the answer states it only for other cases "
                                  f"than {for_}" if any(fit == -1 for fit, _ in fits) or others_only
                       else f"asks for {wanted.describe()}; the answer states none")

    @staticmethod
    def _only_for_other_cases(kind: str, line: str, cases: dict[str, str], sources: list[tuple[str, str]]) -> bool:
        """Whether every figure of the kind on an unlabelled answer line is, in the passages, only on
        lines labelled with other cases of the asked families."""
        stated = figures(kind, line)
        if not stated:
            return False
        fits = [case_fit(cases, all_cases_in(f"{h}\n{t}", with_currency=True))
                for h, t in sources if figures(kind, t) & stated]
        return bool(fits) and all(fit == -1 for fit in fits)
