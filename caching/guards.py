"""Guards for the semantic answer cache: eligibility, signatures and the serve/no-serve judgement.

A semantic cache is a classifier with a false-positive rate. Sentence embeddings put
"Where is order 4417?" 0.78 away from "Where is order 4471?" and "transfers under 500" nearer
to "transfers over 500" than most true paraphrases, so cosine similarity alone can never
separate paraphrases from near misses. These guards add the linguistics the embedding lacks:

* ``classify``: personal questions (about this customer's own order, balance, refund...),
  action requests ("Cancel my order") and time-dependent questions ("is the API down",
  "today") are ineligible: they bypass every shared answer cache. Eligible questions get an
  intent class (answer type: how-to/policy, pricing, duration, schedule, ...).
* ``signature``: the details that change an answer without changing the topic much:
  numbers, ids, money, dates, time words, places, products, sizes, tiers, audiences,
  condition words, negations, comparatives, operations (import vs export, open vs close),
  directional roles (from savings / to checking) and the canonical content terms.
* ``judge``: serve only if both questions are eligible, their intents agree, the cosine
  clears the intent's threshold, the signatures match field for field and every content
  term of each question has a counterpart in the other (same lemma or same entry of a small
  table of general support synonyms). Every refusal carries a reason.

Everything here is pure Python on strings: no database, no model, a few hundred
microseconds per judgement (results are memoised per question text).
"""
from __future__ import annotations

import copy
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

GUARDS_VERSION = "2"

# Answer types. howto/policy/availability are one family: a "can I", a "how do I" and an
# "is it available" about the same thing are answered by the same help article.
INTENT_CLASSES: tuple[str, ...] = (
    "howto", "policy", "availability", "pricing", "duration", "schedule",
    "location", "contact", "reason", "status", "general",
)
INTENT_FAMILIES: dict[str, str] = {"howto": "procedure", "policy": "procedure", "availability": "procedure"}

# Cosine thresholds per intent class (MiniLM, normalised vectors). The content-term
# alignment and the signature carry most of the precision, so these are floors against
# unrelated questions that happen to share vocabulary; calibrated with
# ``python -m bench.guards_eval --calibrate`` on BANKING77/CLINC150 train pairs (see
# docs/semantic-guards.md). The lead exposes them through settings/DB rows.
DEFAULT_THRESHOLDS: dict[str, float] = {
    "howto": 0.50,
    "policy": 0.50,
    "availability": 0.50,
    "pricing": 0.60,
    "duration": 0.60,
    "schedule": 0.60,
    "location": 0.60,
    "contact": 0.60,
    "reason": 0.70,
    "status": 0.90,
    "general": 0.60,
}

CATEGORIES = ("general", "personal", "action", "time")


@dataclass(frozen=True)
class Eligibility:
    eligible: bool
    category: str  # "general" | "personal" | "action" | "time"
    intent: str  # one of INTENT_CLASSES
    reason: str


@dataclass(frozen=True)
class Judgement:
    serve: bool
    reason: str
    intent: str
    threshold: float
    difference: dict | None


# --------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------

_CONTRACTIONS = [
    (r"\b(do|does|did|is|are|was|were|has|have|had|should|could|would|must|need)nt\b", r"\1 not"),
    (r"\bcant\b", "can not"), (r"\bwont\b", "will not"), (r"\bim\b", "i am"), (r"\bive\b", "i have"),
    (r"\b(what|where|how|who)s\b", r"\1 is"),
    (r"\bcan'?t\b", "can not"), (r"\bcannot\b", "can not"), (r"\bwon'?t\b", "will not"),
    (r"\bshan'?t\b", "shall not"), (r"\b(\w+)n't\b", r"\1 not"),
    (r"\b(what|where|when|how|who|why|that|there|it|here)'s\b", r"\1 is"),
    (r"\b(\w+)'re\b", r"\1 are"), (r"\bi'm\b", "i am"), (r"\b(\w+)'ve\b", r"\1 have"),
    (r"\b(\w+)'ll\b", r"\1 will"), (r"\b(i|you|we|they|he|she)'d\b", r"\1 would"),
    (r"(\w)'s\b", r"\1"),  # possessive: "this year's" -> "this year"
    (r"(\w)s'(?=\s|$)", r"\1s"),
]

# Multi-word expressions and spelling variants of general support vocabulary, rewritten to one
# token before tokenising. Order matters: longer and more specific first.
_PHRASES: list[tuple[str, str]] = [
    (r"\bnon[- ](?=[a-z])", "not "),
    (r"\bnot able to\b|\bunable to\b", "not able to"),
    (r"\bout of stock\b", "not available"),
    (r"\bin stock\b", "available"),
    (r"\btwo[- ]?(?:factor|step)(?: authentication| auth| verification| login)?\b|\b2fa\b|\bmulti[- ]?factor(?: authentication)?\b|\bmfa\b", "twofactor"),
    (r"\be[- ]?mail address(?:es)?\b|\be-mail\b", "email"),
    (r"\b(?:mailing|postal|home|street|physical) address(?:es)?\b", "postaladdress"),
    (r"\b(?:phone|telephone|mobile|cell|contact) (?:number|no)s?\b|\btelephone\b", "phone"),
    (r"\bcustomer (?:service|support|care)\b|\bhelp ?desk\b|\bsupport team\b|\b(?:human|live|real) (?:agent|person)\b|\b(?:an? )?(?:agent|representative)\b", "support"),
    (r"\blog ?ins?\b|\bsign ?ins?\b|\blog on\b", "login"),
    (r"\blog ?out\b|\bsign ?out\b|\blog off\b", "logout"),
    (r"\bsign(?:ing)? ?up\b|\bcreate (?:an |a new )?account\b|\bregistration\b", "register"),
    (r"\bcheck[- ]?ins?\b", "checkin"),
    (r"\bcheck[- ]?outs?\b", "checkout"),
    (r"\bcarry[- ]?ons?\b", "carryon"),
    (r"\bset(?:ting)? ?up\b", "setup"),
    (r"\btop(?:ping)?[- ]?ups?\b", "topup"),
    (r"\b(?:turn|switch)(?:ing)? on\b", "enable"),
    (r"\b(?:turn|switch)(?:ing)? off\b", "disable"),
    (r"\bopt(?:ing)?[- ]?out(?: of)?\b|\bstop (?:getting|receiving)\b", "unsubscribe"),
    (r"\bopt(?:ing)?[- ]?in(?: to)?\b", "subscribe"),
    (r"\b(?:send|bring|give|ship|take)(?:ing)? (?:it |them |this |that |something |an item |items |the item |stuff |products? )?back\b", "return"),
    (r"\bmoney back\b", "refund"),
    (r"\b(?:promo(?:tional)?|discount|coupon|voucher|referral) codes?\b|\bcoupons?\b|\bvouchers?\b|\bpromo\b", "promocode"),
    (r"\bgift ?cards?\b", "giftcard"),
    (r"\bopening (?:hours|times)\b|\bbusiness hours\b|\bhours of (?:operation|business)\b|\bopen hours\b", "open hours"),
    (r"\b(?:admission|entry|entrance) tickets?\b", "ticket"),
    (r"\bsaturdays? and sundays?\b|\bsundays? and saturdays?\b|\bweekends?\b", "weekend"),
    (r"\bexchange rates?\b|\bconversion rates?\b|\brates? (?:of|for) (?:exchange|conversion)\b", "exchangerate"),
    (r"\bdirect debits?\b", "directdebit"),
    (r"\bstanding orders?\b", "standingorder"),
    (r"\bpin (?:code|number)s?\b", "pin"),
    (r"\buser ?names?\b|\blogin names?\b", "username"),
    (r"\bpass ?words?\b|\bpasscodes?\b", "password"),
    (r"\bapi keys?\b|\baccess tokens?\b|\bapi tokens?\b", "apikey"),
    (r"\bteam ?mates?\b|\bco-?workers?\b|\bteam members?\b", "colleague"),
    (r"\bhow much time\b|\bhow quickly\b|\bhow fast\b|\bhow soon\b", "how long"),
    (r"\bhow many (?:business |working |calendar )?(?:days|hours|weeks|minutes|months|years)\b", "how long"),
    (r"\bwhat time\b|\bwhat days?\b|\bwhich days?\b|\bat what time\b", "when"),
    (r"\bfirst[- ]class\b", "firstclass"),
    (r"\bbusiness[- ]class\b", "businessclass"),
    (r"\bpremium economy\b", "premiumeconomy"),
    (r"\bsame[- ]day\b", "sameday"),
    (r"\bnext[- ]day\b(?! after)", "nextday"),
    (r"\bopen[- ]box\b", "openbox"),
    (r"\bnew (?:customers?|users?|members?|clients?|accounts? holders?)\b", "newcustomer"),
    (r"\b(?:brand )?new\b(?! (?:york|zealand|jersey|delhi|mexico|south wales|hampshire|orleans))", " "),
    (r"\bsecond[- ]hand\b|\bpre[- ]?owned\b", "used"),
    (r"\bfinal sale\b", "finalsale"),
    (r"\bblack friday\b", "blackfriday"),
    (r"\bchristmas eve\b", "christmaseve"),
    (r"\bnew year'?s? eve\b", "newyearseve"),
    (r"\bnew year'?s?(?: day)?\b", "newyear"),
    (r"\bbank holidays?\b|\bpublic holidays?\b", "holiday"),
    (r"\bwi[- ]?fi\b", "wifi"),
    (r"\bmore than\b|\bgreater than\b|\bhigher than\b|\blarger than\b|\bbigger than\b|\blonger than\b|\bolder than\b|\bin excess of\b", " CMPgt "),
    (r"\bless than\b|\bfewer than\b|\blower than\b|\bsmaller than\b|\bshorter than\b|\byounger than\b", " CMPlt "),
    (r"\bat least\b|\bor more\b|\bminimum(?: of)?\b|\bno less than\b", " CMPge "),
    (r"\bat most\b|\bup to\b|\bor less\b|\bmaximum(?: of)?\b|\bno more than\b|\bnot more than\b", " CMPle "),
]
_PHRASES_RE = [(re.compile(p), r) for p, r in _PHRASES]
_CONTRACTIONS_RE = [(re.compile(p), r) for p, r in _CONTRACTIONS]

