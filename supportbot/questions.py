"""Validation and normalisation of a customer's question."""
from __future__ import annotations

import re
import unicodedata

from django.conf import settings


class AskRejected(Exception):
    """Bad input: the caller gets ``status`` with a clear message and nothing is stored."""

    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


_SPACE = re.compile(r"\s+")
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # the ASCII characters of category Cc
_TRAILING_PUNCTUATION = "?!.。？！,;:…"  # dropped from the end with any whitespace among them


def clean_question(raw) -> str:
    """The question as the customer meant it: validated, control characters removed."""
    if not isinstance(raw, str):
        raise AskRejected("invalid_question", "question must be a string")
    if len(raw) > settings.ASK_MAX_QUESTION_CHARS * 4:
        raise AskRejected("question_too_long", f"question is longer than {settings.ASK_MAX_QUESTION_CHARS} characters")
    if raw.isascii():  # the common case, without a pass over every character in Python
        if "\x00" in raw:
            raise AskRejected("invalid_question", "question contains binary data")
        text = raw if raw.isprintable() else _ASCII_CONTROL.sub(" ", raw)  # printable ASCII: no control characters
    else:
        text = unicodedata.normalize("NFC", raw)
        if "\x00" in text or any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            raise AskRejected("invalid_question", "question contains binary data")
        text = "".join(" " if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)
    text = _collapse_spaces(text)
    if not text:
        raise AskRejected("empty_question", "question is empty")
    if len(text) > settings.ASK_MAX_QUESTION_CHARS:
        raise AskRejected("question_too_long", f"question is longer than {settings.ASK_MAX_QUESTION_CHARS} characters")
    if not any(c.isalnum() for c in text):
        raise AskRejected("invalid_question", "question has no letters or digits")
    return text


# Chat shorthand customers type, written out as the help centre writes it ("how many ppl" -> "how many people", German
# "zu teuer is" -> "zu teuer ist"): every later step (the conversation's rules, guards, keys, retrieval, the subject
# check) reads the written-out words, so a shorthand is neither a subject the help centre never states nor a second
# exact key for the same question. Only words that are shorthand and nothing else in the locale's language ("u" is
# no English word; "ill" and German "ne" are, so they stay).
SHORTHAND = {
    "en": {"u": "you", "ur": "your", "ppl": "people", "pls": "please", "plz": "please", "thx": "thanks",
           "thnx": "thanks", "tmrw": "tomorrow", "tmr": "tomorrow", "rn": "right now", "bc": "because",
           "cuz": "because", "coz": "because", "abt": "about", "b4": "before", "msg": "message", "acct": "account",
           "pwd": "password", "pw": "password", "wanna": "want to", "gonna": "going to", "dunno": "don't know",
           "idk": "I don't know", "yr": "year", "yrs": "years", "hrs": "hours", "hr": "hour", "mins": "minutes",
           "wks": "weeks", "im": "I'm", "ive": "I've", "dont": "don't", "doesnt": "doesn't", "didnt": "didn't",
           "cant": "can't", "isnt": "isn't", "wasnt": "wasn't", "havent": "haven't", "wouldnt": "wouldn't",
           "couldnt": "couldn't", "w/": "with", "w/o": "without"},
    "de": {"is": "ist", "nich": "nicht", "nen": "einen", "gibts": "gibt es", "grad": "gerade", "evtl": "eventuell",
           "vllt": "vielleicht"},
}
# a shorthand as a whole word: not part of a longer token ("U-lock", "U.S.", "w/o" inside a URL)
_SHORTHAND_WORD = {lang: re.compile(r"(?<![\w'’./@-])(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True))
                                    + r")(?![\w'’/@-])(?!\.\w)", re.IGNORECASE)
                   for lang, words in SHORTHAND.items()}


def spelled_out(text: str, locale: str) -> str:
    """A customer's message with its chat shorthand written out (``SHORTHAND``); other text as it is."""
    language = locale.split("-")[0]
    pattern = _SHORTHAND_WORD.get(language)
    if pattern is None:
        return text
    words = SHORTHAND[language]

    def written(m: re.Match) -> str:
        typed = m.group(1)
        if len(typed) == 2 and typed.isupper() and not text.isupper():
            return typed  # two capitals are a code ("Vancouver BC"), not chat shorthand ("bc": because)
        out = words[typed.casefold()]
        return out[:1].upper() + out[1:] if typed[:1].isupper() and (len(typed) > 1 or m.start() == 0) else out

    return pattern.sub(written, text)


def normalize_question(text: str) -> str:
    """NFKC, case-folded, whitespace collapsed, trailing punctuation dropped: the exact-cache form."""
    text = _collapse_spaces(unicodedata.normalize("NFKC", text).casefold())
    # the run of whitespace and closing punctuation at the end, by rstrip (a regular expression
    # anchored at the end still tries every position of the question)
    while True:
        stripped = text.rstrip().rstrip(_TRAILING_PUNCTUATION)
        if len(stripped) == len(text):
            return text
        text = stripped


def _collapse_spaces(text: str) -> str:
    """Runs of whitespace as one space, none at either end. Printable text has no whitespace but the
    space (str.isprintable), so without a double space there is nothing to collapse."""
    if "  " in text or not text.isprintable():
        text = _SPACE.sub(" ", text)
    return text.strip()
