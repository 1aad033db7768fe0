"""Signatures: the answer-changing details of a question (numbers, ids, money, dates, places, tiers,
audiences, conditions, negation scope, comparatives, operations...), their field-by-field
difference, and the vetoes: the differences reliable enough to refuse a semantic hit whatever the
judge says ("transfers over 500" vs "over 1000", "can I" vs "can't I", "Canada" vs "Mexico")."""
from __future__ import annotations

import copy
import re
from functools import lru_cache

from caching.guards.lexicon import (
    _ACTION_VERBS, _AMBIGUOUS_TIERS, _AUDIENCE, _COMPARATIVE_WORDS, _CONDITIONS, _CURRENCY_SYMBOLS, _CURRENCY_WORDS,
    _FRAME, _FRAME_LEMMAS, _ID_HEADS, _IRREGULAR, _LIGHT, _LIGHT_LEMMAS, _MONTHS, _NEGATIONS, _NUMBER_WORDS,
    _OPERATIONS, _PLACE_BIGRAMS, _PLACES, _SIZE_WORDS, _STOP, _TIER_HEADS, _TIER_WORDS, _TIME_WORDS, _UNITS,
    _WEEKDAYS, _ASKS_ABOUT, _IMPERATIVE_MOOD, _asks_for_information, _MOOD_OBJECTS, _MOOD_OWN_OBJECTS, _MOOD_VERBS, _lemma, _normalise, _tokens, concept,
)

# 3: ``mood`` (a request for us to act, vetoed against a question about the same thing).
GUARDS_VERSION = "3"


# "one" as a pronoun ("this one", "which one", "can I get one?", "need one when I travel") or in "at
# one time" (at once) counts nothing; "one card", "only one" are numbers.
_ONE_PRONOUN_BEFORE = frozenset("this that the which each every any no new other another right wrong same old current".split())
_ONE_PRONOUN_AFTER = frozenset(("of", "more", "another", "", "when", "because", "if", "and", "or", "but", "please"))


def _one_is_no_number(prev: str, nxt: str) -> bool:
    return nxt in _ONE_PRONOUN_AFTER or prev in _ONE_PRONOUN_BEFORE or (prev == "at" and nxt == "time")


def _numbers_and_money(tokens: list[str]) -> tuple[set, set, set, set, set]:
    numbers, money, ids, sizes, times = set(), set(), set(), set(), set()
    n = len(tokens)
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i > 0 else ""
        nxt = tokens[i + 1] if i + 1 < n else ""
        if tok in _NUMBER_WORDS and not (tok == "one" and _one_is_no_number(prev, nxt)):
            tok = _NUMBER_WORDS[tok]
        # clock times: 7pm, 7:30 pm, 19:00
        m = re.fullmatch(r"(\d{1,2})(?::(\d{2}))?(am|pm)", tok)
        if m or (re.fullmatch(r"\d{1,2}(?::\d{2})?", tok) and nxt in ("am", "pm")):
            times.add(tok if m else tok + nxt)
            continue
        if re.fullmatch(r"\d{1,2}:\d{2}", tok):
            times.add(tok)
            continue
        if re.fullmatch(r"\d+(?:\.\d+)?", tok):
            if len(tok) > 1 and tok.isdigit() and len(tok) < 5:
                tok = tok.lstrip("0") or "0"  # "05" is 5; long zero-padded ids keep their form
            numbers.add(tok)
            cur = _CURRENCY_SYMBOLS.get(prev) or (_CURRENCY_WORDS.get(nxt) if nxt else None)
            if cur:
                money.add(f"{tok} {cur}")
            unit = _UNITS.get(nxt)
            if unit and not cur:
                sizes.add(f"{tok} {unit}")
            if prev in _ID_HEADS or prev in ("#", "number", "no", "num") and len(tok) >= 3:
                ids.add(tok)
            elif len(tok) >= 5 and "." not in tok and not re.fullmatch(r"(19|20)\d\d", tok):
                ids.add(tok)
            if prev == "size":
                sizes.add(f"size {tok}")
            continue
        if re.fullmatch(r"(?=[a-z]*\d)(?=\d*[a-z])[a-z0-9]{2,}", tok):
            m2 = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]+)", tok)
            if m2 and m2.group(2) in _UNITS:
                sizes.add(f"{m2.group(1)} {_UNITS[m2.group(2)]}")
                numbers.add(m2.group(1))
            elif m2 and m2.group(2) in ("st", "nd", "rd", "th"):
                numbers.add(m2.group(1))
            else:
                ids.add(tok)
                numbers.update(re.findall(r"\d+", tok))
            continue
        if prev == "size" and tok.isalpha():
            sizes.add(f"size {tok}")
    return numbers, money, ids, sizes, times