_TOKEN_RE = re.compile(r"[$€£¥]|CMP(?:gt|lt|ge|le)|[^\W_]+(?:[.,:][0-9]+)*|%|#")

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "fifteen": "15", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50",
    "hundred": "100", "thousand": "1000",
}


def _normalise(question: str) -> str:
    text = unicodedata.normalize("NFKC", question)
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("`", "'")
    text = text.lower()
    for pattern, repl in _CONTRACTIONS_RE:
        text = pattern.sub(repl, text)
    for pattern, repl in _PHRASES_RE:
        text = pattern.sub(f" {repl.strip()} ", text)
    text = text.replace("cmpgt", "CMPgt").replace("cmplt", "CMPlt").replace("cmpge", "CMPge").replace("cmple", "CMPle")
    return re.sub(r"\s+", " ", text).strip()


def _tokens(text: str) -> list[str]:
    out = []
    for tok in _TOKEN_RE.findall(text):
        if re.fullmatch(r"\d[\d,]*(?:\.\d+)?", tok):
            tok = tok.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", tok) else tok
        out.append(tok)
    return out


# --------------------------------------------------------------------------------------
# Lexicon
# --------------------------------------------------------------------------------------

# Function words: never content.
_STOP = frozenset("""
a an the i me my mine myself we us our ours you your yours it its itself this that these those
they them their he she his her is are was were be been being am do does did doing done have has
had having will would shall should can could may might must to of in on at for with by from
about as into onto over under up down out off and or but if so then than there here what which who whom whose
how when where why please pls kindly hi hello hey thanks thank also just any some anything
something thing things all each every much many very really still yet ok okay
able possible way ways there else bye goodbye cheers lot great good fine sure alright cool perfect
awesome welcome sorry excuse yes yeah yep nope hmm um uh oh appreciate appreciated many thank guys
""".split())

# Question-frame words: they decide the intent class (answer type), not the topic.
_FRAME = frozenset("""
policy policies rule rules process procedure procedures step steps instruction instructions guide
detail details information info option options method methods requirement requirements
allow allowed permit permitted eligible eligibility available availability offer provide
cost price pricing fee charge tariff much expensive cheap
long take hours time times when
contact reach call
work happen help know tell explain learn understand mean require required requires
item items product products goods merchandise stuff thing things
""".split())

# Light verbs: carry no topic of their own in a support question.
_LIGHT = frozenset("""
get got getting gotten go goes going went want wanted need needed like would try trying tried
use using used let make making made see find found look looking accept take taking bring
do does did done put give able there something someone somebody anyone anybody
""".split()) - {"used"}

_FRAME_LEMMAS = frozenset()  # filled after _lemma is defined
_LIGHT_LEMMAS = frozenset()

# Canonical concept for general support vocabulary (lemma -> concept). Two words align when
# their concepts are equal. Kept small and domain-general on purpose: it is a table of
# synonyms a support agent would accept as interchangeable, not of the evaluation rows.
_SYNONYMS: dict[str, str] = {}
for _concept, _words in {
    "return": "return",
    "refund": "refund reimburse reimbursement",
    "cancel": "cancel cancellation terminate termination",
    "deliver": "deliver delivery ship shipping shipment dispatch post postage",
    "package": "package parcel",
    "track": "track trace tracking",
    "change": "change update modify edit amend alter",
    "delete": "delete remove erase",
    "add": "add invite",
    "person": "person people colleague user member employee",
    "workspace": "workspace team organization organisation org",
    "invoice": "invoice bill",
    "buy": "buy purchase",
    "book": "book booking reserve reservation",
    "luggage": "luggage baggage bag suitcase",
    "enable": "enable activate activation",
    "disable": "disable deactivate deactivation",
    "apply": "apply redeem enter",
    "international": "international abroad overseas foreign",
    "pay": "pay payment",
    "support": "support",
    "register": "register",
    "reset": "reset recover",
    "open": "open opening",
    "close": "close closing",
    "withdraw": "withdraw withdrawal",
    "arrive": "arrive arrival",
    "subscribe": "subscribe subscription",
    "verify": "verify verification",
    "connect": "connect integrate integration connection",
    "download": "download",
    "upload": "upload",
    "sms": "sms text",
}.items():
    for _w in _words.split():
        _SYNONYMS[_w] = _concept

