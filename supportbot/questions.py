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