_WORD_OR_STOP = re.compile(r"[^\W\d_][\w'+-]*|[.?!]")  # letters of any script: "Rückgabe" is one word


def _proper_nouns(question: str) -> set[str]:
    """Capitalised words that are not sentence-initial (product names, brands, places)."""
    out = set()
    words = _WORD_OR_STOP.findall(question)
    start = True
    for w in words:
        if w in ".?!":
            start = True
            continue
        if not start and w != "I" and (w[0].isupper() or (len(w) > 1 and any(c.isupper() for c in w[1:]) and w.lower() != w)):
            low = w.lower().strip("'")
            if low not in _STOP and low not in _TIER_WORDS and low not in _WEEKDAYS and low not in _MONTHS:
                out.add(low)
        start = False
    return out


def _roles(tokens: list[str]) -> set[str]:
    """Directional roles: the content word after from/to/into ("from savings", "to checking")."""
    out = set()
    skip = _STOP | {"new", "another", "other", "different"}
    for i, tok in enumerate(tokens):
        if tok not in ("from", "to", "into", "onto"):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j] in skip:
            j += 1
        if j >= len(tokens) or j - i > 3:
            continue
        nxt = tokens[j]
        if nxt in _ACTION_VERBS or nxt in _LIGHT or nxt in _FRAME or not nxt.isalpha():
            continue
        if i > 0 and tokens[i - 1] in ("how", "want", "need", "like", "able", "going", "have", "used", "way", "possible", "allowed", "eligible", "due", "supposed", "plan", "ways"):
            continue
        role = "to" if tok in ("to", "into", "onto") else "from"
        out.add(f"{role}:{concept(nxt)}")
    return out


def _content_terms(tokens: list[str], skip_words: set[str]) -> set[str]:
    terms = set()
    for tok in tokens:
        if not tok.isalpha() or tok in _STOP or tok in _FRAME or tok in _LIGHT or tok in skip_words:
            continue
        if _lemma(tok) in _FRAME_LEMMAS or _lemma(tok) in _LIGHT_LEMMAS:
            continue
        if tok.startswith("CMP") or tok in _NEGATIONS or tok in _COMPARATIVE_WORDS:
            continue
        c = concept(tok)
        if c in _FRAME or c in _LIGHT or c in _STOP or len(c) < 2:
            continue
        terms.add(c)
    return terms


_LINK_BREAKS = frozenset("""
and or but if when while because so although though whereas
include includes included including cover covers covered contain contains require requires required
""".split())


@lru_cache(maxsize=1)
def _operation_concepts() -> frozenset[str]:
    return frozenset(concept(w) for w in _OPERATIONS)


