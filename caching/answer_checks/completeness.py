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
("Premier: $19 per month" for the Pro plan), nor as the deadline of a step the question does not ask
about ("Ship the item within 10 days" for "How long do I have to return an item?"), about what the question asks (the line, its section
or the article it is quoted from, or for a model's own words any cited section, holds one of the question's words: "Standardversand" is not
answered by "Plus kostet 45 € pro Jahr in Deutschland"), and, when the question names a country or
a plan that the passages name too, that line is
labelled with it (the line, or the section line it is listed under, names it, or an amount is in
its currency), or it names no case and its figure is not one the passages give only for other
cases. A figure of another case standing unlabelled beside the right one is refused as
``mixed_cases``: the customer cannot tell which applies. A question naming a case that has a rule of its own
(a sale or refurbished item, an opened one: ``asked.NAMED_FAMILIES``) is not answered by the general rule when the
passages state that case's figure ("You have 30 days ..." for a sale item's return window). A yes/no question about a country is
complete only if the answer speaks of a country: that one, or those the rule applies to.
"""
from __future__ import annotations

import dataclasses
import re

from caching.answer_checks.asked import (CHECKED_FAMILIES, FACT_KINDS, NAMED_FAMILIES, Asked, about_terms, all_cases_in,
                                         asked,
                                         REWRITE_MARK,
                                         asked_action, asked_cases, ask_kind, asks_of,
                                         asks_in_words, condition_action, figure_stated,
                                         asks_minimum, asked_day, case_fit, covers_day, holds_action, name_head,
                                         named_countries, names_head, states_minimum,
                                         currency_countries, duration_of_another_thing, focus_terms, foreign_plan,
                                         instruction_verb, kinds_in, line_labels, speaks_of_action, yesno_action, only_things_durations, same_event, special_fit,
                                         specific_terms)
from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.context import ranges
from caching.answer_checks.counted import count_of_another_thing
from caching.answer_checks.facts import CURRENCIES, QUANTITY, UNITS, measured_kinds, number, quantities
from caching.answer_checks.text import CITATION_MARKER, sentences_of, terms

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


def foreign_instruction(line: str, asked_words: set[str]) -> bool:
    """A step of a procedure whose action the question does not ask about: its figure is that step's
    deadline ("Ship the item within 10 days" is no answer to "How long do I have to return an item?")."""
    verb = instruction_verb(line)
    return verb is not None and not terms(verb) & asked_words


def _plain(text: str) -> str:
    return re.sub(r"\W+", " ", text.casefold()).strip()


_MD_HEADING = re.compile(r"^#{1,6}\s+(.+)$", re.M)


def source_heading(line: str, sections: tuple[tuple[str, str], ...], *, quoted_only: bool = False) -> str:
    """The heading (article title and section) of the cited section a quoted line comes from; for a
    line quoted from none (a model's own words), the headings of every cited section (``quoted_only``: "")."""
    quoted = _plain(_LIST_ITEM.sub("", line))[:60]
    found = next((heading for heading, text in sections if quoted in _plain(text)), None) if len(quoted) >= 12 else None
    return found if found is not None else "" if quoted_only else "\n".join(heading for heading, _ in sections)


def figures(kind: str, text: str) -> set:
    """The figures of a kind a text states, whole ("3–5 business days" is one figure, not 3 and 5),
    comparable between answer and passages."""
    if kind == "clock":
        return set(_CLOCK.findall(text)) | ranges(text)
    out = set()
    for m in QUANTITY.finditer(text):
        unit = UNITS.get((m.group("unit") or "").lower(), "")
        currency = CURRENCIES.get((m.group("cur1") or m.group("cur2") or "").lower(), "")
        if kind == "amount" and not (currency or unit == "percent"):
            continue
        if kind == "duration" and (not unit or unit == "percent"):
            continue
        out.add((number(m.group("num")), number(m.group("num2") or ""), unit, currency))
    return out


def _other_currencies_beside(line: str, country: str) -> bool:
    """Whether a line gives amounts in the asked country's currency and in another country's, with no country
    named in words ("$49 per year (CA$65 in Canada, £42 in the UK)" labels each; "$5.95, CA$7.95, £4.95" does not)."""
    named = all_cases_in(line).get("country", set())
    if country in named:
        return False
    currencies = {currency for currency, _ in quantities(line)[2]}
    # another country's amount with its country named beside it is labelled: "($7.99, or MX$159 for Mexico)"
    return (len(currencies) > 1 and any(country in currency_countries(c) for c in currencies)
            and any(country not in currency_countries(c) and not currency_countries(c) & named for c in currencies))


class CompletenessCheck(AnswerCheck):
    code = "incomplete"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        """A question of two or three asks (``asks_of``) is complete when the answer is complete for each."""
        told, asks = asks_of(evidence.question)
        if not asks:
            return self._refusal(evidence, asked(evidence.question))
        cases = asked_cases(evidence.question)
        for i, ask in enumerate(asks, 1):
            refusal = self._refusal(dataclasses.replace(evidence, question=f"{told} {ask}".strip()),
                                    Asked(kind=ask_kind(ask), cases={**cases, **asked_cases(ask)}))
            if refusal:
                return Refusal(refusal.code, f"ask {i} of {len(asks)} ({ask[:60]!r}): {refusal.detail}")
        return None

    def _refusal(self, evidence: Evidence, wanted: Asked) -> Refusal | None:
        answer = CITATION_MARKER.sub("", evidence.answer)
        sources = ([line for heading, text in evidence.sections for line in labelled_lines(text, heading)]
                   if evidence.sections else labelled_lines(evidence.passages_text))
        source_text = "\n".join(f"{h}\n{t}" for h, t in sources) or evidence.passages_text
        named = all_cases_in(source_text)
        cases = {f: c for f, c in wanted.cases.items() if f in CHECKED_FAMILIES and c in named.get(f, ())}
        lines = labelled_lines(answer)
        # whether the customer can do a thing no cited passage speaks of ("If I delete my account, can I sign up again
        # with the same email address?" answered with where to send a deletion request): the passages say something
        # else of the subject, whatever kind of fact the question's words look for
        action = yesno_action(evidence.question)
        # German restates a verb less often in the sentence that answers ("Over-Ear-Kopfhörer ... sind keine
        # Hygieneartikel" for "zurückschicken"): there, none of the retrieved passages may speak of it
        spoken = (*evidence.sections, *(evidence.retrieved if evidence.locale.startswith("de") else ()))
        if action and not speaks_of_action(action, answer) and not any(
                speaks_of_action(action, f"{h}\n{t}") for h, t in spoken) and \
                not speaks_of_action(action, evidence.passages_text):
            return Refusal(self.code, f"asks whether the customer can {action}; no cited passage speaks of it")
        # what happens if the customer does a thing ("If I refuse the delivery, do I get the whole amount back?"): the
        # answer quotes a passage that speaks of that thing, or it answers another situation
        condition = condition_action(evidence.question)
        cited = [f"{h}\n{t}" for h, t in evidence.sections] or [evidence.passages_text]
        if condition and not any(speaks_of_action(condition, text) for text in (answer, *cited)):
            return Refusal(self.code, f"asks what holds if the customer does {condition!r}; the answer's passages do "
                                      f"not speak of it")
        if wanted.kind == "yesno":  # the rule for the asked country, or for the countries it applies to
            country = cases.get("country")
            if country and not any(all_cases_in(f"{h}\n{t}").get("country") for h, t in lines):
                return Refusal(self.code, f"asks whether, for {country}; the answer speaks of no country")
            # whether a rule holds for the customer's amount ("can i use affirm to pay for a $120 order?"): the rule's
            # own amount decides, so an answer stating none is not the whole answer
            if quantities(evidence.question)[2] and not quantities(answer)[2]:
                return Refusal(self.code, "asks whether, for an amount; the answer states no amount")
            # so does its own length of time for the customer's ("found it cheaper 10 days after delivery, can you
            # still price match it?")
            if ("duration" in measured_kinds(evidence.question.split(REWRITE_MARK, 1)[0])
                    and "duration" not in measured_kinds(answer)):
                return Refusal(self.code, "asks whether, after a length of time; the answer states none")
            return None
        head = name_head(evidence.question) if wanted.kind in ("name", None) else ""
        # a heading about carriers names one only for a line quoted under it, not for a model's own words
        if head and not any(names_head(head, t, f"{h}\n{source_heading(t, evidence.sections, quoted_only=True)}",
                                       evidence.known_names) for h, t in lines):
            # "Which delivery company brings orders in Mexico?" answered with Mexico's shipping prices
            return Refusal(self.code, f"asks which {head}; the answer names none")
        if wanted.kind not in FACT_KINDS:
            return None
        asked_words = terms(evidence.question)
        action = asked_action(evidence.question) if wanted.kind == "duration" else ""
        # "free" or "straight away" in the question is its condition, not its answer: "Ab welchem Bestellwert ist der
        # Versand kostenlos?" is answered by an order value, never by another service's "ist kostenlos"
        figure = asks_in_words(evidence.question)
        stating = [(h, t) for h, t in lines if any(
            wanted.kind in kinds_in(sentence) and special_fit(wanted, sentence) >= 0
            and (not figure or figure_stated(wanted.kind, sentence))
            # a step's own deadline is no answer to another length ("Ship the item within 10 days"); a step's count or
            # size is what the step takes ("upload up to 5 photos" for how many pictures a claim takes)
            and (wanted.kind in ("size", "count") or not foreign_instruction(sentence, asked_words)
                 or holds_action(action, sentence))
            for sentence in sentences_of(t))
            and not self._from_foreign_plan(wanted, evidence, t)]
        if not stating:
            return Refusal(self.code, f"asks for {wanted.describe()}; the answer states none")
        if wanted.kind == "duration":  # the length of the asked event, not of another thing (the warranty)
            stating = [(h, t) for h, t in stating if not all(
                duration_of_another_thing(evidence.question, s) for s in sentences_of(t) if "duration" in kinds_in(s))]
            if not stating:
                return Refusal(self.code, f"asks for {wanted.describe()} of what the question asks; the answer "
                                          f"states only another thing's")
        if wanted.kind == "count":  # a figure counting the asked thing, when the passages count it by name
            other = count_of_another_thing(evidence.question, answer, source_text)
            if other:
                return Refusal(self.code, other)
        day = asked_day(evidence.question) if wanted.kind == "clock" else None
        if day is not None and not any(covers_day(day, f"{h}\n{t}") for h, t in stating):
            # "What time does the store close on Sundays?" answered with Monday-to-Friday hours
            return Refusal(self.code, f"asks for {wanted.describe()} on one day of the week; the answer states hours "
                                      f"for other days")
        # what the retrieved passages state, cited or not: the fact the answer should have quoted instead
        retrieved = [line for heading, text in evidence.retrieved for line in labelled_lines(text, heading)] or sources
        if action and not any(holds_action(action, t) for _, t in stating) and any(  # "That's the first 2 hours. You can cancel ..."
                holds_action(action, s) and "duration" in kinds_in(s) for _, t in retrieved for s in sentences_of(t)):
            # "Bis wann muss ich das Rücksendepaket abgeben?" answered with the 30 days to start a return
            return Refusal(self.code, f"asks by when the customer must {action}; the passages say, the answer gives "
                                      f"another step's deadline")
        # a word most of a help centre's articles share (item, Artikel) is no sign of what a line is about
        about = specific_terms(about_terms(evidence.question, wanted.kind) - terms(evidence.known_names))
        # the cited sections' headings; without them (evidence from bare passages), the passages' own headings
        bare = "" if evidence.sections else "\n".join(_MD_HEADING.findall(evidence.passages_text))
        if about and not any(same_event(about, terms(f"{h}\n{t}\n{source_heading(t, evidence.sections) if evidence.sections else bare}"))
                             for h, t in stating):  # in its words or others for the same event (delivery, shipping)
            return Refusal(self.code, f"asks for {wanted.describe()}; the answer states one, but not of "
                                      f"{', '.join(sorted(about))}")
        if wanted.kind == "amount" and asks_minimum(evidence.question) and about and not any(
                states_minimum(t) for _, t in stating) and any(
                states_minimum(t) and same_event(about, terms(f"{h}\n{t}")) for h, t in retrieved):
            # "the minimum order total for bank transfer": "$250 or more", not "more than $500 need extra verification"
            return Refusal(self.code, f"asks for a minimum; the passages state one for {', '.join(sorted(about))}, the "
                                      f"answer another rule's threshold")
        general = self._general_for_named_case(wanted, evidence, stating, sources)
        if general:
            return Refusal(self.code, general)
        country = wanted.cases.get("country") if wanted.kind == "amount" else None
        mixed = next((t for _, t in stating if country and _other_currencies_beside(t, country)), None)
        if mixed:  # "$5.95 (CA$7.95, £4.95 or €5.95)" for Canada: every country's fee in one breath
            return Refusal("mixed_cases", f"other countries' amounts stand beside {country}'s: {mixed[:80]!r}")
        if "country" not in wanted.cases:
            only = self._only_a_named_countrys(wanted, stating, sources, about)
            if only:
                return only
        if not cases:
            return None
        money = wanted.kind in ("amount", "contact")  # an amount's currency, a phone number's code: its country
        judged = [(case_fit(cases, line_labels(t, h, with_currency=money)),
                   self._only_for_other_cases(wanted.kind, t, cases, sources), t) for h, t in stating]
        right = [t for fit, foreign, t in judged if fit >= 0 and not foreign]
        unlabelled = [t for fit, foreign, t in judged if fit >= 0 and foreign]  # or labelled as the asked case
        if right and unlabelled:
            return Refusal("mixed_cases", f"another case's figure stands unlabelled beside the answer: "
                                          f"{unlabelled[0][:80]!r}")
        if right:
            return None
        for_ = " and ".join(cases.values())
        return Refusal(self.code, f"asks for {wanted.describe()}; the answer states it only for other cases than "
                                  f"{for_}")

    def _only_a_named_countrys(self, wanted, stating: list[tuple[str, str]], sources: list[tuple[str, str]],
                               about: set[str]) -> Refusal | None:
        """A question that names no country is asked for the general figure: an answer stating the figure only for
        a named country ("In the Mexico store, Pro costs MX$159 per month" for "how much is Pro per month?") is
        incomplete where a cited line states one of the kind for no country ("Pro: $9 per month")."""
        # the countries a line names by name, not its currencies ("$35 (£30, €35)" is the general fee in every
        # currency) nor a city ("Acme Basecamp flagship store, Denver" has the one store's hours)
        countries = [named_countries(f"{h}\n{t}") for h, t in stating]
        if not all(countries):
            return None
        general = [t for h, t in sources if figure_stated(wanted.kind, t)
                   and not named_countries(f"{h}\n{t}")  # "$9" names no country: the home store's price
                   and about and same_event(about, terms(f"{h}\n{t}"))]
        if not general:
            return None
        named = sorted({c for found in countries for c in found})
        return Refusal(self.code, f"asks for {wanted.describe()} for no country; the answer states it only for "
                                  f"{', '.join(named)}, the passages for none too: {general[0][:60]!r}")

    @staticmethod
    def _general_for_named_case(wanted, evidence: Evidence, stating: list[tuple[str, str]],
                                sources: list[tuple[str, str]]) -> str:
        """Why an answer states only the general rule for a case the question names that has a rule of its own
        in the passages (``NAMED_FAMILIES``: "How long do I have to return sale items?" is not answered by "You have
        30 days from the delivery date" when the passages say "Items bought during a sale ... within 14 days"); ""
        when it states the named case's figure, or the passages state none for it."""
        for family, case in wanted.cases.items():
            if family not in NAMED_FAMILIES:
                continue
            own = [t for h, t in sources if case in all_cases_in(f"{h}\n{t}").get(family, ()) and any(
                wanted.kind in kinds_in(s) and not (wanted.kind == "duration" and (duration_of_another_thing(
                    evidence.question, s) or only_things_durations(evidence.question, s))) for s in sentences_of(t))]
            if not own:
                continue
            headings = [source_heading(t, evidence.sections) if evidence.sections else "" for _, t in stating]
            if not any(case in all_cases_in(f"{h}\n{t}\n{heading}").get(family, ())
                       for (h, t), heading in zip(stating, headings)):
                return (f"asks for {wanted.describe()}; the passages state one for {case}, the answer only the "
                        f"general rule")
        return ""

    @staticmethod
    def _from_foreign_plan(wanted, evidence: Evidence, line: str) -> bool:
        """Whether a line is quoted from an article about a plan the question does not ask about (for a
        model's own words: every cited article is)."""
        headings = source_heading(line, evidence.sections).split("\n") if evidence.sections else []
        return bool(headings) and all(foreign_plan(wanted, evidence.question, h, evidence.known_names) for h in headings)

    @staticmethod
    def _only_for_other_cases(kind: str, line: str, cases: dict[str, str], sources: list[tuple[str, str]]) -> bool:
        """Whether every figure of the kind on an unlabelled answer line is, in the passages, only on
        lines labelled with other cases of the asked families."""
        stated = figures(kind, line)
        if not stated:
            return False
        fits = [case_fit(cases, line_labels(t, h, with_currency=kind in ("amount", "contact")))
                for h, t in sources if figures(kind, t) & stated]
        return bool(fits) and all(fit == -1 for fit in fits)
