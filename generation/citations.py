"""Turn the model's raw text into an answer with citations to the passages it was given.

Citations are only ever resolved to passages of this request: a marker with a
number that was not given (``[7]`` with four passages, or a number injected by
a hostile article) is stripped, never shown. A small model often forgets the
markers; then the passages whose words the answer shares most are cited, but
only when the overlap is real (several distinctive words), and
``cited_explicitly`` is False so callers can tell the difference.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from generation.base import Passage
from generation.prompt import NOT_COVERED, NOT_COVERED_MARKER


@dataclass
class ParsedAnswer:
    text: str  # answer text with citation markers kept as [n] and sanitized (no raw unknown markers)
    citations: list[Passage] = field(default_factory=list)  # resolved, deduplicated, in order of first use
    cited_explicitly: bool = False  # True if the model wrote [n] markers itself
    not_covered: bool = False  # the model said the passages don't cover it


# [1]  [1, 2]  [1][2]  [1-3]  [Passage 2]  [passages 1 and 3]
_NUM = r"(?:passages?\s*)?\d{1,3}"
_MARKER = re.compile(
    r"\s?\[\s*(" + _NUM + r"(?:\s*(?:,|;|&|and|und|et|-|–)\s*" + _NUM + r")*)\s*\]",
    re.IGNORECASE,
)
_RANGE = re.compile(r"(\d{1,3})\s*[-–]\s*(?:passages?\s*)?(\d{1,3})", re.IGNORECASE)
_DIGITS = re.compile(r"\d{1,3}")
_MAX_RANGE = 20

# Upper case only ("NOT_COVERED", "NOT COVERED"): "damage is not covered" is an answer.
_NOT_COVERED_MARK = re.compile(r"\b" + re.escape(NOT_COVERED_MARKER).replace("_", "[_ ]") + r"\b")
_REFUSALS = re.compile(
    r"|".join([
        r"\bI\s+(?:do\s+not|don'?t|cannot|can'?t|could\s+not|couldn'?t)\s+(?:know|find|answer|help\s+with|provide|say)\b",
        r"\bI(?:'m|\s+am)\s+(?:sorry|afraid)[,.]?\s+(?:but\s+)?I\s+(?:do\s+not|don'?t|cannot|can'?t|could\s+not|couldn'?t|am\s+unable|'m\s+unable)\b",
        r"\bI\s+(?:am|'m)\s+(?:unable|not\s+able)\s+to\s+(?:answer|find|help|provide)\b",
        r"\b(?:the\s+)?(?:passages?|context|provided\s+(?:text|information|documents?)|help\s*cent(?:re|er)(?:\s+articles?)?|articles?)"
        r"\s+(?:do(?:es)?\s+not|don'?t|doesn'?t)\s+(?:cover|contain|mention|include|say|provide|address|answer|specify)\b",
        r"\bno\s+(?:relevant\s+)?information\s+(?:about|on|regarding|in\s+the\s+passages?)\b",
        r"\b(?:is|are)\s+not\s+(?:mentioned|covered|addressed|specified)\s+in\s+(?:the\s+)?(?:passages?|context|provided)\b",
        r"\bthere\s+is\s+no\s+(?:mention|information)\b",
    ]),
    re.IGNORECASE,
)
_ANSWER_LABEL = re.compile(r"^\s*(?:answer|a)\s*:\s*", re.IGNORECASE)
# Where a small model stops answering and starts writing the prompt's structure again.
_RUNAWAY = re.compile(
    r"<\s*/?\s*(?:passage|question|previous_answer)\b|<\|im_start\|>|^\s*(?:question|passages)\s*:",
    re.IGNORECASE | re.MULTILINE,
)
_CONTROL = re.compile(r"<\|[^|>]{0,40}\|>")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be because been before being below between both but by
can could did do does doing don down during each few for from further had has have having he her here hers him his
how i if in into is it its itself just let me more most my no nor not now of off on once only or other our ours out
over own same she should so some such than that the their theirs them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you your yours yes
please thank thanks hello hi sorry help need want like get got make made may might must shall us one two per via
answer question passage passages cite see according
der die das und oder ist sind ein eine einen einem einer nicht mit von zu zum zur im in auf für bei wir sie ihr ihre
es den dem des als auch wie kann können sich wenn aus bis nach oder
le la les et ou est sont un une des du de au aux en pour par avec sur dans nous vous il elle ne pas que qui
""".split())
_MIN_SHARED = 2
_MAX_SHARED_NEEDED = 6
_SHARE_OF_ANSWER = 0.2
_NEAR_BEST = 0.75
_MAX_INFERRED = 3