def _links(tokens: list[str]) -> set[str]:
    """Unordered pairs of neighbouring content words inside one clause ("human metate",
    "ceremonial figures", "room rate"): which word modifies which. Clauses end at conjunctions
    and known verbs, so moving a whole phrase around a verb ("breakfast included in the room
    rate" vs "room rate includes breakfast") keeps the links, while swapping modifiers or names
    ("human metate ... ceremonial figures" vs "ceremonial metate ... human figures") does not."""
    links = set()
    seq: list[str] = []
    for tok in tokens + ["and"]:
        c = concept(tok) if tok.isalpha() else ""
        if tok in _LINK_BREAKS or c in _operation_concepts() or tok in _ACTION_VERBS or tok in _MAIN_LIGHT_VERBS:
            links.update("|".join(sorted((a, b))) for a, b in zip(seq, seq[1:]) if a != b)
            seq = []
            continue
        if not tok.isalpha() or tok in _STOP or tok in _FRAME or tok in _LIGHT or tok in _NEGATIONS:
            continue
        if tok in _COMPARATIVE_WORDS or _lemma(tok) in _FRAME_LEMMAS or _lemma(tok) in _LIGHT_LEMMAS:
            continue
        if c in _FRAME or c in _LIGHT or c in _STOP or len(c) < 2:
            continue
        if not seq or seq[-1] != c:
            seq.append(c)
    return links


_MAIN_LIGHT_VERBS = frozenset("work works working get gets got getting use using make makes made making take takes took taking bring brings brought find finds found see sees saw put puts give gives gave keep keeps kept accept accepts accepted accepting".split())
_VERB_CLASS = {"tak": "accept", "take": "accept", "accept": "accept"}
_FIRST = frozenset("i me we us".split())
_SECOND = frozenset("you".split())
_POSSESSIVE = {"my": "1", "our": "1", "mine": "1", "your": "2", "yours": "2"}


def _persons(tokens: list[str]) -> tuple[set[str], set[str]]:
    """Who does what to whom: the order in which the customer (1) and the company (2) appear as
    pronouns ("should I call you" 1>2 vs "do you call me" 2>1), and who owns which noun
    ("my name" 1:name vs "your name" 2:name)."""
    order = []
    for tok in tokens:
        p = "1" if tok in _FIRST else "2" if tok in _SECOND else None
        if p and (not order or order[-1] != p):
            order.append(p)
    persons = {">".join(order[:3])} if len(order) >= 2 else set()
    owned = set()
    for i, tok in enumerate(tokens):
        if tok in _POSSESSIVE:
            for nxt in tokens[i + 1:i + 3]:
                if nxt.isalpha() and nxt not in _STOP:
                    owned.add(f"{_POSSESSIVE[tok]}:{concept(nxt)}")
                    break
    return persons, owned


def _mood(norm: str) -> set[str]:
    """``{"imperative"}`` when the message tells us to do something ("Cancel my order.", "send me the
    invoice", "can you rotate the key"), else empty: a question about doing it ("how do I cancel my
    order?") wants instructions, and an answer for one is wrong for the other."""
    m = _IMPERATIVE_MOOD.match(norm)
    if not m or m.group(2) not in _MOOD_VERBS or (m.group(3) in ("me", "us") and m.group(4) in _ASKS_ABOUT):
        return set()
    if _asks_for_information(m.group(2), norm[m.end(2):].split()):  # "share the nutrition info": a question, no act
        return set()
    return {"imperative"} if m.group(3) in (_MOOD_OWN_OBJECTS if m.group(1) else _MOOD_OBJECTS) else set()


