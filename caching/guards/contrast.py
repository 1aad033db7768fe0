"""Contrasts: a serve-time veto on two questions that differ in one word that flips the answer.

Sentence embeddings, and a judge that reads them, put "can I return it **within** a month" next to
"can I return it **after** a month", "how do I **enable** two-factor" next to "how do I **disable**
two-factor" and "does it work on **Android**" next to "does it work on **iOS**": the rest of the words
agree, so the pair scores like a paraphrase. The signature's vetoes catch such a difference where a
quantity is compared ("within 30 days" / "after 30 days"), a place, a tier or a condition; this module
catches the rest, from general English:

* ``opposite``: one question says a word and the other its opposite, and neither says both
  (enable/disable, add/remove, import/export, first/last, minimum/maximum, domestic/international,
  allowed/forbidden, a negating prefix: available/unavailable, install/uninstall ...);
* ``relation``: opposite relations to the **same** thing (before/after shipping, within/after a
  week, over/under the limit, more/less data, to/from PayPal, inside/outside the EU): prepositions
  are common words ("over the phone", "under my name"), so only the same object makes them a
  contrast;
* ``entity``: each question names something of one kind that the other does not (Android/iOS,
  Visa/Amex, English/French, euros/dollars, red/blue, capitalised names: "Apple Pay"/"Google Pay");
* ``quantity``: different quantities that the signature does not read as numbers (thirteen/fourteen,
  a dozen/a hundred, half/a quarter, twice/three times, second/third).

Each is a swap: a word only one side says against a word only the other says. A word that only one
side adds ("within the EU?" against "in the EU?") is no contrast here; the judge weighs it.

It runs at serve time only (``judge._gate``, so a strict match, the judge and the ambiguity check all
see it), never in ``signature.vetoes``: those choose the judge's training pairs
(``modelbuild.judge_train.judge_sees``), and a change there would need a new judge.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections import Counter
from functools import cache, lru_cache

from caching.guards.judge_recipe import DATA_DIR
from caching.guards.lexicon import _CURRENCY_WORDS, _STOP, _lemma, concept
from caching.guards.signature import parsed

# --------------------------------------------------------------------------- word lists

# Opposites, by lemma (``lexicon._lemma``) or by concept (``lexicon.concept``: "remove" is the concept
# "delete", "activate" is "enable"). General English: a swap of either word for the other changes what
# is asked. Words that also serve as fillers or frames ("long" in "how long", "back" in "get back to
# me", "right" for "correct", "like" in "would like") are left out.
_OPPOSITE_PAIRS = [
    # operations
    ("enable", "disable"), ("add", "delete"), ("open", "close"), ("import", "export"), ("upload", "download"),
    ("deposit", "withdraw"), ("buy", "sell"), ("send", "receive"), ("lock", "unlock"), ("freeze", "unfreeze"),
    ("block", "unblock"), ("subscribe", "unsubscribe"), ("login", "logout"), ("connect", "disconnect"),
    ("install", "uninstall"), ("include", "exclude"), ("upgrade", "downgrade"), ("join", "leave"),
    ("pause", "resume"), ("encrypt", "decrypt"), ("attach", "detach"), ("archive", "unarchive"),
    ("mute", "unmute"), ("follow", "unfollow"), ("hide", "show"), ("link", "unlink"),
    ("increase", "decrease"), ("increase", "reduce"), ("raise", "reduce"), ("lend", "borrow"), ("push", "pull"),
    ("grant", "revoke"), ("approve", "reject"), ("approve", "deny"), ("accept", "reject"),
    ("accept", "decline"), ("accept", "refuse"), ("allow", "forbid"), ("allow", "prohibit"), ("allow", "ban"),
    ("allow", "deny"), ("allow", "prevent"), ("permit", "forbid"), ("permit", "prohibit"), ("start", "stop"),
    ("start", "end"), ("start", "finish"), ("begin", "end"), ("arrive", "depart"), ("enter", "exit"),
    ("win", "lose"), ("gain", "lose"), ("pass", "fail"), ("succeed", "fail"), ("success", "failure"),
    ("agree", "disagree"), ("check-in", "checkout"), ("checkin", "checkout"), ("pickup", "dropoff"),
    # states and kinds
    ("allowed", "forbidden"), ("allowed", "prohibited"), ("allowed", "banned"), ("permitted", "forbidden"),
    ("permitted", "prohibited"), ("mandatory", "optional"), ("required", "optional"), ("compulsory", "optional"),
    ("domestic", "international"), ("incoming", "outgoing"), ("inbound", "outbound"), ("credit", "debit"),
    ("physical", "virtual"), ("physical", "digital"), ("public", "private"), ("online", "offline"),
    ("temporary", "permanent"), ("manual", "automatic"), ("internal", "external"), ("input", "output"),
    ("partial", "full"), ("active", "inactive"), ("positive", "negative"), ("profit", "loss"),
    ("income", "expense"), ("buyer", "seller"), ("sender", "recipient"), ("sender", "receiver"),
    ("employer", "employee"), ("landlord", "tenant"), ("male", "female"), ("man", "woman"), ("boy", "girl"),
    ("uppercase", "lowercase"), ("ascending", "descending"), ("success", "fail"), ("true", "false"),
    ("safe", "dangerous"), ("hot", "cold"), ("warm", "cold"), ("full", "empty"), ("wet", "dry"),
    ("large", "small"), ("big", "small"), ("inside", "outside"), ("indoor", "outdoor"),
    ("top", "bottom"), ("north", "south"), ("east", "west"), ("upstairs", "downstairs"),
    ("arrival", "departure"), ("entrance", "exit"), ("beginning", "end"), ("beginner", "advanced"),
    ("basic", "advanced"), ("junior", "senior"), ("simple", "complex"),
    # order and degree
    ("first", "last"), ("next", "previous"), ("earliest", "latest"), ("early", "late"), ("earlier", "later"),
    ("highest", "lowest"), ("cheapest", "expensive"), ("cheaper", "expensive"), ("cheap", "expensive"),
    ("fastest", "slowest"), ("faster", "slower"), ("fast", "slow"), ("best", "worst"), ("better", "worse"),
    ("biggest", "smallest"), ("largest", "smallest"), ("bigger", "smaller"), ("larger", "smaller"),
    ("longest", "shortest"), ("newest", "oldest"), ("newer", "older"), ("most", "least"),
    ("maximum", "minimum"), ("always", "never"), ("sooner", "later"),
]

# Negating prefixes ("available" / "unavailable", "valid" / "invalid", "install" / "uninstall"), and the
# prefixed words that are not the opposite of what follows the prefix ("disable" is no "not able",
# "invoice" no "not voice").
_NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "non")
_NOT_PREFIX_OPPOSITES = frozenset("""
disable disabled disappointed disclose disclosed discount discounts discover discovered disease display
displayed dispose dispatch dispatched distance distant dismiss distribute district disturb discuss discussed
dispute disputed disarm discharge disk disc dish dishes dismantle disperse dissolve
impair impaired import imported imports impose improve improved impact impacted impress imprint
incase income incoming incorporate increase increased indefinitely indoor inform informed informing inputs
inside insight instruct insure intake intent invoice invoices indict index infer inner insist inspect indeed
intend intense invest invent install installed instead inbox inbound inside insert inserted interest
intern internal invite invited involve involved infant infants inland
unite united universe university until unto under understand understood undo unit units unique union
unless unlike unload unpack unto
irate iron irony illustrate illness
nonce none
""".split())

# Relations to something: a word, its object (the next content word, or a quantity), and the opposite
# relations. Prepositions are common words ("over the phone", "under warranty", "after all"), so a
# relation is a contrast only against the opposite relation to the same object.
_RELATION_OPPOSITES = {
    "before": {"after"}, "after": {"before", "within", "until", "till", "prior"}, "prior": {"after"},
    "within": {"after", "beyond", "outside", "past", "exceed", "over", "CMPgt"},
    "until": {"after"}, "till": {"after"}, "beyond": {"within"}, "past": {"within"},
    "inside": {"outside"}, "outside": {"inside", "within", "in"}, "in": {"outside"},
    "over": {"under", "below", "within"}, "under": {"over", "above"}, "above": {"below", "under"},
    "below": {"above", "over"}, "exceed": {"within"},
    "CMPgt": {"CMPlt", "CMPle", "within"}, "CMPlt": {"CMPgt", "CMPge"}, "CMPge": {"CMPle", "CMPlt"},
    "CMPle": {"CMPge", "CMPgt"},
    "more": {"less", "fewer"}, "less": {"more"}, "fewer": {"more"}, "higher": {"lower"}, "lower": {"higher"},
    "to": {"from"}, "from": {"to"}, "into": {"from", "out"}, "out": {"into"}, "onto": {"from"},
}
_RELATION_ALIAS = {"exceeds": "exceed", "exceeding": "exceed", "exceeded": "exceed", "beneath": "below"}
# What may stand between a relation and its object: articles, possessives, pronouns, auxiliaries.
_OBJECT_SKIP = frozenset("""
the a an my our your their his her its this that these those it they them i we you me us he she
is are was were be been being has have had do does did will would can could should may might must
any some all each every of one
""".split())
_QUANTITY = re.compile(r"\d[\d.,]*|[$€£¥%]")

# Kinds of named things: two questions that each name a different one of a kind ask different things.
_ENTITY_KINDS: dict[str, tuple[str, ...]] = {
    "platform": ("ios", "android", "windows", "mac", "macos", "linux", "iphone", "ipad", "chromebook",
                 "chromeos", "ubuntu", "playstation", "xbox", "nintendo", "kindle"),
    "browser": ("chrome", "firefox", "safari", "opera", "brave"),
    "payment": ("visa", "mastercard", "amex", "maestro", "discover", "paypal", "venmo", "zelle", "klarna",
                "afterpay", "stripe", "bitcoin", "ethereum", "crypto", "cryptocurrency", "cheque", "check",
                "cash", "wire", "sepa", "swift", "ach", "alipay", "wechat"),
    "carrier": ("ups", "fedex", "dhl", "usps", "dpd", "hermes", "evri", "tnt", "gls", "purolator"),
    "language": ("english", "french", "spanish", "german", "italian", "portuguese", "chinese", "mandarin",
                 "cantonese", "japanese", "korean", "arabic", "russian", "dutch", "hindi", "polish", "swedish",
                 "turkish", "greek", "hebrew", "danish", "norwegian", "finnish", "czech", "thai", "vietnamese"),
    "colour": ("red", "blue", "green", "black", "white", "yellow", "pink", "purple", "orange", "grey", "gray",
               "brown", "beige", "navy", "teal", "maroon"),
    "social": ("facebook", "instagram", "twitter", "tiktok", "whatsapp", "linkedin", "youtube", "snapchat",
               "pinterest", "reddit", "telegram", "slack", "discord"),
    "email": ("gmail", "outlook", "yahoo", "hotmail", "icloud", "protonmail"),
    "meal": ("breakfast", "brunch", "lunch", "dinner", "supper"),
    "transport": ("train", "bus", "plane", "flight", "ferry", "taxi", "car", "bike", "bicycle", "boat", "subway",
                  "tram", "truck"),
    "currency": tuple(w for w, code in _CURRENCY_WORDS.items()
                      if code and code not in ("cent", "pence") and w.isalpha() and len(w) > 2),
}
_ENTITY_KIND = {w: kind for kind, words in _ENTITY_KINDS.items() for w in words}
_CURRENCY_CODE = {w: code for w, code in _CURRENCY_WORDS.items() if code}

# Quantities the signature does not read as numbers ("thirteen", "a dozen", "half", "twice", "second").
_QUANTITY_WORDS = {
    "thirteen": "13", "fourteen": "14", "sixteen": "16", "seventeen": "17", "eighteen": "18",
    "nineteen": "19", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "million": "1e6",
    "millions": "1e6", "billion": "1e9", "dozen": "12", "dozens": "12", "half": "1/2", "quarter": "1/4",
    "twice": "x2", "double": "x2", "thrice": "x3", "triple": "x3", "hundreds": "100", "thousands": "1000",
    "couple": "2",
    # ordinals as the signature reads "2nd", "9th": their number
    "first": "1", "second": "2", "third": "3", "fourth": "4", "fifth": "5", "sixth": "6", "seventh": "7",
    "eighth": "8", "ninth": "9", "tenth": "10",
}
_ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth".split())
# "a second" alone is a moment; "second-hand" is normalised away ("used").
_NOT_ORDINAL_AFTER = frozenset("a one per each every".split())


@cache
def _common_words() -> frozenset[str]:
    """Words customers type in lower case: every word seen at least twice in the public
    customer-support questions the judge learns from (BANKING77 and CLINC150 questions). A capitalised
    one ("How do I Cancel my Subscription") is no name; a name ("Revolut", "Klarna") is rare there."""
    counts: Counter = Counter()
    with gzip.open(DATA_DIR / "clinc150" / "data_full.json.gz", "rt") as fh:
        for split in json.load(fh).values():
            for text, _ in split:
                counts.update(re.findall(r"[a-z]+", text))
    with gzip.open(DATA_DIR / "banking77" / "train.csv.gz", "rb") as fh:
        for row in csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")):
            counts.update(re.findall(r"\b[a-z]+\b", row["text"]))  # as typed: a capitalised word is no evidence
    return frozenset(w for w, n in counts.items() if n >= 2)


# A verb with the asker as its recipient is the opposite verb from the asker's side.
_TO_ME = {"send": "receive", "lend": "borrow", "sell": "buy", "pay": "receive"}
# Past participles that do not end in -ed.
_PARTICIPLES = frozenset("""
sent frozen broken stolen lost paid bought sold given taken shown hidden begun done won shut made forbidden
written chosen forgotten eaten driven known withdrawn overdrawn drawn
""".split())


def _participle(word: str) -> bool:
    return word.endswith("ed") or word in _PARTICIPLES


def _pairs_by_word() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, b in _OPPOSITE_PAIRS:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return out


_OPPOSITE = _pairs_by_word()


# --------------------------------------------------------------------------- reading one question

class _Reading:
    """What the contrast rules read of one question: its words (surface, lemma and concept forms),
    its relations with their objects, its named things by kind and its quantities."""

    __slots__ = ("words", "forms", "relations", "entities", "quantities", "names")

    def __init__(self, question: str):
        norm, tokens, sig = parsed(question)
        tokens = list(tokens)
        self.words = set(tokens)
        # every form a token may be listed under: itself, its lemma, its concept
        self.forms: dict[str, str] = {}
        for i, tok in enumerate(tokens):
            if tok.isalpha() and tok not in _STOP or tok in ("first", "last", "most", "more"):
                forms = (tok, _lemma(tok), concept(tok))
                if _lemma(tok) in _TO_ME and tokens[i + 1:i + 2] in (["me"], ["us"]):
                    forms = (_TO_ME[_lemma(tok)],)  # "send me money" is to receive it, "lend me" to borrow
                for form in forms:
                    self.forms.setdefault(form, tok)
        self.relations = {(tok, obj) for tok, obj in _relations(tokens)}
        self.entities: dict[str, set[str]] = {}
        for i, tok in enumerate(tokens):
            kind = _ENTITY_KIND.get(tok)
            if kind == "currency":
                tok = _CURRENCY_CODE[tok]
            if kind and not (kind == "payment" and tok in ("check", "cash", "wire", "swift", "discover") and not _paying(tokens, i)):
                self.entities.setdefault(kind, set()).add(tok)
        for a, b in zip(tokens, tokens[1:]):  # "apple pay", "google pay", "royal mail"
            if b == "pay" and a in ("apple", "google", "samsung", "amazon"):
                self.entities.setdefault("payment", set()).add(f"{a} pay")
        self.names = {n for n in sig["products"] if " " not in n and n not in _common_words()}
        self.quantities = set(sig["numbers"])
        for i, tok in enumerate(tokens):
            value = _QUANTITY_WORDS.get(tok)
            moment = (tok == "second" and i > 0 and tokens[i - 1] in _NOT_ORDINAL_AFTER
                      and (i + 1 == len(tokens) or tokens[i + 1] in _STOP))  # "wait a second", not "a second card"
            if value and not moment:
                self.quantities.add(value)


def _paying(tokens: list[str], i: int) -> bool:
    """Whether an ambiguous payment word ("check", "cash", "wire") is a means of payment here: after
    "by", "with", "in", "pay", or before "payment(s)", "transfer", "deposit"."""
    before = tokens[i - 1] if i else ""
    after = tokens[i + 1] if i + 1 < len(tokens) else ""
    return before in ("by", "with", "in", "pay", "accept", "take") or after in ("payment", "payments", "transfer", "deposit")


def _relations(tokens: list[str]):
    """(relation, object) for every relation word: its object is the next content word within three
    tokens (its concept), or ``#`` for a quantity ("after 30 days", "over $500")."""
    for i, tok in enumerate(tokens):
        tok = _RELATION_ALIAS.get(tok, tok)
        if tok not in _RELATION_OPPOSITES:
            continue
        for nxt in tokens[i + 1:i + 5]:
            if nxt in _OBJECT_SKIP or nxt in _STOP:
                continue
            if _QUANTITY.fullmatch(nxt) or nxt in _QUANTITY_WORDS:
                yield tok, "#"
            elif nxt.isalpha() and not nxt.startswith("CMP"):
                yield tok, concept(nxt)
            break


