"""The guards' lexicon: text normalisation, tokens, a light lemmatiser, the table of general support
synonyms, and the word lists the signature and eligibility rules read (months, places, tiers,
conditions, negations, operations, personal nouns, action verbs...). Pure data and string functions."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

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


# Synonyms the strict match alone reads (``judge._strict_match``), at serve time: a word -> the word it
# stands for, or "" for a light verb like "get". Not in ``_SYNONYMS``, so the signature, the judge's
# features and its training pairs keep the word. General English with one sense in a support question
# ("transport", "swap", "confirm", "cell" have others and are left out).
STRICT_SYNONYMS = {
    "validate": "verify", "begin": "start", "commence": "start", "fix": "repair",
    "obtain": "", "acquire": "", "cellphone": "phone",
}


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
# Verbs that tell us to do something but are not operations of the signature (``_ACTION_VERBS`` also
# feeds the word links): with them, a message that starts with the verb ("Rotate the key.", "Regenerate
# my API key") asks for an action, not for instructions.
_REQUEST_VERBS = frozenset("""
rotate regenerate revoke generate create invite rename restore reactivate restart archive unarchive migrate
merge retry resubmit refresh reissue reopen undo expedite escalate grant assign reassign enrol enroll link
unlink remove void reimburse credit recover install uninstall share sync backup export import set
""".split())
# Verbs of a keyword search for a place in the product ("download invoice", "find my invoice"): a how-to,
# not a request for us to act.
_NAVIGATION_VERBS = frozenset("find locate view see check access read download print look show".split())
# The imperative mood: a message that starts (after a greeting or "please") with a verb that asks us to
# act and its object ("cancel my order", "send me the invoice", "rotate the key."), or asks us to do it
# to something of the customer's ("can you rotate my key?"; "can you export the data?" asks what the
# product can do). The signature records it (``mood``) and the vetoes keep it apart from a question
# about the same thing.
_MOOD_VERBS = (_ACTION_VERBS | _REQUEST_VERBS | _OPERATIONS) - _NAVIGATION_VERBS
_MOOD_OBJECTS = frozenset("my me our us the a an this that these those it them all some your".split())
_MOOD_OWN_OBJECTS = frozenset("my me our us".split())
_IMPERATIVE_MOOD = re.compile(
    r"^(?:(?:hi|hello|hey|ok|okay|so|yes|hi there|thanks|thank you|great)[, ]+)?(?:(?:please|pls|kindly|just|now|also)[, ]+)?"
    r"(?:((?:can|could|would|will) you) (?:please |kindly |just )?)?([a-z]+) ([a-z]+)\b(?: ([a-z]+))?")
# After "... me" / "... us", words that ask for information ("send me how to ...", "email us about ..."), not an action.
_ASKS_ABOUT = frozenset("how what where when why which who whether if about know".split())
# Verbs that ask us for help, information or leave, as "tell", "help" and "let" do ("inform me of the fees",
# "instruct me on changing the oil", "assist me with activation", "allow me to swap salt for baking soda"):
# with the asker as their object, a question in the imperative, not an action.
_ASKING_VERBS = frozenset("inform instruct assist educate enlighten brief allow permit".split())
# What a message asks us to give when it asks for information, not for something done ("share the
# nutrition info", "provide me with the restrictions", "give me the definition of ..."): a general question
# in the imperative, unless the information is the customer's own ("share my APR").
_INFORMATION_NOUNS = frozenset("""
information info details detail definition definitions meaning facts fact name names knowledge restrictions
rules policy policies steps instructions directions requirements explanation difference differences reasons
options overview summary
""".split())
_OBJECT_FILLERS = frozenset("me us with the a an some any more of on about your".split())
_GIVING_VERBS = frozenset("give provide share send get supply offer".split())


def _asks_for_information(verb: str, words: list[str]) -> bool:
    """Whether an imperative asks us to give information: a verb of giving, and information within the
    first two content words after it ("the nutrition info", "me with the restrictions"), none of the
    customer's ("share my APR" stays a request)."""
    if verb not in _GIVING_VERBS:
        return False
    content = []
    for word in words[:6]:
        if word in ("my", "our"):
            return False
        if word not in _OBJECT_FILLERS:
            content.append(word)
        if len(content) == 2:
            break
    return any(word in _INFORMATION_NOUNS for word in content)