def _signature(question: str, norm: str, tokens: list[str]) -> dict:
    numbers, money, ids, sizes, times = _numbers_and_money(tokens)
    tokset = set(tokens)
    dates, time_words, places, tiers, audience, conditions = set(), set(), set(), set(), set(), set()
    negations, comparatives, operations = set(), set(), set()
    n = len(tokens)
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i > 0 else ""
        nxt = tokens[i + 1] if i + 1 < n else ""
        if tok in _MONTHS or (tok == "may" and (re.fullmatch(r"\d{1,2}(st|nd|rd|th)?", nxt) or re.fullmatch(r"\d{1,2}(st|nd|rd|th)?", prev))):
            dates.add(f"month:{_MONTHS.get(tok, 5):02d}")
        if tok in _WEEKDAYS:
            dates.add(f"weekday:{_WEEKDAYS[tok]}")
        if re.fullmatch(r"(19|20)\d\d", tok):
            dates.add(f"year:{tok}")
        if tok in _TIME_WORDS:
            time_words.add(_TIME_WORDS[tok])
        if tok in _PLACES:
            places.add(tok)
        if tok in _TIER_WORDS:
            if tok not in _AMBIGUOUS_TIERS or nxt in _TIER_HEADS or (tok in ("member", "members", "membership", "loyalty")):
                tiers.add(_TIER_WORDS[tok])
        if tok in _AUDIENCE:
            audience.add(_AUDIENCE[tok])
        verb_use = tok in ("used", "lost", "delayed", "cancelled", "expired", "damaged", "opened", "installed", "assembled", "altered", "washed", "worn") and (
            prev in ("is", "are", "was", "were", "be", "been", "being", "get", "got", "gets", "have", "has", "had", "i", "we", "it", "they")
            or nxt in ("to", "for", "in", "by", "with", "at", "on", "it", "them", "my", "the"))
        if tok in _CONDITIONS and not verb_use:
            key, k = _CONDITIONS[tok], 2
            while key in conditions:  # counted: "expired ... expired" is not "expired"
                key, k = f"{_CONDITIONS[tok]}#{k}", k + 1
            conditions.add(key)
        if tok == "free" and "free" not in tiers:
            conditions.add("free")
        if tok in _NEGATIONS:
            # scope: the next word that is not a function word ("do not refund" -> not:refund);
            # counted, so a double negation still differs from none
            j = i + 1
            while j < n and (tokens[j] in _STOP or tokens[j] in _NEGATIONS):
                j += 1
            scope = concept(tokens[j]) if j < n and tokens[j].isalpha() else ""
            key = f"{_NEGATIONS[tok]}:{scope}"
            k = 2
            while key in negations:
                key = f"{_NEGATIONS[tok]}:{scope}#{k}"
                k += 1
            negations.add(key)
        if tok.startswith("CMP"):
            comparatives.add(tok[3:])
        elif tok in _COMPARATIVE_WORDS:
            kind = _COMPARATIVE_WORDS[tok]
            if kind in ("gt", "lt") and tok not in ("within", "beyond", "exceed", "exceeds", "exceeding"):
                # "over the phone", "under warranty": only a comparison next to a quantity
                window = tokens[i + 1:i + 4]
                if not any(re.fullmatch(r"[\d$€£¥]|\d[\d.,]*|" + "|".join(_NUMBER_WORDS), w) for w in window) and not any(w in _NUMBER_WORDS or w in ("a", "an") and False for w in window):
                    continue
            comparatives.add(kind)
        c = concept(tok)
        if c in _operation_concepts() and tok not in _CONDITIONS:
            operations.add(c)
    for bg in _PLACE_BIGRAMS:
        if bg in norm:
            places.add(bg.replace(" ", "_"))
    if "weekday:saturday" in dates and "weekday:sunday" in dates:
        dates -= {"weekday:saturday", "weekday:sunday"}
        time_words.add("weekend")
    # Attach numbers to comparatives so "over 500" and "over 1000" differ even if numbers agree.
    products = _proper_nouns(question) - places - set(_MONTHS) - set(_WEEKDAYS)
    for num in numbers:
        for p in list(products):
            if re.search(rf"\b{re.escape(p)} {re.escape(num)}\b", norm):
                products.add(f"{p} {num}")
    # Words already captured by a typed field are not repeated as plain content terms, so a
    # difference is reported once, in the most specific field.
    typed_words = set()
    for tok in tokens:
        if tok in _MONTHS or tok in _WEEKDAYS or tok in _TIME_WORDS or tok in _PLACES or tok in _NUMBER_WORDS:
            typed_words.add(tok)
        if tok in _TIER_WORDS and _TIER_WORDS[tok] in tiers:
            typed_words.add(tok)
        if tok in _AUDIENCE or tok in _CONDITIONS or tok in _SIZE_WORDS and tok in ("xs", "xl", "xxl"):
            typed_words.add(tok)
        if tok in _CURRENCY_WORDS:
            typed_words.add(tok)
    for i, tok in enumerate(tokens):
        if tok in _UNITS and i > 0 and re.fullmatch(r"\d+(?:\.\d+)?", tokens[i - 1]) and tok not in (
                "day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours"):
            typed_words.add(tok)
    terms = _content_terms(tokens, typed_words)
    for sz in _SIZE_WORDS:
        if sz in tokset and (sz in ("xs", "xxs", "xl", "xxl", "xxxl", "2xl", "3xl") or "size" in tokset or "sizes" in tokset):
            sizes.add(_SIZE_WORDS[sz])
    persons, owners = _persons(tokens)
    sig = {
        "numbers": numbers, "money": money, "ids": ids, "dates": dates, "times": times,
        "time_words": time_words, "places": places, "products": products, "sizes": sizes,
        "tiers": tiers, "audience": audience, "conditions": conditions, "negations": negations,
        "comparatives": comparatives, "operations": operations, "roles": _roles(tokens),
        "particles": {t for t in tokens if t in ("up", "down")},
        "persons": persons, "owners": owners,
        "verbs": {_VERB_CLASS.get(_IRREGULAR.get(t) or _lemma(t), _IRREGULAR.get(t) or _lemma(t)) for t in tokens if t in _MAIN_LIGHT_VERBS}
        | {"have" for i, t in enumerate(tokens) if t == "have" and i > 0 and tokens[i - 1] in ("can", "could", "may", "to", "someone", "i", "we")
           and i + 1 < len(tokens) and tokens[i + 1] in ("a", "an", "the", "my", "some", "more", "multiple", "two", "another")},
        "terms": terms, "links": _links(tokens), "mood": _mood(norm), "version": {GUARDS_VERSION},
    }
    return {k: sorted(v) for k, v in sig.items()}



