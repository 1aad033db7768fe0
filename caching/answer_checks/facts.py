"""Facts the passages must support: every number, duration, amount, percentage and name in an
answer appears in the passages it cites ("60 days" needs a passage with 60 days; "Europe" needs
a passage naming Europe). A number in the question does not count: "Hello, 12, how long ..."
must not come back as "12 days"."""
from __future__ import annotations

import re

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.text import CITATION_MARKER, WORDS, sentences_of

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "fourteen": 14, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
    "forty-five": 45, "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100,
    "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9,
    "zehn": 10, "zwölf": 12, "vierzehn": 14, "zwanzig": 20, "dreißig": 30, "sechzig": 60, "neunzig": 90,
}
UNITS = {
    "day": "day", "days": "day", "business": "day", "tag": "day", "tage": "day", "tagen": "day", "werktag": "day",
    "werktage": "day", "werktagen": "day", "hour": "hour", "hours": "hour", "stunde": "hour", "stunden": "hour",
    "week": "week", "weeks": "week", "woche": "week", "wochen": "week", "month": "month", "months": "month",
    "monat": "month", "monate": "month", "monaten": "month", "year": "year", "years": "year", "jahr": "year",
    "jahre": "year", "jahren": "year", "minute": "minute", "minutes": "minute", "minuten": "minute",
    "%": "percent", "percent": "percent", "prozent": "percent",
}
CURRENCIES = {"$": "usd", "us$": "usd", "usd": "usd", "ca$": "cad", "cad": "cad", "€": "eur", "eur": "eur",
              "£": "gbp", "gbp": "gbp", "mx$": "mxn", "mxn": "mxn"}
_NUMBER = r"\d+(?:[.,]\d+)*"
_WORD_NUMBER = "|".join(sorted(map(re.escape, NUMBER_WORDS), key=len, reverse=True))
QUANTITY = re.compile(
    rf"(?:(?P<cur1>ca\$|mx\$|us\$|[$€£]|\b(?:usd|cad|eur|gbp|mxn)\b)\s?)?"
    rf"(?P<num>{_NUMBER}|\b(?:{_WORD_NUMBER})\b)"
    rf"(?:\s?(?:[-–]|to|bis)\s?(?P<num2>{_NUMBER}))?"
    rf"(?:(?:\s|-)?(?P<unit>%|(?:{'|'.join(sorted((u for u in UNITS if u != '%'), key=len, reverse=True))})\b))?"
    rf"(?:\s?(?P<cur2>[€£$]|\b(?:usd|cad|eur|gbp|mxn)\b))?",
    re.IGNORECASE)
# Capitalised words that start no sentence are names: places, products, plans, carriers.
COMMON = frozenset("i i'm i've ok yes no".split())
ALIASES = {"uk": "kingdom", "gb": "britain", "us": "states", "usa": "states", "u.s": "states", "eu": "europe"}


def number(text: str) -> str:
    text = text.lower()
    if text in NUMBER_WORDS:
        return str(NUMBER_WORDS[text])
    return re.sub(r"[.,]00$", "", text).replace(",", ".")


def quantities(text: str) -> tuple[set[str], set[tuple[str, str]], set[tuple[str, str]]]:
    """Numbers, (number, unit) pairs and (currency, number) pairs of a text."""
    numbers, measures, amounts = set(), set(), set()
    for m in QUANTITY.finditer(text):
        values = [number(m.group("num"))] + ([number(m.group("num2"))] if m.group("num2") else [])
        numbers.update(values)
        unit = UNITS.get((m.group("unit") or "").lower())
        if unit:
            measures.update((v, unit) for v in values)
        currency = CURRENCIES.get((m.group("cur1") or m.group("cur2") or "").lower())
        if currency:
            amounts.update((currency, v) for v in values)
    return numbers, measures, amounts


TIME_UNITS = frozenset({"minute", "hour", "day", "week", "month", "year"})


def measured_kinds(text: str) -> set[str]:
    """The kinds of figure a text states (``asked.KINDS``): "duration" for a length of time ("10 days after
    delivery"), "amount" for money ("a $120 order")."""
    _, measures, amounts = quantities(text)
    kinds = {"amount"} if amounts else set()
    return kinds | {"duration"} if {u for _, u in measures} & TIME_UNITS else kinds


def names(text: str) -> set[str]:
    """Capitalised words that do not start a sentence (or a list item or line)."""
    out = set()
    for sentence in sentences_of(text):
        words = WORDS.findall(sentence)
        out.update(w for w in words[1:] if w[:1].isupper() and w.casefold() not in COMMON)
    return out


class FactsCheck(AnswerCheck):
    code = "ungrounded_facts"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        answer = CITATION_MARKER.sub("", evidence.answer)
        source = evidence.passages_text
        numbers, measures, amounts = quantities(answer)
        have_numbers, have_measures, have_amounts = quantities(source)
        missing = sorted(numbers - have_numbers)
        missing += [f"{n} {u}" for n, u in sorted(measures - have_measures) if n in have_numbers]
        missing += [f"{c} {n}" for c, n in sorted(amounts - have_amounts) if n in have_numbers]
        if evidence.locale != "de":  # every German noun is capitalised: names cannot be told apart
            known = {w.casefold() for w in WORDS.findall(f"{source}\n{evidence.question}\n{evidence.known_names}")}
            missing += sorted(w for w in names(answer)
                              if w.casefold() not in known and ALIASES.get(w.casefold()) not in known)
        if missing:
            return Refusal(self.code, ", ".join(missing)[:200])
        return None