def parse_answer(text: str, passages: list[Passage]) -> ParsedAnswer:
    """Resolve citations against the given passages only and detect "not covered" answers."""
    by_number = {p.number: p for p in passages}
    raw = text or ""
    runaway = _RUNAWAY.search(raw)
    if runaway:
        raw = raw[: runaway.start()]
    raw = _CONTROL.sub("", raw)
    if _NOT_COVERED_MARK.search(raw):
        return ParsedAnswer(text=NOT_COVERED, citations=[], cited_explicitly=False, not_covered=True)

    cited: list[int] = []

    def resolve(match: re.Match) -> str:
        numbers = _marker_numbers(match.group(1))
        valid = [n for n in numbers if n in by_number]
        for n in valid:
            if n not in cited:
                cited.append(n)
        if not valid:
            return ""
        lead = " " if match.group(0)[:1].isspace() else ""
        return lead + "".join(f"[{n}]" for n in dict.fromkeys(valid))

    body = _MARKER.sub(resolve, raw)
    body = _SPACE_BEFORE_PUNCT.sub(r"\1", _ANSWER_LABEL.sub("", body)).strip()

    if not body or (not cited and _REFUSALS.search(body)):
        return ParsedAnswer(text=NOT_COVERED, citations=[], cited_explicitly=False, not_covered=True)
    if cited:
        return ParsedAnswer(text=body, citations=[by_number[n] for n in cited], cited_explicitly=True)
    return ParsedAnswer(text=body, citations=infer_citations(body, passages), cited_explicitly=False)


def _marker_numbers(inner: str) -> list[int]:
    numbers: list[int] = []
    for match in _RANGE.finditer(inner):
        low, high = int(match.group(1)), int(match.group(2))
        if low <= high and high - low <= _MAX_RANGE:
            numbers.extend(range(low, high + 1))
    if numbers:
        rest = _RANGE.sub(" ", inner)
        numbers.extend(int(d) for d in _DIGITS.findall(rest))
        return numbers
    return [int(d) for d in _DIGITS.findall(inner)]


def _terms(text: str) -> set[str]:
    terms = set()
    for word in _WORD.findall(text.casefold()):
        if word in _STOPWORDS or (len(word) < 3 and not word.isdigit()):
            continue
        terms.add(_stem(word))
    return terms


def _stem(word: str) -> str:
    if word.isdigit() or len(word) <= 4:
        return word
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def infer_citations(answer: str, passages: list[Passage]) -> list[Passage]:
    """Passages the answer demonstrably draws on, by shared distinctive words; [] without a real overlap."""
    answer_terms = _terms(answer)
    if not answer_terms or not passages:
        return []
    passage_terms = {p.number: _terms(f"{p.title}\n{p.text}") for p in passages}
    # Words every passage shares say little about which one was used.
    df: dict[str, int] = {}
    for terms in passage_terms.values():
        for term in terms & answer_terms:
            df[term] = df.get(term, 0) + 1
    total = len(passages)
    needed = min(_MAX_SHARED_NEEDED, max(_MIN_SHARED, math.ceil(_SHARE_OF_ANSWER * len(answer_terms))))

    scored = []
    for p in passages:
        shared = passage_terms[p.number] & answer_terms
        if len(shared) < needed:
            continue
        score = sum((2.0 if t.isdigit() else 1.0) * (1.0 + math.log((total + 1) / (df[t] + 0.5))) for t in shared)
        scored.append((score, -p.number, p))
    if not scored:
        return []
    scored.sort(reverse=True)
    best = scored[0][0]
    chosen = [p for score, _, p in scored if score >= _NEAR_BEST * best][:_MAX_INFERRED]
    return sorted(chosen, key=lambda p: p.number)