# Fields compared strictly: any difference means a different answer.
# ``products`` (capitalised names) is recorded for the decision record but not compared: it depends
# on the customer's capitalisation, and the names themselves are content terms, which must align.
SIGNATURE_FIELDS: tuple[str, ...] = (
    "numbers", "money", "ids", "dates", "times", "time_words", "places", "sizes",
    "tiers", "audience", "conditions", "negations", "comparatives", "operations", "roles",
    "particles", "persons", "owners", "verbs",
)


# Fields that say what a question is about (a question with none of them is too vague to share).
_CONTENT_FIELDS = ("terms", "numbers", "money", "ids", "dates", "times", "time_words", "places", "products",
                   "sizes", "tiers", "audience", "conditions", "operations")


def signature_difference(cached: dict, new: dict) -> dict | None:
    """None when the two signatures are compatible, else ``{field: {"cached": [...only in
    cached], "new": [...only in new]}}`` for every field that differs."""
    diff: dict = {}
    for field in SIGNATURE_FIELDS:
        a, b = set(cached.get(field, ())), set(new.get(field, ()))
        if a != b:
            diff[field] = {"cached": sorted(a - b), "new": sorted(b - a)}
    for field in ("persons", "owners", "verbs"):
        # compared only where both questions say it: "my name" vs "your name", "I call you" vs
        # "you call me"; one side without pronouns ("reset password") is no conflict
        if field in diff:
            a, b = set(cached.get(field, ())), set(new.get(field, ()))
            if field in ("persons", "verbs") and not (a and b):
                del diff[field]
            elif field == "owners":
                own_a = {x.split(":", 1)[1]: x.split(":", 1)[0] for x in a}
                own_b = {x.split(":", 1)[1]: x.split(":", 1)[0] for x in b}
                if not any(k in own_b and own_b[k] != v for k, v in own_a.items()):
                    del diff[field]
    if "roles" in diff:
        # A role only on one side ("export to csv" vs "export") is not a conflict by itself;
        # the same direction with a different object, or the same object in the other
        # direction, is.
        a, b = set(cached.get("roles", ())), set(new.get("roles", ()))
        conflict = False
        for ra in a:
            d1, o1 = ra.split(":", 1)
            for rb in b:
                d2, o2 = rb.split(":", 1)
                if (d1 == d2) != (o1 == o2):
                    conflict = True
        if not conflict:
            del diff["roles"]
    return diff or None



