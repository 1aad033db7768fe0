"""What a count question counts: "How many wishlists can I have?" counts wishlists, and a figure in the
answer is the count asked for only if it counts them. When the passages state the count of the asked
thing ("You can have up to 20 wishlists") and the answer states no figure of it, only another thing's
("the quantities are added together, up to a maximum of 10"), the answer is incomplete
(``completeness.CompletenessCheck``). Where the passages give no figure counting the asked thing by
name, nothing is refused: the check compares the answer with what the help centre itself says."""
from __future__ import annotations

import re

from caching.answer_checks.facts import _WORD_NUMBER
from caching.answer_checks.text import STOPWORDS, WORDS, stem

# "how many", "wie viele", "the (maximum) number of", "Anzahl der", then the counted thing's first word ("how many
# backup codes": "backup"; "whats the max number of rows": "rows").
_HOW_MANY = re.compile(r"\b(?:how many|wie viele|mit wie vielen|number of|anzahl(?: (?:der|an|von))?)\s+"
                       r"(?P<noun>[^\W\d_][\w-]*)", re.I)
# A figure, then up to two words before the counted thing ("2 active live keys", "up to 20 wishlists").
_FIGURE = re.compile(rf"(?<![\w.,])(?:\d+(?:,\d{{3}})*|{_WORD_NUMBER})\b((?:\s+[^\W\d_][\w-]*){{1,3}})", re.I)
# Words after "how many" that are no counted thing of their own ("how many more", "how many of my orders").
_NOT_A_THING = frozenset({"more", "of", "times", "other", "different", "weitere", "andere", "mal"})


# Things counted under another name in the articles: a file's "lines" are its "rows" (German "Zeilen" both)
_SAME_THING = {"line": "row", "entry": "row"}


def _key(word: str) -> str:
    word = word.casefold()
    if word == "entries":
        word = "entry"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return stem(_SAME_THING.get(word, word))


def counted_thing(question: str) -> str | None:
    """The key of the thing a count question counts ("wishlist"), or None when it names none."""
    m = _HOW_MANY.search(question)
    if m is None or m.group("noun").casefold() in _NOT_A_THING or m.group("noun").casefold() in STOPWORDS:
        return None
    return _key(m.group("noun"))


def counts(thing: str, text: str) -> bool:
    """Whether a text states a figure counting the thing ("up to **20 wishlists**")."""
    text = text.replace("**", "")
    for m in _FIGURE.finditer(text):
        if thing in {_key(w) for w in WORDS.findall(m.group(1))}:
            return True
    return False


def count_of_another_thing(question: str, answer: str, passages: str) -> str | None:
    """Why an answer to a count question is incomplete: the passages count the asked thing, the answer
    does not; None when it does, or when the passages count it nowhere by name."""
    thing = counted_thing(question)
    if thing is None or not counts(thing, passages) or counts(thing, answer):
        return None
    noun = _HOW_MANY.search(question).group("noun")
    return f"asks how many {noun}; the passages count them, the answer does not"
