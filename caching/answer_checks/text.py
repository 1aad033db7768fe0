"""Words, sentences and negations, shared by the answer checks and the extractive answerer."""
from __future__ import annotations

import re

STEM_CHARS = 5  # words are compared by their first letters: "liefern" ~ "liefert", "returns" ~ "return"
WORDS = re.compile(r"[^\W_]+", re.U)
STOPWORDS = frozenset("""
a an and are as at be can could did do does for from get got have has how i if in is it its me my of on or our
so the their them there this to us was we what when where which who why will with would you your yours hello hi
please thanks thank tell know want need much many long
aber als am an auch bei bin bis da das dass dem den der des die doch du ein eine einem einen einer es für gibt
hallo habe haben hat ich ihr ihre im in ist ja kann können man mein meine mir mit nach noch nun oder sie sind so
und uns von vor was wann warum was welche wer wie wieviel wir wo zu zum zur bitte danke lange viel
""".split())
# A sentence ends at . ! ? before a space and a capital, digit or quote, unless the word before
# the stop is an abbreviation ("2:00 p.m. Mountain Time", "Washington, D.C. and", "z. B. Kanada").
_BOUNDARY = re.compile(r"(?<=[.!?])[\"”')\]]?\s+(?=[\"“'(\[]?[A-ZÄÖÜ0-9])")
_ABBREVIATION = re.compile(
    r"(?:\b(?:a\.m|p\.m|e\.g|i\.e|etc|approx|incl|no|nr|mr|mrs|ms|dr|st|vs|ca|bzw|inkl|usw|ggf|evtl|z\.\s?b|d\.\s?h"
    r"|u\.\s?a|s\.\s?o|mo|di|mi|do|fr|sa|so)|\b[A-Z](?:\.[A-Z])*|\d)\.$",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"\b(?:not|never|cannot|can't|don't|doesn't|won't|isn't|aren't|wasn't|weren't|couldn't|shouldn't|unable|"
    r"no\s+longer|there\s+(?:is|are)\s+no|nicht|kein\w*|nie|niemals|ausgeschlossen)\b|n't\b", re.IGNORECASE)
CITATION_MARKER = re.compile(r"\s?\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")


def split_sentences(paragraph: str) -> list[str]:
    """The sentences of a paragraph (abbreviations and decimal points do not end one)."""
    sentences, start = [], 0
    for m in _BOUNDARY.finditer(paragraph):
        head = paragraph[start:m.start()].rstrip("\"”')] ")
        if _ABBREVIATION.search(head.split(" ")[-1] if head else ""):
            continue
        sentences.append(paragraph[start:m.start()].strip())
        start = m.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


def sentences_of(text: str) -> list[str]:
    """Sentences of a whole text: lines (list items, headings) and then sentences within them."""
    out = []
    for line in text.split("\n"):
        line = re.sub(r"^\s*(?:[-*+•#]+|\d{1,3}[.)])\s*", "", line).replace("**", "").strip()
        if line:
            out.extend(split_sentences(line))
    return out


_SUFFIX = re.compile(r"(?:ing|ed|es|en|er|s|e|n)$")
_DOUBLED = re.compile(r"([^aeiouäöü])\1$")


def stem(word: str) -> str:
    """A crude stem: "shipped", "shipping", "ships" -> "ship"; "liefern", "liefert" -> "liefe"."""
    if len(word) > 4 and not word.isdigit():
        word = _DOUBLED.sub(r"\1", _SUFFIX.sub("", word))
    return word[:STEM_CHARS]


# A name made of everyday words is one word of its own: "American Express" is a card, and says nothing of an express
# delivery (twenty-first session: "how much is express shipping in Mexico?" was answered, and cached, with the Mexico
# store's list of cards)
_NAMES_OF_WORDS = ((re.compile(r"\bamerican\s+express\b"), "amex"),)


def terms(text: str) -> set[str]:
    """The content words of a text by their stems (stopwords of English and German left out)."""
    text = text.casefold()
    for pattern, name in _NAMES_OF_WORDS:
        text = pattern.sub(name, text)
    return {stem(w) for w in WORDS.findall(text) if w not in STOPWORDS and (len(w) > 2 or w.isdigit())}


def name_terms(text: str) -> set[str]:
    """The stems of a text's capitalised words after its first (names: places, products, plans)."""
    words = WORDS.findall(text)
    return {stem(w.casefold()) for w in words[1:] if w[:1].isupper() and w.casefold() not in STOPWORDS}


def negated(sentence: str) -> bool:
    return bool(NEGATION.search(sentence))


VERSION = [NEGATION.pattern, [p.pattern for p, _ in _NAMES_OF_WORDS]] + [
    STEM_CHARS, _SUFFIX.pattern, sorted(STOPWORDS), _BOUNDARY.pattern, _ABBREVIATION.pattern]