@lru_cache(maxsize=8192)
def parsed(question: str) -> tuple[str, tuple[str, ...], dict]:
    """``(normalised text, tokens, signature)`` of a question, remembered."""
    norm = _normalise(question)
    tokens = _tokens(norm)
    return norm, tuple(tokens), _signature(question, norm, tokens)


def signature(question: str) -> dict[str, list[str]]:
    """The answer-changing details of a question, as sorted lists (JSON-serialisable, stable)."""
    return copy.deepcopy(parsed(question)[2])


# Vetoes ------------------------------------------------------------------------------

# Fields where any difference changes the answer, reliably enough to refuse a hit on its own:
# "order 4417" / "4471", "$500" / "$1000", "in May" / "in June", "to Canada" / "to Mexico",
# "premium plan" / "basic plan", "for children" / "for adults", "opened" / "unopened" items.
VETO_FIELDS: tuple[str, ...] = (
    "numbers", "money", "ids", "dates", "times", "time_words", "places", "sizes", "tiers", "audience", "conditions",
    "mood",  # "cancel my order" asks us to act, "how do I cancel my order?" for instructions
)
# Comparatives are vetoes only when either question has a quantity to compare: "over 500",
# "at least 2 bags", "after 6pm"; not "the minimum order for free shipping" or "after placing it".
_QUANTITY_FIELDS = ("numbers", "money", "sizes", "dates", "times", "time_words")
# Negation scope: the count of plain negations (parity: "not" vs none; "not ... not" is two), and
# the exception words, which restrict what the answer covers.
_POLARITY = frozenset({"not"})
_EXCEPTIONS = frozenset({"without", "except", "unless", "instead"})
# Answer types that never share an answer: what something costs is not how long it takes, when it
# is open or where it is.
_ANSWER_TYPE_CLASHES = frozenset({frozenset(p) for p in (
    ("pricing", "duration"), ("pricing", "schedule"), ("pricing", "location"), ("location", "schedule"),
    ("duration", "location"),
)})


def _negation_kinds(sig: dict) -> tuple[int, set[str]]:
    kinds = [n.split(":", 1)[0] for n in sig.get("negations", ())]
    return sum(k in _POLARITY for k in kinds) % 2, {k for k in kinds if k in _EXCEPTIONS}


def vetoes(cached: dict, new: dict, intents: tuple[str, str] | None = None, products: bool = True) -> dict | None:
    """The reliable differences between two signatures (``{field: {"cached": [...], "new": [...]}}``),
    or None. Unlike ``signature_difference`` it leaves out what paraphrases change freely (operations,
    roles, pronouns, content words): the judge weighs those. ``products=False`` where capitals do not
    mark names (German capitalises every noun)."""
    diff: dict = {}
    for field in VETO_FIELDS:
        a, b = set(cached.get(field, ())), set(new.get(field, ()))
        if a != b:
            diff[field] = {"cached": sorted(a - b), "new": sorted(b - a)}
    a, b = set(cached.get("comparatives", ())), set(new.get("comparatives", ()))
    if a != b and any(cached.get(f) or new.get(f) for f in _QUANTITY_FIELDS):
        diff["comparatives"] = {"cached": sorted(a - b), "new": sorted(b - a)}
    (pa, ea), (pb, eb) = _negation_kinds(cached), _negation_kinds(new)
    if pa != pb or ea != eb:
        diff["negations"] = {"cached": sorted(cached.get("negations", ())), "new": sorted(new.get("negations", ()))}
    pa, pb = set(cached.get("products", ())), set(new.get("products", ()))
    if products and pa and pb and not pa & pb:  # two named products ("Apple Pay" / "Google Pay"); one side lower-case is no proof
        diff["products"] = {"cached": sorted(pa), "new": sorted(pb)}
    if intents and frozenset(intents) in _ANSWER_TYPE_CLASHES:
        diff["answer_type"] = {"cached": [intents[0]], "new": [intents[1]]}
    return diff or None