_IRREGULAR = {
    "paid": "pay", "bought": "buy", "sent": "send", "made": "make", "took": "take", "gave": "give",
    "children": "child", "kids": "child", "kid": "child", "people": "person", "women": "woman", "men": "man",
    "lost": "lose", "stolen": "steal", "worn": "wear", "broken": "break", "chosen": "choose",
    "allowance": "allow", "uploaded": "upload", "downloaded": "download", "shipped": "ship",
    "shipping": "ship", "cancelled": "cancel", "canceled": "cancel", "cancelling": "cancel", "canceling": "cancel",
    "billing": "billing", "opened": "opened", "unopened": "unopened", "personalized": "personalised",
    "customized": "customised", "organization": "organization", "news": "news", "plus": "plus",
    "address": "address", "access": "access", "business": "business", "express": "express", "status": "status",
    "minus": "minus", "bonus": "bonus", "virus": "virus", "bus": "bus", "gas": "gas", "yes": "yes", "this": "this",
    "its": "its", "is": "is", "was": "was", "has": "has", "does": "does", "us": "us", "always": "always",
    "series": "series", "species": "species", "delivery": "deliver", "deliveries": "deliver",
    "subscription": "subscribe", "subscriptions": "subscribe", "registration": "register",
    "verification": "verify", "authentication": "authenticate", "information": "info",
    "availability": "available", "eligibility": "eligible", "reservation": "reserve", "renewal": "renew",
    "invitation": "invite", "withdrawal": "withdraw", "arrival": "arrive", "departure": "depart",
    "approval": "approve", "refusal": "refuse", "removal": "remove", "proposal": "propose",
    "payment": "payment", "payments": "payment", "shipment": "shipment", "agreement": "agree",
    "replacement": "replace", "reimbursement": "reimburse", "statement": "statement",
    "cancellation": "cancellation", "integration": "integration", "connection": "connect",
    "activation": "activate", "deactivation": "deactivate", "termination": "terminate",
    "was": "was", "during": "during", "nothing": "nothing", "morning": "morning", "evening": "evening",
    "thing": "thing", "something": "something", "anything": "anything", "everything": "everything",
    "ring": "ring", "string": "string", "king": "king", "spring": "spring", "wedding": "wedding",
    "pudding": "pudding", "bedding": "bedding", "clothing": "clothing", "ceiling": "ceiling",
    "bed": "bed", "need": "need", "feed": "feed", "speed": "speed", "seed": "seed", "red": "red",
}