_MY_PERSONAL_NOUN = re.compile(r"\b(?:my|our) (?:\w+ ){0,2}?(" + "|".join(sorted(_PERSONAL_NOUNS, key=len, reverse=True)) + r")\b")
_IMPERATIVE_FOLLOWERS = frozenset("my me our us the a an this that these those it them all to from for back up off out down in on some your his her".split())
_NOUN_FRAME_AFTER_VERB = frozenset("policy policies details detail steps process procedure options option fee fees time times window period form label status rules rule limit limits info information request requests address number code method methods terms cost costs price prices charge charges deadline".split())
_TIME_DEPENDENT = [
    (re.compile(r"\b(today|tonight|tomorrow|yesterday)\b"), "refers to a specific day ('{0}')"),
    (re.compile(r"\b(yet|still|so far|by now)\b"), "asks about progress so far ('{0}')"),
    (re.compile(r"\b(right now|currently|at the moment|as of now|at present|these days|just now|anymore)\b"), "asks about the present ('{0}')"),
    # "now that I have my card" is "since"; "what (should I do) now?" asks for the next step, not the present
    (re.compile(r"(?<!how long )(?<!how long does it )(?<!hours )(?<!buy )(?<!pay )(?<!\bi do )(?<!\bwe do )(?<!\bwhat )\bnow\b(?! pay later)(?! that\b)"), "asks about the present ('now')"),
    (re.compile(r"\b((?:this|next|last|past|previous|coming|current) (?:morning|afternoon|evening|night|week|weekend|month|year|quarter|season|semester|term|friday|monday|tuesday|wednesday|thursday|saturday|sunday))\b"), "relative date ('{0}')"),
    (re.compile(r"\b(is|are) (?:the |your |our )?[\w ]{0,30}?\b(down|offline|out of service|not working|broken|having (?:an )?(?:issues|problems|outage))\b"), "asks about live service status"),
    (re.compile(r"\b(outage|outages|downtime|incident|status page|service status|disruption)\b"), "asks about live service status ('{0}')"),
    (re.compile(r"\b(?:is|are) (?:the |my |your )?[\w ]{0,30}?\b(delayed|cancelled|canceled|on time|running late)\b"), "asks about a live status ('{0}')"),
    # Not the present: "live" as a verb ("I live in the US", "where did you live", "pets live with you")
    # or "alive" ("a live human"); "current account" (a bank account), "the current one" (the card one
    # has); "wait time for a card" (how long getting one takes).
    (re.compile(r"\b(latest|current(?! accounts?\b)(?! one\b)"
                r"|live(?<!\bi live)(?<!\bwe live)(?<!\byou live)(?<!\bthey live)(?<!\bhe live)(?<!\bshe live)(?<!\bwho live)"
                r"(?<!\bto live)(?<!\bdid live)(?<!\bdo live)(?<!\bdoes live)(?<!\bnot live)(?<!\blast live)(?<!\bpeople live)"
                r"(?<!\ba live)(?! with\b)(?! (?:human|person|being|agent)\b)"
                r"|ongoing|upcoming|recent|recently|newest|so far)\b"), "asks for the latest state ('{0}')"),
    (re.compile(r"\b(exchangerate|stock price|share price|weather|wait(?:ing)? time(?! for an? \b)|queue)\b"), "the answer is volatile ('{0}')"),
    (re.compile(r"\b(this year|last year|next year)\b"), "relative date ('{0}')"),
    (re.compile(r"\b((?:next|last|previous|upcoming|coming) (?:holiday|holidays|business day|working day|day off|day|payday|pay day|billing (?:cycle|date|period)|statement|payment|run|sale|event|release|update|opening|deadline|flight|train|bus|departure|delivery slot|available (?:slot|appointment|date)))\b"), "relative date ('{0}')"),
]

# Pairs of words whose swap changes the answer.
OPPOSITES = [
    ("open", "close"), ("add", "remove"), ("enable", "disable"), ("activate", "deactivate"), ("increase", "decrease"),
    ("accept", "decline"), ("before", "after"), ("over", "under"), ("more", "less"), ("lock", "unlock"),
    ("freeze", "unfreeze"), ("deposit", "withdraw"), ("send", "receive"), ("sent", "received"), ("import", "export"),
    ("upload", "download"), ("buy", "sell"), ("subscribe", "unsubscribe"), ("start", "stop"), ("with", "without"),
    ("domestic", "international"), ("personal", "business"), ("debit", "credit"), ("physical", "virtual"),
    ("available", "unavailable"), ("possible", "impossible"), ("safe", "unsafe"), ("allowed", "forbidden"),
    ("minimum", "maximum"), ("highest", "lowest"), ("higher", "lower"), ("earliest", "latest"), ("early", "late"),
    ("first", "last"), ("cheapest", "most expensive"), ("fastest", "slowest"), ("turn on", "turn off"),
    ("incoming", "outgoing"), ("refundable", "non-refundable"), ("paid", "unpaid"), ("new", "old"),
    ("upgrade", "downgrade"), ("join", "leave"), ("login", "logout"), ("top up", "withdraw"), ("eat", "avoid"),
    ("include", "exclude"), ("included", "excluded"), ("approved", "rejected"), ("can", "can't"),
]
OPPOSITE_OF = {a: b for a, b in OPPOSITES} | {b: a for a, b in OPPOSITES}