@lru_cache(maxsize=8192)
def _reading(question: str) -> _Reading:
    return _Reading(question)


# --------------------------------------------------------------------------- the contrasts

def _opposites(a: _Reading, b: _Reading) -> tuple[list[str], list[str]]:
    """Words of ``a`` whose opposite ``b`` says, where neither says both."""
    out_a, out_b = [], []

    def add(word: str, other: str):
        # a state against the act that undoes it ("my PIN is blocked" / "how do I unblock my PIN", "I
        # was sent a card" / "will I receive a card") asks the same thing: only two acts or two states
        # contrast
        if _participle(word) == _participle(other):
            out_a.append(word)
            out_b.append(other)

    for form, word in a.forms.items():
        for other in _OPPOSITE.get(form, ()):
            if other in b.forms and other not in a.forms and form not in b.forms:
                add(word, b.forms[other])
    for form, word in a.forms.items():  # a negating prefix: "available" / "unavailable"
        for other_form, other in b.forms.items():
            if _prefix_opposite(form, other_form) or _prefix_opposite(other_form, form):
                if other_form not in a.forms and form not in b.forms:
                    add(word, other)
    return sorted(set(out_a)), sorted(set(out_b))


def _prefix_opposite(base: str, word: str) -> bool:
    if word in _NOT_PREFIX_OPPOSITES or len(base) < 4:
        return False
    return any(word == p + base for p in _NEGATING_PREFIXES)