@lru_cache(maxsize=20000)
def _lemma(word: str) -> str:
    """A light English lemmatiser: irregular table, then plural and -ing/-ed stripping."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    w = word
    if len(w) <= 3 or not w.isalpha():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("xes") or w.endswith("ches") or w.endswith("shes"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) > 5:
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
            w = w[:-1]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
            w = w[:-1]
    if w.endswith("ction") or w.endswith("ssion"):
        w = w[:-3]
    elif w.endswith("ation") and len(w) > 7:
        w = w[:-5] + "ate"
    if w.endswith("e") and len(w) > 3 and not w.endswith(("ee", "ye")):
        w = w[:-1]
    return w


_FRAME_LEMMAS = frozenset(_lemma(w) for w in _FRAME)
_LIGHT_LEMMAS = frozenset(_lemma(w) for w in _LIGHT)


def _concept(word: str) -> str:
    """Canonical concept of a word: synonym table on the word or its lemma, else the lemma."""
    if word in _SYNONYMS:
        return _SYNONYMS[word]
    lem = _lemma(word)
    for key in (lem, lem + "e"):
        if key in _SYNONYMS:
            return _SYNONYMS[key]
    for k, v in _SYNONYMS.items():  # e.g. "delivering" -> lemma "deliver" matches "deliver"
        if _lemma(k) == lem:
            return v
    return lem


_CONCEPT_CACHE: dict[str, str] = {}


def concept(word: str) -> str:
    c = _CONCEPT_CACHE.get(word)
    if c is None:
        c = _concept(word)
        if len(_CONCEPT_CACHE) < 50000:
            _CONCEPT_CACHE[word] = c
    return c


# Signature vocabularies ---------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS.pop("may", None)  # "may" is usually the modal verb; matched below only next to a day number
_MONTHS["sept"] = 9
_WEEKDAYS = {d: d for d in "monday tuesday wednesday thursday friday saturday sunday".split()}
_WEEKDAYS.update({"mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday", "thu": "thursday",
                  "thur": "thursday", "thurs": "thursday", "fri": "friday", "sat": "saturday", "sun": "sunday"})
_TIME_WORDS = {
    "today": "today", "tonight": "tonight", "tomorrow": "tomorrow", "yesterday": "yesterday",
    "now": "now", "currently": "now", "weekend": "weekend", "weekday": "weekday", "weekdays": "weekday",
    "morning": "morning", "mornings": "morning", "afternoon": "afternoon", "evening": "evening",
    "evenings": "evening", "night": "night", "nights": "night", "overnight": "overnight",
    "midnight": "midnight", "noon": "noon", "holiday": "holiday", "holidays": "holiday",
    "christmas": "christmas", "christmaseve": "christmaseve", "easter": "easter",
    "thanksgiving": "thanksgiving", "newyear": "newyear", "newyearseve": "newyearseve",
    "blackfriday": "blackfriday", "daily": "daily", "weekly": "weekly", "monthly": "monthly",
    "yearly": "yearly", "annual": "yearly", "annually": "yearly", "quarterly": "quarterly",
    "sameday": "sameday", "nextday": "nextday", "summer": "summer", "winter": "winter",
    "autumn": "autumn", "fall": "autumn", "spring": "spring", "peak": "peak", "season": "season",
}
_TIER_WORDS = {
    "free": "free", "basic": "basic", "premium": "premium", "pro": "pro", "professional": "pro",
    "plus": "plus", "enterprise": "enterprise", "starter": "starter", "lite": "lite",
    "ultimate": "ultimate", "gold": "gold", "silver": "silver", "platinum": "platinum", "bronze": "bronze",
    "vip": "vip", "elite": "elite", "firstclass": "firstclass", "businessclass": "businessclass",
    "premiumeconomy": "premiumeconomy", "trial": "trial", "family": "family", "student": "student",
    "corporate": "corporate", "personal": "personal", "joint": "joint", "business": "business",
    "individual": "individual", "team": "team", "unlimited": "unlimited", "standard": "standard",
    "member": "member", "members": "member", "membership": "member", "loyalty": "loyalty",
}
_TIER_HEADS = frozenset("plan plans tier tiers membership memberships member members account accounts subscription subscriptions license licence edition version class package bundle customers customer users".split())
_AMBIGUOUS_TIERS = frozenset({"team", "personal", "business", "standard", "individual", "family", "student", "member", "members", "membership", "trial", "joint", "unlimited", "free", "loyalty"})
_AUDIENCE = {
    "adult": "adult", "adults": "adult", "child": "child", "children": "child", "kid": "child", "kids": "child",
    "infant": "infant", "infants": "infant", "baby": "infant", "babies": "infant", "toddler": "infant",
    "senior": "senior", "seniors": "senior", "pensioner": "senior", "teen": "teen", "teens": "teen",
    "teenager": "teen", "minor": "minor", "minors": "minor", "veteran": "veteran", "veterans": "veteran",
    "guest": "guest", "guests": "guest", "resident": "resident", "residents": "resident",
    "nonresident": "nonresident", "employee": "employee", "employees": "employee",
    "pet": "pet", "pets": "pet", "dog": "dog", "dogs": "dog", "cat": "cat", "cats": "cat",
    "newcustomer": "newcustomer",
}
_CONDITIONS = {w: w for w in """
opened unopened openbox sealed unsealed damaged broken defective faulty cracked scratched dented
sale clearance discounted reduced refurbished renewed personalised customised custom engraved
monogrammed used worn washed altered assembled installed expired lost stolen late missing partial
bulk wholesale gift digital physical virtual express priority overnight economy standard
international domestic finalsale refundable returnable prepaid delayed cancelled oversized
overweight fragile perishable hazardous frozen chilled second original replacement
""".split()}
_CONDITIONS.update({"personalized": "personalised", "customized": "customised", "abroad": "international",
                    "overseas": "international", "foreign": "international", "local": "domestic",
                    "canceled": "cancelled", "wet": "damaged", "faulty": "defective"})
_NEGATIONS = {"not": "not", "no": "not", "never": "not", "without": "without", "except": "except",
              "unless": "unless", "excluding": "except", "none": "not", "neither": "not", "nor": "not",
              "but": "but", "instead": "instead", "only": "only"}
_COMPARATIVE_WORDS = {"over": "gt", "above": "gt", "exceeding": "gt", "exceed": "gt", "exceeds": "gt",
                      "beyond": "gt", "under": "lt", "below": "lt", "within": "lt", "before": "before",
                      "after": "after", "between": "between", "since": "since", "until": "until", "till": "until"}
_OPERATIONS = frozenset("""
import export upload download open close enable disable add delete subscribe unsubscribe login logout
checkin checkout deposit withdraw send receive buy sell upgrade downgrade lock unlock freeze unfreeze
block unblock increase decrease raise lower cancel pause resume reset change return refund exchange
transfer pay track register apply book deliver install uninstall connect disconnect share print verify
merge split restore backup archive unarchive renew extend reschedule transfer convert sync invite
approve reject dispute redeem replace repair keep start stop end hide show enter leave join quit
""".split())
_CURRENCY_WORDS = {
    "dollar": "USD", "dollars": "USD", "usd": "USD", "bucks": "USD", "euro": "EUR", "euros": "EUR",
    "eur": "EUR", "pound": "GBP", "pounds": "GBP", "gbp": "GBP", "quid": "GBP", "yen": "JPY", "jpy": "JPY",
    "cad": "CAD", "aud": "AUD", "chf": "CHF", "franc": "CHF", "francs": "CHF", "rupee": "INR",
    "rupees": "INR", "inr": "INR", "yuan": "CNY", "cny": "CNY", "peso": "MXN", "pesos": "MXN",
    "krona": "SEK", "kronor": "SEK", "cent": "cent", "cents": "cent", "pence": "pence", "p": None,
}
_CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}
_SIZE_WORDS = {"xs": "xs", "xxs": "xxs", "xl": "xl", "xxl": "xxl", "xxxl": "xxxl", "2xl": "xxl", "3xl": "xxxl",
               "small": "small", "medium": "medium", "large": "large", "petite": "petite", "tall": "tall",
               "king": "king", "queen": "queen", "twin": "twin", "double": "double", "single": "single",
               "mini": "mini", "max": "max"}
_UNITS = {"gb": "gb", "tb": "tb", "mb": "mb", "kb": "kb", "kg": "kg", "kgs": "kg", "g": "g", "lb": "lb",
          "lbs": "lb", "oz": "oz", "cm": "cm", "mm": "mm", "m": "m", "km": "km", "mi": "mi", "miles": "mi",
          "inch": "in", "inches": "in", "ft": "ft", "feet": "ft", "ml": "ml", "l": "l", "litre": "l",
          "liter": "l", "litres": "l", "liters": "l", "gallon": "gal", "gallons": "gal", "mph": "mph",
          "seats": "seat", "people": "person", "persons": "person", "guests": "guest", "nights": "night",
          "days": "day", "day": "day", "hours": "hour", "hour": "hour", "weeks": "week", "week": "week",
          "months": "month", "month": "month", "years": "year", "year": "year", "minutes": "minute",
          "users": "user", "seat": "seat", "percent": "%", "%": "%", "items": "item", "bags": "bag"}
_PLACES = frozenset("""
afghanistan albania algeria andorra angola argentina armenia australia austria azerbaijan bahamas bahrain
bangladesh barbados belarus belgium belize benin bhutan bolivia bosnia botswana brazil brunei bulgaria
cambodia cameroon canada chile china colombia congo croatia cuba cyprus czechia czech denmark ecuador egypt
estonia ethiopia fiji finland france gabon georgia germany ghana greece guatemala haiti honduras hungary
iceland india indonesia iran iraq ireland israel italy jamaica japan jordan kazakhstan kenya korea kosovo
kuwait latvia lebanon liberia libya liechtenstein lithuania luxembourg madagascar malawi malaysia maldives
mali malta mauritius mexico moldova monaco mongolia montenegro morocco mozambique myanmar namibia nepal
netherlands holland nicaragua niger nigeria norway oman pakistan panama paraguay peru philippines poland
portugal qatar romania russia rwanda samoa senegal serbia singapore slovakia slovenia somalia spain
sudan sweden switzerland syria taiwan tanzania thailand togo tunisia turkey uganda ukraine uruguay
uzbekistan venezuela vietnam yemen zambia zimbabwe uk usa us america britain england scotland wales
europe eu asia africa oceania antarctica caribbean scandinavia emea apac latam
london paris berlin madrid rome milan barcelona lisbon dublin amsterdam brussels vienna prague warsaw
zurich geneva munich frankfurt hamburg stockholm oslo copenhagen helsinki athens istanbul moscow dubai
tokyo osaka seoul beijing shanghai singapore bangkok delhi mumbai sydney melbourne auckland toronto
vancouver montreal chicago boston seattle denver austin dallas houston miami atlanta orlando
york angeles francisco vegas washington manchester edinburgh glasgow birmingham liverpool bristol
""".split())
_PLACE_BIGRAMS = {"new york", "los angeles", "san francisco", "las vegas", "hong kong", "new zealand",
                  "south africa", "united states", "united kingdom", "north america", "south america",
                  "latin america", "middle east", "costa rica", "puerto rico", "saudi arabia", "sri lanka",
                  "new jersey", "new delhi", "rio de"}
_ID_HEADS = frozenset("order orders booking bookings reference ref account acct ticket case invoice tracking confirmation transaction claim policy membership customer flight seat room reservation item sku serial".split())

# Eligibility vocabularies ------------------------------------------------------------

_PERSONAL_NOUNS = frozenset("""
order orders package packages parcel parcels delivery deliveries shipment refund refunds balance payment
payments transfer transfers card cards booking bookings reservation reservations flight flights
subscription invoice invoices bill bills points statement statements loan loans application
applications claim claims ticket tickets return returns exchange transaction transactions deposit
deposits withdrawal withdrawals topup item items account money cash funds bag bags luggage baggage
room seat case complaint request appointment trial credit salary pin password cheque check
purchase purchases shipping tracking limit score rewards miles points premium bonus
schedule calendar meeting meetings appointments list reminders alarm
""".split())
_ACTION_VERBS = frozenset("""
get make arrange cancel refund upgrade downgrade delete remove close change update edit modify send resend ship reset
unsubscribe subscribe transfer pay book reserve rebook reschedule add block unblock freeze unfreeze
lock unlock activate deactivate renew charge order buy purchase replace exchange return pause resume
stop start enable disable register apply move switch withdraw deposit topup reverse dispute report
issue waive extend schedule upload export import connect disconnect verify confirm call email text
process approve release void hold open setup increase decrease raise lower transfer convert give
sign put deliver track
""".split())
_INFO_VERBS = frozenset("know understand learn find see ask check read look compare confirm hear tell figure".split())
_TRANSACTIONAL_VERBS = frozenset("cancel refund upgrade downgrade delete close reset unsubscribe book reschedule block freeze unfreeze unlock lock activate deactivate renew replace reverse waive resend rebook".split())
_MY_PERSONAL_NOUN = re.compile(r"\b(?:my|our) (?:\w+ ){0,2}?(" + "|".join(sorted(_PERSONAL_NOUNS, key=len, reverse=True)) + r")\b")
_IMPERATIVE_FOLLOWERS = frozenset("my me our us the a an this that these those it them all to from for back up off out down in on some your his her".split())
_NOUN_FRAME_AFTER_VERB = frozenset("policy policies details detail steps process procedure options option fee fees time times window period form label status rules rule limit limits info information request requests address number code method methods terms cost costs price prices charge charges deadline".split())
_TIME_DEPENDENT = [
    (re.compile(r"\b(today|tonight|tomorrow|yesterday)\b"), "refers to a specific day ('{0}')"),
    (re.compile(r"\b(yet|still|so far|by now)\b"), "asks about progress so far ('{0}')"),
    (re.compile(r"\b(right now|currently|at the moment|as of now|at present|these days|just now|anymore)\b"), "asks about the present ('{0}')"),
    (re.compile(r"(?<!how long )(?<!how long does it )(?<!hours )\bnow\b"), "asks about the present ('now')"),
    (re.compile(r"\b((?:this|next|last|past|previous|coming|current) (?:morning|afternoon|evening|night|week|weekend|month|year|quarter|season|semester|term|friday|monday|tuesday|wednesday|thursday|saturday|sunday))\b"), "relative date ('{0}')"),
    (re.compile(r"\b(is|are) (?:the |your |our )?[\w ]{0,30}?\b(down|offline|out of service|not working|broken|having (?:an )?(?:issues|problems|outage))\b"), "asks about live service status"),
    (re.compile(r"\b(outage|outages|downtime|incident|status page|service status|disruption)\b"), "asks about live service status ('{0}')"),
    (re.compile(r"\b(?:is|are) (?:the |my |your )?[\w ]{0,30}?\b(delayed|cancelled|canceled|on time|running late)\b"), "asks about a live status ('{0}')"),
    (re.compile(r"\b(latest|current|live|ongoing|upcoming|recent|recently|newest|so far)\b"), "asks for the latest state ('{0}')"),
    (re.compile(r"\b(exchangerate|stock price|share price|weather|wait time|waiting time|queue)\b"), "the answer is volatile ('{0}')"),
    (re.compile(r"\b(this year|last year|next year)\b"), "relative date ('{0}')"),
    (re.compile(r"\b((?:next|last|previous|upcoming|coming) (?:holiday|holidays|business day|working day|day off|day|payday|pay day|billing (?:cycle|date|period)|statement|payment|run|sale|event|release|update|opening|deadline|flight|train|bus|departure|delivery slot|available (?:slot|appointment|date)))\b"), "relative date ('{0}')"),
]


# --------------------------------------------------------------------------------------
# Analysis of one question (memoised)
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Analysis:
    norm: str
    tokens: tuple[str, ...]
    signature: dict
    eligibility: Eligibility


def _numbers_and_money(tokens: list[str]) -> tuple[set, set, set, set, set]:
    numbers, money, ids, sizes, times = set(), set(), set(), set(), set()
    n = len(tokens)
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i > 0 else ""
        nxt = tokens[i + 1] if i + 1 < n else ""
        if tok in _NUMBER_WORDS and not (tok == "one" and nxt in ("of", "more", "another", "")):
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
        "terms": terms, "links": _links(tokens), "version": {GUARDS_VERSION},
    }
    return {k: sorted(v) for k, v in sig.items()}


# Intent ------------------------------------------------------------------------------

_INTENT_RULES: list[tuple[str, re.Pattern]] = [
    ("reason", re.compile(r"^(?:(?:hi|hello|hey|ok|okay|so)[, ]+)?(?:why|how come|what is the reason|for what reason)\b")),
    ("status", re.compile(r"\b(?:where|when|why|what) (?:is|are|was|were|will|did|does|has|have|happened to) (?:my|our)\b|\bstatus of\b|\b(?:has|have|did|is|was) (?:my|our) \w+ (?:\w+ )?(?:arrive|arrived|ship|shipped|sent|gone through|go through|come|cleared|posted|processed|delivered|been)\b")),
    ("pricing", re.compile(r"\bhow much (?:is|are|does|do|will|would|should|for|to|it|did|was|were|extra|more)\b|\b(?:cost|costs|price|prices|pricing|priced|fee|fees|charge|charges|surcharge|tariff|commission|rate|rates|expensive|cheap|cheaper|afford)\b")),
    ("duration", re.compile(r"\bhow long\b|\bturnaround\b|\bprocessing time\b|\bdelivery time\b|\btake to (?:arrive|process|clear)\b")),
    ("schedule", re.compile(r"\bwhen\b|\bhours\b|\bare you open\b|\bopen on\b|\bdeadline\b|\bschedule\b|\btimetable\b")),
    ("contact", re.compile(r"\b(?:contact|reach|call|phone|email|e-mail|message|talk to|speak (?:to|with)|chat with|get in touch(?: with)?)\s+(?:you|your|us|support|someone|somebody|anyone|a person|a human|customer|the (?:team|store|office|bank|hotel|airline|company|shop|branch))\b|\byour (?:phone|email|contact)\b|\bhow (?:do|can|should) (?:i|we) (?:contact|reach|call)\b|\bcontact (?:details|info|information|number|form|page)\b|\bsupport (?:phone|email|chat|hours|line)\b")),
    ("howto", re.compile(r"\bwhere (?:can|do|should|would|could|will) (?:i|we) (?:find|locate|see|view|access|enter|change|update|download|upload|edit|manage|check|turn|set|setup|enable|disable|type|add|apply|get (?:to|the option|the setting))\b")),
    ("location", re.compile(r"\bwhere\b|\b(?:located|location|locations|nearest|directions to|address of|your address)\b")),
    ("howto", re.compile(r"^(?:find|locate|view|see|check|access|read|get|download|print|show me how)\b|\bhow (?:do|can|should|would|could|does|to|is|are|was|were)\b|\bsteps?\b|\binstructions?\b|\bguide\b|\bwhat (?:do|should|must) (?:i|we) (?:do|need)\b|\bway to\b|\bprocess\b|\bprocedure\b|\bhow$")),
    ("policy", re.compile(r"\bhow (?:many|much|often|big|large|small|old|far)\b")),
    ("availability", re.compile(r"\bavailable\b|\bdo you (?:have|offer|sell|carry|stock|provide|support|rent|serve)\b|\bis there (?:a|an|any)\b|\bare there any\b|\boffer\b")),
    ("policy", re.compile(r"\bpolic(?:y|ies)\b|\b(?:can|may|could) (?:i|we|you|my|our)\b|\bam i (?:allowed|able|eligible)\b|\bis it (?:possible|allowed|ok|okay)\b|\b(?:allowed|permitted|eligible|eligibility|require|required|requirements?|rules?|limits?|allowance)\b|\bdo (?:i|we|you) (?:need|have to)\b|\b(?:does|do|is|are) [\w ]{1,30}\b(?:include|included|cover|covered)\b|\bdo you\b|\bdoes (?:the|your|a|an)\b|\bwhich\b|\bwhat (?:are|is) (?:the|your)\b")),
]


def _intent(norm: str) -> str:
    for name, rx in _INTENT_RULES:
        if rx.search(norm):
            return name
    return "general"


# Eligibility ------------------------------------------------------------------------

_HOWTO_FRAME = re.compile(r"^(?:(?:hi|hello|hey|please|ok|okay)[, ]+)?(?:(?:find|locate|view|access|download|print)\b(?! me\b)|how (?:do|can|should|would|could|to)|how$|where (?:can|do|should) (?:i|we) (?:find|locate|see|view|access|enter|change|update|download|upload|edit|manage|check|set|setup|enable|disable|add|apply)|can (?:i|we)|could (?:i|we)|may i|is it possible|am i (?:allowed|able)|what (?:do|should) (?:i|we) (?:do|need)|what is the (?:best )?way)\b")
_STATE_Q = re.compile(r"\bwhere (?:did|has|have|had) (?:the|my|this|that|our)\b|\b(?:where|when|why|what|how much|how many|how long|how come) (?:is|are|was|were|will|would|did|does|do|has|have|had|happened to|about|has happened to|is going on with|is wrong with|is happening (?:to|with)|going on with|wrong with)(?: not)? (?:my|our)\b|\b(?:has|have|did|is|was|were|are|will|does|do) not (?:my|our) \w+|\b(?:has|have|had|did|is|was|were|are|will|does|do) (?:my|our) \w+")
_NARRATIVE = re.compile(r"\bi (?:need|want|would like|demand|expect) (?:my|our)\b|(?<!\bif )(?<!\bafter )(?<!\bbefore )(?<!\bwhen )(?<!\bonce )(?<!\buntil )(?<!\bwhether )(?<!\bam )(?<!\bwas )(?<!\bwere )(?<!\bhave )(?<!\bhad )(?<!\bdid )(?<!\bdo )(?<!\bcan )(?<!\bcould )(?<!\bshould )(?<!\bwould )(?<!\bwill )(?<!\bshall )(?<!\bmay )(?<!\bmust )\b(?:i|we) (?:just |already |recently |accidentally )?[a-z]{3,}ed\b(?! to (?:know|ask))|(?<!\bif )(?<!\bafter )(?<!\bbefore )(?<!\bwhen )(?<!\bonce )(?<!\buntil )(?<!\bwhether )\b(?:i|we) (?:have been|have not|had|was|were|got|just|already|accidentally|recently|never|still|ordered|paid|bought|received|sent|made|lost|tried|applied|booked|placed|submitted|returned|requested|noticed|see|saw|can not see|did not|do not see|am still|am waiting|have a|have an|was charged|haven|am having|keep getting|can not|could not|need help with my)\b")
_OWN_STATE = re.compile(r"\b(?:tell|show|give|send|check|get|find|list|read) me (?:\w+ ){0,4}?(?:my|our)\b|\b(?:can|could|will|would|should|may|might) (?:my|our)\b|\b(?:are|have|has|did|will|were|was) you (?:\w+ ){1,2}?(?:me|my|our|us)\b|\b(?:has|have|did|is|was) (?:anyone|someone|somebody) (?:\w+ ){1,3}?(?:my|our)\b|\bcheck (?:my|our)\b|\bwhy (?:did|was|were|has|have|had|is|are)(?: not)? (?:i|me|the \w+(?: \w+)? (?:give|charge|take|decline|block|refuse|reject|cancel)\w* (?:me|my))\b|\b(?:do i have(?! to\b)|have i got|am i (?:owed|due|eligible|entitled|getting)|do i owe|did i|have i|was i|my (?:balance|points|statement|credit score|limit|status)|how much (?:money )?(?:do i|have i|is in my|is on my|did i)|how many \w+(?: \w+)? (?:do|did|have) i(?! have to\b))\b")
_MY_SUBJECT = re.compile(r"(?<!\bif )(?<!\bwhen )(?<!\bonce )(?<!\bafter )(?<!\bbefore )(?<!\bwhether )(?<!\bcase )(?<!\bthat )\b(?:(?:my|our) (?:\w+ ){0,2}?|mine |ours )(?:is|are|was|were|has|have|had|did|does|do|will|got|been|keeps|kept|still|just|never|seems|seem|shows|says|stopped|failed|is not|has not|did not|will not|can not|would not|does not)\b")
_DECLARATIVE_MINE = re.compile(r"^(?:(?:hi|hello|hey|ok|okay|so|well|um|hmm)[, ]+)?(?:it is|it was|this is|that is|i|we|my|our|there is|there was|there are|someone|somebody)\b.*\b(?:my|our|me|i)\b")
_FAILURE_REPORT = re.compile(r"(?<!\bif )(?<!\bwhat if )(?<!\bhappens if )\b(?:did not|does not|do not|is not|are not|has not|have not|was not|were not|will not|can not|could not|would not|never)\s+(?:\w+\s+){0,2}?(?:work|working|arrive|arrived|show|showing|shown|go through|gone through|went through|appear|appeared|come|came|load|loading|receive|received|accept|accepted|process|processed|update|updated|clear|cleared|post|posted|let me|allow me|get through|reach|reached)\b")
_PRONOUN_STATE = re.compile(r"\bwhen (?:will|would|do|can|should|did) (?:i|we) (?:get|receive|have|see|hear|be able to use) (?:it|them|this|that|there|back|my|our|the money|the refund)\b|\b(?:when|where|why) (?:will|did|has|have|would|should|is|was) (?:it|they|(?:this|that)(?= (?:arrive|come|ship|be|get|go|happen|show)\b|$))\b(?! (?:take|cost|mean|work|usually|normally|typically|located))|\b(?:should|will|would|has|did) (?:it|they) (?:arrive|come|ship|be delivered|get here|be here|show up|go through)\b|\b(?:it|this|that|they|them)\b.*\b(?:too late|still|yet|arrived|shipped|on its way|on the way|not arrived|not come|not received)\b|\btoo late\b")
_ACTION_LEAD = re.compile(r"^(?:(?:hi|hello|hey|ok|okay|so|yes|hi there|thanks|thank you|great)[, ]+)?(?:(?:please|pls|kindly|just|now)\s+)?(?:(?:can|could|would|will) you (?:please |kindly |just )?|i (?:want|would like|need|wish|wanna|am looking|am trying|have to|must) (?:you )?to (?:please )?|i am trying to |i would love to |help me |let me |go ahead and |do not |never )?(\w+)(?: (\w+))?")
_OWN_TRACKING = re.compile(r"\b(?:know|tell|find out|see|check|track) (?:when|where|if|whether|how long) (?:my|our)\b|\b(?:get|make) (?:my|our) (?:\w+ ){1,3}?(?:to work|working|work again)\b")
_CONTEXT_REPLY = re.compile(r"^(?:(?:yes|yeah|yep|no|nope|ok|okay|sure|right|correct|exactly|great|thanks|thank you)\b[ ,.!]*)*(?:it is|it was|its|this is|that is|these are|they are|it is about|it concerns|about the|about my|there is|there was|there are|there were)\b(?!.*\?)|^(?:yes|yeah|yep|no|nope|correct|right)\b")
_STATUS_EVENT = re.compile(r"\b(?:declined|pending|reverted|rejected|bounced|on hold|not received|not arrived|not showing|not show up|not gone through|not go through|still waiting|been charged|got charged|was charged|double charged|charged twice|charged me|missing)\b")
_HYPOTHETICAL = re.compile(r"\b(?:if|would|could|might|can a|can an|can the|mean|means|happens|usually|typically|normally|reasons?|why do|why does|why are|why is a|what causes|in case)\b")
_ACTION_LEAD_QWORD = re.compile(r"^(?:how|what|where|when|why|which|who|can|could|is|are|do|does|will|would|should|may|am)\b")
_REQUEST_FOR_ME = re.compile(r"\b(?:can|could|would|will) you (?:please |kindly |just )?(\w+) (?:me|my|our|us|it|this|that|them)\b|\bfor me\b")


def _eligibility(norm: str, tokens: list[str], sig: dict, intent: str) -> Eligibility:
    howto = bool(_HOWTO_FRAME.search(norm)) or norm.endswith(" how")
    # Action requests: an imperative (or "I want to"/"can you" + verb) with an operation verb.
    m = _ACTION_LEAD.match(norm)
    if m:
        verb, after = m.group(1), m.group(2) or ""
        lead = norm[: m.start(1)]
        verb_c = verb if verb in _ACTION_VERBS else ("topup" if verb == "top" else verb)
        is_request_frame = bool(re.search(r"(?:you|to|please|kindly|not|never)\s*$", lead.strip()) or lead.strip().endswith(("you", "to", "please", "not", "never", "kindly")))
        if lead.startswith(("i ", "hi i ", "hello i ", "hey i ")) and verb_c not in _ACTION_VERBS and verb_c not in _INFO_VERBS \
                and verb_c.isalpha() and verb_c not in _STOP:
            verb_c = "get"  # "I want to get/open/apply for..." declares a request for us to act on
        addressed = bool(re.search(r"\byou\b", lead))
        if addressed:
            personal_object = after in ("me", "my", "our", "us", "it", "this", "that", "them") or " for me" in norm or (
                after == "the" and verb_c in _TRANSACTIONAL_VERBS)
            if not personal_object:
                verb_c = ""
        imperative = verb_c in _ACTION_VERBS and not howto and (
            (after in _IMPERATIVE_FOLLOWERS or re.fullmatch(r"\d+", after or "x") is not None)
            or (is_request_frame and after not in _NOUN_FRAME_AFTER_VERB)
        ) and after not in _NOUN_FRAME_AFTER_VERB and not norm.endswith(" how")
        if verb_c == "open" and after == "hours":
            imperative = False
        if imperative:
            return Eligibility(False, "action", intent, f"action: asks us to {verb} something ('{' '.join(tokens[:4])}...')")
    want = re.match(r"^(?:(?:hi|hello|hey|ok|okay|so|please)[, ]+)?(?:(?:i|we) )?(?:need|want|would like|require|demand) (?:a|an|the|some|my|our|another)\b", norm)
    if want:
        return Eligibility(False, "action", intent, f"action: asks us for something ('{want.group(0)}')")
    for rq in _REQUEST_FOR_ME.finditer(norm):
        if not howto and (rq.group(1) is None or rq.group(1) in _ACTION_VERBS):
            return Eligibility(False, "action", intent, f"action: a request addressed to us ('{rq.group(0)}')")
    # Personal: the customer's own order, account, balance, refund...
    if sig["ids"] and any(t in _ID_HEADS for t in tokens):
        return Eligibility(False, "personal", intent, f"personal: refers to a specific record ({', '.join(sig['ids'])})")
    st = _STATE_Q.search(norm)
    if st and not howto:
        return Eligibility(False, "personal", intent, f"personal: about the customer's own situation ('{st.group(0)}')")
    own = _OWN_STATE.search(norm)
    if own:
        return Eligibility(False, "personal", intent, f"personal: about the customer's own account ('{own.group(0)}')")
    track = _OWN_TRACKING.search(norm)
    if track:
        return Eligibility(False, "personal", intent, f"personal: about the customer's own item ('{track.group(0)}')")
    if _CONTEXT_REPLY.search(norm) and not howto:
        return Eligibility(False, "personal", intent, "personal: a reply that depends on the conversation so far")
    if _STATUS_EVENT.search(norm) and not howto and not _HYPOTHETICAL.search(norm):
        return Eligibility(False, "personal", intent, f"personal: asks about the state of a specific transaction ('{_STATUS_EVENT.search(norm).group(0)}')")
    mine = _MY_SUBJECT.search(norm)
    if mine and not howto:
        return Eligibility(False, "personal", intent, f"personal: reports the state of the customer's own item ('{mine.group(0)}')")
    dec = _DECLARATIVE_MINE.search(norm)
    if dec and not howto and not _ACTION_LEAD_QWORD.match(norm):
        return Eligibility(False, "personal", intent, "personal: the customer describes their own situation")
    fail = _FAILURE_REPORT.search(norm)
    if fail and not howto:
        return Eligibility(False, "personal", intent, f"personal: reports a failure the customer ran into ('{fail.group(0)}')")
    own_item = _MY_PERSONAL_NOUN.search(norm)
    if own_item and not howto and not _HYPOTHETICAL.search(norm[: own_item.start()]):
        return Eligibility(False, "personal", intent, f"personal: about the customer's own {own_item.group(1)} ('{own_item.group(0)}')")
    nar = _NARRATIVE.search(norm)
    if nar and not howto:
        return Eligibility(False, "personal", intent, f"personal: describes the customer's own case ('{nar.group(0)}')")
    pr = _PRONOUN_STATE.search(norm)
    if pr:
        return Eligibility(False, "personal", intent, f"personal: about the customer's own item ('{pr.group(0)[:40]}')")
    if re.search(r"\bmy\b", norm) and not howto and re.search(r"\b(?:status|arrive|arrived|received|declined|pending|missing|blocked|frozen|rejected|failed|stuck|charged|deducted|showing|shown|appear|appeared|reverted|refunded|cancelled|canceled)\b", norm):
        return Eligibility(False, "personal", intent, "personal: about the state of the customer's own item")
    for rx, why in _TIME_DEPENDENT:
        tm = rx.search(norm)
        if tm:
            word = tm.group(1) if tm.groups() else tm.group(0)
            return Eligibility(False, "time", intent, "time: " + why.format(word))
    return Eligibility(True, "general", intent, f"general {intent} question")


@lru_cache(maxsize=8192)
def _analyse(question: str) -> _Analysis:
    norm = _normalise(question)
    tokens = _tokens(norm)
    sig = _signature(question, norm, tokens)
    intent = _intent(norm)
    elig = _eligibility(norm, tokens, sig, intent)
    return _Analysis(norm, tuple(tokens), sig, elig)


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------

# A language-independent safety net under the English rules: the guards read English, so in any
# other language a first-person possessive, a record id or a "now" word makes the question
# ineligible. It costs hit rate in those locales and never shares a personal answer.
_FOREIGN_PERSONAL = re.compile(
    r"\b(mein|meine|meinen|meinem|meiner|meines|mir|mich|mon|ma|mes|mien|mienne|mi|mis|mío|mía|"
    r"mio|mia|miei|mie|mijn|meu|minha|meus|minhas)\b", re.I)
_RECORD_ID = re.compile(r"\b(?=[a-z0-9-]*\d)(?=[a-z0-9-]*[a-z])[a-z0-9]+(?:-[a-z0-9]+)*\b|\b\d{5,}\b", re.I)
_FOREIGN_TIME = re.compile(
    r"\b(heute|morgen|gestern|jetzt|gerade|aktuell|derzeit|aujourd'hui|demain|hier|maintenant|actuellement|"
    r"hoy|mañana|ayer|ahora|oggi|domani|ieri|adesso|vandaag|morgen|gisteren|nu)\b", re.I)


# "How do I … my …" is a how-to question in any language; only there a possessive stays general.
_FOREIGN_HOWTO = re.compile(
    r"^\s*(wie (kann|könnte|muss|soll) (ich|man)|wie (ändere|lösche|storniere|finde|erhalte|bekomme|setze|"
    r"aktiviere|deaktiviere|exportiere|importiere|kündige|verwalte) ich|comment (puis-je|faire|je peux)|"
    r"cómo (puedo|hago)|come (posso|faccio)|hoe (kan|moet) ik)\b", re.I)


def _id_like(question: str) -> bool:
    return any(sum(ch.isdigit() for ch in m.group(0)) >= 4 for m in _RECORD_ID.finditer(question))


@lru_cache(maxsize=8192)
def classify(question: str) -> Eligibility:
    """Is the question shareable across customers, and what kind of answer does it want?
    (A pure function of the text, remembered: a repeated question is what the caches serve.)"""
    found = _analyse(question).eligibility
    if not found.eligible:
        return found
    if (m := _FOREIGN_PERSONAL.search(question)) and not _FOREIGN_HOWTO.search(question):
        return Eligibility(False, "personal", found.intent, f"personal: first-person possessive ('{m.group(0)}')")
    if _id_like(question):
        return Eligibility(False, "personal", found.intent, "personal: refers to a specific record (an id)")
    if m := _FOREIGN_TIME.search(question):
        return Eligibility(False, "time", found.intent, f"time: depends on the current time ('{m.group(0)}')")
    return found


def signature(question: str) -> dict[str, list[str]]:
    """The answer-changing details of a question, as sorted lists (JSON-serialisable, stable)."""
    return copy.deepcopy(_analyse(question).signature)


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


def _term_alignment(cached_sig: dict, new_sig: dict) -> dict | None:
    a, b = set(cached_sig.get("terms", ())), set(new_sig.get("terms", ()))
    if a == b:
        return None
    return {"cached": sorted(a - b), "new": sorted(b - a)}


def _surface(analysis: _Analysis, concepts: list[str]) -> list[str]:
    """The words the customer typed for some canonical concepts (for reasons people read)."""
    seen = {}
    for tok in analysis.tokens:
        if tok.isalpha():
            seen.setdefault(concept(tok), tok)
    return [seen.get(c, c) for c in concepts]


def _threshold_for(intent_a: str, intent_b: str, thresholds: dict[str, float]) -> float:
    ta = thresholds.get(intent_a, DEFAULT_THRESHOLDS.get(intent_a, 1.0))
    tb = thresholds.get(intent_b, DEFAULT_THRESHOLDS.get(intent_b, 1.0))
    return max(ta, tb)


def intents_agree(a: str, b: str) -> bool:
    return a == b or (a in INTENT_FAMILIES and INTENT_FAMILIES.get(a) == INTENT_FAMILIES.get(b))


def judge(new_q: str, cached_q: str, similarity: float, new_sig: dict | None = None,
          cached_sig: dict | None = None, thresholds: dict[str, float] | None = None) -> Judgement:
    """Decide whether the cached answer to ``cached_q`` may be served for ``new_q``.

    Called for the nearest candidate after the hard filters (tenant, locale, versions).
    Serves only if both questions are eligible, their intent classes agree, ``similarity``
    clears the intent's threshold, the signatures are compatible and every content term of
    each question has a counterpart in the other. The reason names the first guard that
    refused; ``difference`` lists every signature and content difference found.
    """
    thresholds = thresholds or DEFAULT_THRESHOLDS
    new_a, cached_a = _analyse(new_q), _analyse(cached_q)
    if new_sig is None or new_sig.get("version") != [GUARDS_VERSION]:
        new_sig = new_a.signature
    if cached_sig is None or cached_sig.get("version") != [GUARDS_VERSION]:
        cached_sig = cached_a.signature
    new_e, cached_e = new_a.eligibility, cached_a.eligibility
    intent = new_e.intent
    threshold = _threshold_for(new_e.intent, cached_e.intent, thresholds)

    diff = signature_difference(cached_sig, new_sig) or {}
    terms = _term_alignment(cached_sig, new_sig)
    if terms:
        diff = dict(diff, terms=terms)
    difference = diff or None

    if not new_e.eligible:
        return Judgement(False, f"new question ineligible: {new_e.reason}", intent, threshold, difference)
    if not cached_e.eligible:
        return Judgement(False, f"cached question ineligible: {cached_e.reason}", intent, threshold, difference)
    if not intents_agree(new_e.intent, cached_e.intent):
        return Judgement(False, f"intent differs: new asks {new_e.intent}, cached answered {cached_e.intent}",
                         intent, threshold, difference)
    if similarity < threshold:
        return Judgement(False, f"similarity {similarity:.3f} below the {intent} threshold {threshold:.2f}",
                         intent, threshold, difference)
    sig_fields = [f for f in (difference or {}) if f != "terms"]
    if sig_fields:
        parts = []
        for f in sig_fields:
            d = difference[f]
            parts.append(f"{f} (cached {d['cached']} vs new {d['new']})")
        return Judgement(False, "signature differs: " + "; ".join(parts), intent, threshold, difference)
    if terms:
        return Judgement(False, f"content words without counterpart: cached {_surface(cached_a, terms['cached'])}, "
                         f"new {_surface(new_a, terms['new'])}", intent, threshold, difference)
    if not any(new_sig.get(f) for f in _CONTENT_FIELDS):
        return Judgement(False, "no content words: too vague to share an answer", intent, threshold, difference)
    links_a, links_b = set(cached_sig.get("links", ())), set(new_sig.get("links", ()))
    if links_a != links_b:
        diff = {"links": {"cached": sorted(links_a - links_b), "new": sorted(links_b - links_a)}}
        return Judgement(False, f"same words, different arrangement: cached links {sorted(links_a - links_b)}, "
                         f"new links {sorted(links_b - links_a)}", intent, threshold, diff)
    return Judgement(True, f"paraphrase: similarity {similarity:.3f} >= {threshold:.2f} ({intent}), signatures and content terms match",
                     intent, threshold, None)