def _relation_swaps(a: _Reading, b: _Reading) -> tuple[list[str], list[str]]:
    """Opposite relations to the same object: ``a`` has ``(r, o)``, ``b`` has ``(r', o)`` with r' an
    opposite of r, and neither has the other's."""
    out_a, out_b = set(), set()
    for rel, obj in a.relations:
        for other in _RELATION_OPPOSITES[rel]:
            if (other, obj) in b.relations and (other, obj) not in a.relations and (rel, obj) not in b.relations:
                out_a.add(f"{_show(rel)} {obj}")
                out_b.add(f"{_show(other)} {obj}")
    return sorted(out_a), sorted(out_b)


def _show(word: str) -> str:
    return {"CMPgt": "more than", "CMPlt": "less than", "CMPge": "at least", "CMPle": "at most"}.get(word, word)


def _entity_swaps(a: _Reading, b: _Reading) -> tuple[list[str], list[str]]:
    """Of one kind, a thing only ``a`` names and a thing only ``b`` names (a capitalised name counts
    when the other question does not say it at all, in any case)."""
    out_a, out_b = set(), set()
    for kind in a.entities.keys() & b.entities.keys():
        only_a, only_b = a.entities[kind] - b.entities[kind], b.entities[kind] - a.entities[kind]
        if only_a and only_b:
            out_a |= only_a
            out_b |= only_b
    keys_a, keys_b = {_name_key(w) for w in a.words}, {_name_key(w) for w in b.words}
    only_a = {n for n in a.names - b.names if _name_key(n) not in keys_b}  # "Manchu" / "the Manchus" is one name
    only_b = {n for n in b.names - a.names if _name_key(n) not in keys_a}
    if only_a and only_b:
        out_a |= only_a
        out_b |= only_b
    return sorted(out_a), sorted(out_b)


def _name_key(word: str) -> str:
    """A word without its plural or possessive ending, to compare names ("Manchus", "Manchu")."""
    word = _lemma(word)
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def _quantity_swaps(a: _Reading, b: _Reading) -> tuple[list[str], list[str]]:
    only_a, only_b = a.quantities - b.quantities, b.quantities - a.quantities
    return (sorted(only_a), sorted(only_b)) if only_a and only_b else ([], [])


CONTRAST_KINDS = {"opposite": _opposites, "relation": _relation_swaps, "entity": _entity_swaps,
                  "quantity": _quantity_swaps}


def contrasts(cached_q: str, new_q: str) -> dict | None:
    """The contrasts between two questions (``{kind: {"cached": [...], "new": [...]}}``, kinds of
    ``CONTRAST_KINDS``), or None. Symmetric: either question may be the cached one."""
    a, b = _reading(cached_q), _reading(new_q)
    diff = {}
    for kind, find in CONTRAST_KINDS.items():
        in_a, in_b = find(a, b)
        if in_a and in_b:
            diff[kind] = {"cached": in_a, "new": in_b}
    return diff or None
