"""What a question asks for, and for whom: the kind of fact it wants and the case it is asked for.

The kind is one of ``amount`` (how much, a price, a fee, a rate), ``duration`` (how long, until
when), ``count`` (how many), ``clock`` (a time of day: opening hours), ``contact`` (a phone number or
an e-mail address), ``name`` (which carrier, where), ``yesno`` (do you, can I) or None (how do I: the
answer is a procedure, not a fact). The case is what the help centre states a fact separately for:
a country, a plan or membership, a product line ("How much is Plus in the UK?" asks for an amount for
the UK and Plus). The extractive answerer leads with the sentence that states the asked kind for the
asked case, and admission's completeness check (``completeness``) refuses an answer that states none.

English and German, by patterns: a question in another locale gets no kind and no case, and then
only the other checks apply.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from caching.answer_checks.facts import QUANTITY, UNITS, number, quantities
from caching.answer_checks.places import foreign_country_word, towns, towns_in
from caching.answer_checks.text import split_sentences, terms
from ingestion.textsearch import language_of

KINDS = ("amount", "duration", "size", "count", "clock", "contact", "name", "yesno")
FACT_KINDS = frozenset({"amount", "duration", "size", "count", "clock", "contact"})  # a figure an answer must hold

# A yes/no question starts with an auxiliary ("Do you ship ...", "Kann ich ...").
YES_NO_QUESTION = re.compile(
    r"^\s*(?:(?:hi|hello|hallo)\b[\s,!.]*)?(?:do|does|did|can|could|is|are|was(?!\s+(?:kost|ist|sind|passiert|muss|kann|gilt|bekomme|mache|tue|brauche|bedeutet|würde|wäre|hätte|könnte|sollte|soll|macht|heißt|zahl|geht|gibt|dauert|passiert|für|bei|mit|genau|darf|müss|könn)\w*)|were|will|would|should|shall|may|might|"
    r"have|has|am|kann|können|kannst|darf|dürfen|gibt|ist|sind|muss|müssen|habe|haben|hat|wird|werden|liefern|"
    r"liefert|bieten|bietet|akzeptieren|akzeptiert|nehmen|nehmt|verschicken|versendet|versenden|erstatten|"
    r"erstattet|zahle|zahlen|könnt|dürft|müsst|habt|seid|werdet|darfst|musst|hast|bist|wirst|gilt|gelten|geht|"
    r"schickt|schicken|bekomme|bekommt|bekommen|brauche|braucht|brauchen|reicht|funktioniert|klappt|sollte|"
    r"sollten|könnte|könnten|würde|würden|wäre)\b", re.IGNORECASE)
_TIME_UNIT = r"(?:minutes?|hours?|days?|business days|weeks?|months?|years?|minuten|stunden|tagen?|werktagen?|wochen|" \
             r"monaten?|jahren?)"
# Most specific first: "how many days" is a duration, "how much time" too.
_KIND_PATTERNS = (
    # how long a thing must be ("How long does the new password need to be?"): a length, before "how long" as a duration
    ("size", re.compile(r"\bhow long (?:does|do|must|should|can|has|have)\b[^?.]{0,40}?\b(?:need to|needs to|have to|"
                        r"has to|must|should|can) be\b|\bhow long (?:must|should|can) (?:\w+\s+){1,3}be\b|"
                        r"\bwie lang (?:muss|darf|soll|kann)\b|"
                        # "how long is each backup code supposed to be?", "how long are order numbers?": a code, a
                        # password or a number has a length, not a duration, unless it is "valid" for one
                        r"\bhow long (?:is|are)\b[^?.]{0,40}?\b(?:supposed|meant|required|going) to be\b"
                        r"(?!\s+(?:valid|good|active|kept|stored|saved|usable|live|working)\b)|"
                        r"\bhow long (?:is|are) (?:the |a |an |each |every |my |your |our |their |these |those )?"
                        r"(?:[\w-]+ ){0,2}?(?:codes?|passwords?|pins?|numbers?|keys?|usernames?|ids?|references?)"
                        r"(?=\s*(?:[?.!,;]|$)|\s+(?:in|on|at|of|if|when)\b)|"
                        r"\bwie lang (?:ist|sind) (?:der|die|das|ein|eine|jeder|jede|jedes|mein|meine|ihr|ihre|eure?) "
                        r"(?:[\w-]+ ){0,2}?(?:\w*codes?|\w*passw[oö]rt(?:er)?|pins?|\w*nummern?|\w*schlüssel|kennw[oö]rt(?:er)?)"
                        r"(?=\s*(?:[?.!,;]|$)|\s+(?:eigentlich|genau|denn|bei|im|in)\b)", re.I)),
    # from what time to what time: opening hours, before "bis wann" as a duration ("Von wann bis wann ist da sonntags
    # offen?")
    ("clock", re.compile(r"\bvon wann bis wann\b|\bfrom what time (?:to|until|till)\b|"
                         r"\bfrom when (?:to|until|till) when\b", re.I)),
    ("duration", re.compile(
        rf"\bhow long\b|\bhow soon\b|\bhow quickly\b|\bhow fast\b|\bhow many {_TIME_UNIT}\b|\bhow much time\b|"
        rf"\buntil when\b|\bby when\b|\bwhen do(?:es)? .{{0,40}}\bexpire|\bfor how long\b|\bwithin what time\b|"
        rf"\bwie lange\b|\bbis wann\b|\bwie schnell\b|\bwie viele {_TIME_UNIT}\b|\bwie viel zeit\b|\bwann verf[äa]ll|"
        rf"\b(?:innerhalb|in) welche[rn]? (?:frist|zeit(?:raum|spanne)?)\b|\bwelche frist\b|"
        rf"\bwithin what (?:period|timeframe)\b|\bhow much (?:earlier|sooner|longer|later)\b|"
        rf"\bwie viel (?:früher|eher|länger|später)\b",
        re.I)),
    # a file's or a parcel's size or weight: "How large can the CSV file be?", "Wie groß darf die Datei sein?"
    ("size", re.compile(r"\bhow (?:large|big|heavy)\b|\bwhat(?:'s| is) the (?:maximum |max\.? )?(?:file )?size\b|"
                        r"\bfile size\b|\bsize limit\b|\bwie groß\b|\bwie schwer\b|\bdateigröße\b|\bmaximale größe\b",
                        re.I)),
    ("amount", re.compile(
        r"\bhow much\b|\bwhat does .{0,60}\bcost\b|\bcosts?\b|\bprices?\b(?![ -]match)|\bfees?\b|\bsurcharge\b|\bcharge for\b|"
        r"\b(?:vat|tax) rate\b|\brate\b(?!\s+limit)|\bminimum\b|\bmaximum\b|(?<!rate )\blimit\b|\bkostet\b|\bkosten\b|\bpreis|\bgebühr|"
        r"\bzuschlag|\bwie hoch\b|\bwie viel\b(?!\s+uhr\b)|\bsteuersatz|\bmindest|\bhöchst|\border value\b|\bthreshold\b|"
        r"\bbestellwert|\bab welchem betrag\b|\b(?:at|from) what (?:order )?(?:amount|total|value)\b|\bthe least\b|\bsmallest (?:order|amount|purchase|total)\b|\blowest\b|"
        r"\bhow much (?:do|must) i (?:at least )?spend\b", re.I)),
    # a rate limit is a count of requests ("60 requests per minute"), not an amount of money
    ("count", re.compile(r"\bhow many\b|\bwie viele\b|\bmit wie vielen\b|\bnumber of\b|\banzahl\b|\brate limits?\b",
                         re.I)),
    ("clock", re.compile(
        r"\bwhat time\b|\bopening hours\b|\bsupport hours\b|\boffice hours\b|\bhours\b|\bwhen (?:are|is) .{0,30}\bopen\b|"
        r"\bwhen can i (?:call|reach)\b|\berreichbar\b|\bwie viel uhr\b|\b(?:latest|last) (?:day|time)\b|\bday/time\b|"
        r"\bcut-?off\b|\bannahmeschluss\b|\bwann (?:erreiche|erreicht|kann ich (?:euch|sie) (?:anrufen|erreichen))\b|"
        r"öffnungszeit|\buhrzeit\b|\bwann (?:hat|ist|habt|sind) .{0,30}\b(?:geöffnet|offen)\b",
        re.I)),
    ("contact", re.compile(r"\bphone number\b|\bnumber for\b|\b(?:which|what) number\b|\bwho(?:m)? (?:do|can|should) i "
                           r"(?:call|ring|phone|e-?mail|write to)\b|\bwelche nummer\b|\bwen (?:rufe|kann) ich\b|"
                           r"\be-?mail address\b|\btelefonnummer\b|"
                           r"\bnummer\b|\be-?mail-adresse\b|"
                           # the address e-mails come from ("Which address do your password reset emails come from?")
                           r"\b(?:which|what) (?:e-?mail )?address\b[^?.]{0,60}\b(?:come|comes|coming|sent)\b(?: \w+)?"
                           r" from\b|\bsender(?:'s)? (?:e-?mail )?address\b|\babsender\b|"
                           r"\bvon welcher (?:e-?mail-)?adresse\b", re.I)),
    ("name", re.compile(r"^\s*(?:which|who|where|what carrier|welche[rsmn]?|wer|wo|wohin|mit welchem)\b", re.I)),
)

# Cases the help centre states facts separately for. Each alias is a regular expression; those in
# ``_CASED`` are matched case-sensitively ("US", not the pronoun "us"). "uk" is no other word: customers type
# "im in the uk", and it is matched in any case.
CASES: dict[str, dict[str, tuple[str, ...]]] = {
    "country": {
        "United States": (r"united states", r"contiguous", r"\bUSA?\b", r"\bU\.S\.", r"\bamerica\b", r"\busa\b",
                          r"\bvereinigten? staaten", r"\bin den USA\b"),
        "Canada": (r"\bcanad(?:a|ian)\b", r"\bkanad(?:a|ische[nrs]?)\b"),
        "United Kingdom": (r"united kingdom", r"\bUK\b", r"\bbrit(?:ain|ish)\b", r"\bengland\b", r"großbritannien",
                           r"\bvereinigte[ns]? königreich"),
        "Germany": (r"\bgermany\b", r"\bdeutschland\b"),
        "Austria": (r"\baustria\b", r"\bösterreich\b"),
        "Mexico": (r"\bmexic(?:o|an)\b", r"\bmexiko\b", r"\bméxico\b"),
        "Alaska and Hawaii": (r"\balaska\b", r"\bhawaii\b"),
    },
    "plan": {
        "Plus": (r"\bplus\b",),
        # not German's "pro" ("45 € pro Jahr", "einmal pro Person"): a question naming Plus "pro Jahr" names one plan
        "Pro": (r"\bpro\b(?![\s-]+(?:jahr|monat|woche|tag|stunde|minute|person|stück|bestellung|artikel|paket|sendung|"
                r"lieferung|kund|kopf|nacht|mitglied|haushalt|konto|karte|zahlungskarte|einkauf|quartal|kalender|rata)\w*)",),
        "Premier": (r"\bpremier\b",),
        "Free plan": (r"\bfree plan\b", r"\bon free\b", r"\bthe free\b(?= plan)"),
    },
    "product": {
        "refurbished": (r"\brefurbished\b", r"\brenewed\b", r"generalüberholt"),
        "sale": (r"\bsale items?\b", r"\bon sale\b", r"\bduring a sale\b", r"\breduced price", r"\breduziert\w* (?:artikel|preis|ware)",
                 r"\bim sale\b", r"\bclearance\b", r"\b(?:in|at|from) (?:a|the) sale\b", r"\bsale prices?\b"),
        "personalised": (r"\bengrav", r"\bpersonali[sz]", r"\bgraviert", r"\bmonogram"),
        "bulky": (r"\bbulky\b", r"\bsperrig", r"\bfreight\b", r"\bover 50 lb\b", r"\blarge (?:items?|tvs?)\b",
                  r"\b(?:big|oversized|huge|heavy) (?:stuff|items?|things?|ones?|parcels?|packages?)\b",
                  r"\b(?:[4-9]|four|five|six|seven|eight)[- ](?:person|man) tents?\b", r"\b[4-9]-personen-zelt"),
        "business": (r"\bbusiness partner\b", r"\bbusiness account\b"),
        "replacement": (r"\breplacement items?\b", r"\badvance replacement\b", r"\bersatzartikel\b",
                        r"\bvorab-austausch\b"),
      },
    # The state an item is returned in, where the help centre has a rule of its own for it ("Opened items ... a
    # 15% restocking fee", "Unopened items can be returned for a full refund"). Not a special case (a general
    # question is not answered by avoiding it), but a question that names it asks for its rule.
    "condition": {
        "opened": (r"\bopened\b", r"\bopen(?:-| )box\b", r"\bonce (?:i'?ve |i have |you'?ve )?opened\b",
                   r"\bgeöffnete[nrs]?\b", r"\bgeöffnet (?:habe|hast|haben|hat|wurde)\b", r"\b(?:verpackung|siegel) \w* ?geöffnet\b"),
        "unopened": (r"\bunopened\b", r"\bungeöffnete?[nrs]?\b", r"\boriginalverpackt"),
    },
    # Holidays, by name or date, whose hours the help centre states apart: New Year's Day's hours are no answer for
    # New Year's Eve ("December 31: ... close at 2:00 p.m.")
    "holiday": {
        "New Year's Eve": (r"\bnew year'?s eve\b", r"\bdec(?:ember)?\.? 31\b", r"\b31(?:st)? (?:of )?dec(?:ember)?\b",
                           r"\bsilvester\b", r"\b31\. dezember\b"),
        "New Year's Day": (r"\bnew year'?s day\b", r"\bjan(?:uary)?\.? 1\b(?![\d:])", r"\b1(?:st)? (?:of )?jan(?:uary)?\b",
                           r"\bneujahr\b", r"\b1\. januar\b"),
        "Christmas Eve": (r"\bchristmas eve\b", r"\bdec(?:ember)?\.? 24\b", r"\b24(?:th)? (?:of )?dec(?:ember)?\b",
                          r"\bheiligabend\b", r"\b24\. (?:und 31\. )?dezember\b"),
        "Christmas Day": (r"\bchristmas day\b", r"\bdec(?:ember)?\.? 25\b", r"\b25(?:th)? (?:of )?dec(?:ember)?\b",
                          r"\b(?:1\.|erster) weihnachtstag\b", r"\b25\. dezember\b"),
        "Thanksgiving": (r"\bthanksgiving\b",),
    },
    # Places within a country that have rules of their own: a figure for them is not the country's
    # ("Deliveries to Yukon ... take 3-5 business days longer" is no answer to shipping to Canada).
    "region": {
        "Alaska and Hawaii": (r"\balaska\b", r"\bhawaii\b"),
        "Canadian territories": (r"\byukon\b", r"\bnunavut\b", r"\bnorthwest territories\b", r"\bnordwest-?territorien\b"),
        "US territories": (r"\bpuerto rico\b", r"\bguam\b", r"\bvirgin islands\b"),
        "British islands": (r"\bchannel islands\b", r"\bisle of man\b", r"\bkanalinseln\b"),
        "islands": (r"\bnorth sea\b", r"\bbaltic islands\b", r"\bnordsee", r"\bostsee"),
    },
}
_CASED = frozenset({r"\bUSA?\b", r"\bU\.S\.", r"\bin den USA\b"})
# A country by a city or state in it, too: a customer "in Guadalajara" asks about Mexico, and "Our service center in
# San Marcos, Texas repairs the product within 10 business days" is the US's figure. Not a country named, though: the
# Denver store's Sunday hours are no one country's figure among others (``named_countries``).
PLACES: dict[str, tuple[str, ...]] = {
    # German customers say "Amerika" of the USA (not "Süd-Amerika", "Latein-Amerika"), which the articles call "USA"
    "United States": (r"(?<![-\w])(?<!süd )(?<!nord )amerika\b",
                      r"\bdenver\b", r"\bcolorado\b", r"\baustin\b", r"\btexas\b", r"\bsan marcos\b", r"\bnew york\b",
                      r"\blos angeles\b", r"\bchicago\b", r"\bseattle\b", r"\bboston\b", r"\bcalifornia\b",
                      r"\bflorida\b", r"\bportland\b", r"\boregon\b", r"\bsan francisco\b", r"\bsan diego\b",
                      r"\bphoenix\b", r"\barizona\b", r"\bphiladelphia\b", r"\bpennsylvania\b", r"\bhouston\b",
                      r"\bdallas\b",
                      r"\bmiami\b", r"\batlanta\b", r"\bdetroit\b", r"\bmichigan\b", r"\bminneapolis\b",
                      r"\bminnesota\b", r"\bnashville\b", r"\btennessee\b", r"\bohio\b", r"\billinois\b",
                      r"\bmassachusetts\b", r"\bnew jersey\b", r"\bvirginia\b", r"\bnorth carolina\b", r"\butah\b",
                      r"\bnevada\b", r"\blas vegas\b", r"\bwisconsin\b", r"\bmaryland\b", r"\bmissouri\b",
                      r"\bkentucky\b", r"\blouisiana\b", r"\bidaho\b", r"\bmontana\b", r"\bvermont\b", r"\bmaine\b",
                      r"\bconnecticut\b", r"\biowa\b", r"\bkansas\b", r"\boklahoma\b", r"\balabama\b"),
    "Canada": (r"\btoronto\b", r"\bvancouver\b", r"\bmontr[eé]al\b", r"\bcalgary\b", r"\bottawa\b", r"\bontario\b",
               r"\bqu[eé]bec\b", r"\bbritish columbia\b", r"\balberta\b", r"\bwinnipeg\b", r"\bmanitoba\b",
               r"\bhalifax\b", r"\bnova scotia\b", r"\bedmonton\b", r"\bsaskatchewan\b"),
    "United Kingdom": (r"\blondon\b", r"\bmanchester\b", r"\bbirmingham\b", r"\bedinburgh\b", r"\bglasgow\b",
                       r"\bengland\b", r"\bscotland\b", r"\bschottland\b", r"\bwales\b",
                       r"\bnorthern ireland\b", r"\bnordirland\b", r"\bleeds\b", r"\bbristol\b", r"\bliverpool\b",
                       r"\bcardiff\b", r"\bbelfast\b", r"\bsheffield\b", r"\bnottingham\b", r"\bnewcastle\b",
                       r"\bbrighton\b"),
    "Germany": (r"\bberlin\b", r"\bmunich\b", r"\bmünchen\b", r"\bhamburg\b", r"\bcologne\b", r"\bköln\b",
                r"\bfrankfurt\b", r"\bleipzig\b", r"\bstuttgart\b", r"\bdresden\b", r"\bbavaria\b", r"\bbayern\b",
                r"\bdüsseldorf\b", r"\bdortmund\b", r"\bbremen\b", r"\bhannover\b", r"\bnürnberg\b", r"\bnuremberg\b",
                r"\bbonn\b", r"\bfreiburg\b", r"\bheidelberg\b"),
    "Austria": (r"\bvienna\b", r"\bwien\b", r"\bsalzburg\b", r"\bgraz\b", r"\binnsbruck\b", r"\blinz\b",
                r"\bklagenfurt\b", r"\bbregenz\b", r"\btirol\b", r"\btyrol\b", r"\bkärnten\b", r"\bsteiermark\b"),
    "Mexico": (r"\bguadalajara\b", r"\bmonterrey\b", r"\bcanc[uú]n\b", r"\bpuebla\b", r"\btijuana\b",
               r"\boaxaca\b", r"\bquer[eé]taro\b", r"\bm[eé]rida\b", r"\bcdmx\b"),
}


def _compile(aliases: tuple[str, ...]) -> re.Pattern:
    loose = [a for a in aliases if a not in _CASED]
    return re.compile("|".join(([f"(?i:{'|'.join(loose)})"] if loose else []) + [a for a in aliases if a in _CASED]))


_CASE_PATTERNS = {family: {case: _compile(aliases + (PLACES.get(case, ()) if family == "country" else ()))
                           for case, aliases in cases.items()}
                  for family, cases in CASES.items()}
CASE_PATTERNS = _CASE_PATTERNS  # {family: {case: the pattern of its names}}
_COUNTRY_NAMES = {case: _compile(aliases) for case, aliases in CASES["country"].items()}


def named_countries(text: str) -> set[str]:
    """The countries a text names by name ("Canada", "the UK"), not by a city or state in it (``PLACES``)."""
    return {case for case, pattern in _COUNTRY_NAMES.items() if pattern.search(text)}


# How each locale's help centre names a country (what the answerability check reads for a city or state in it).
COUNTRY_WORDS = {
    "en": {"United States": "the US", "Canada": "Canada", "United Kingdom": "the UK", "Germany": "Germany",
           "Austria": "Austria", "Mexico": "Mexico"},
    "de": {"United States": "USA", "Canada": "Kanada", "United Kingdom": "Großbritannien", "Germany": "Deutschland",
           "Austria": "Österreich", "Mexico": "Mexiko"},
}
_PLACE_PATTERNS = {country: re.compile("|".join(patterns), re.IGNORECASE) for country, patterns in PLACES.items()}
# An island of the Channel Islands said as a place ("I live on Jersey", "auf Guernsey"; "a cycling jersey" is none): the
# help centres name the islands as a whole (the "British islands" region, which the UK deliveries leave out)
_CHANNEL_ISLAND = re.compile(r"\b(?P<prep>in|on|to|from|auf|nach|von|aus)\s+(?:the\s+)?(?:island\s+of\s+|insel\s+)?"
                             r"(?:jersey|guernsey|alderney|sark|st\.?\s+helier|saint\s+helier|st\.?\s+peter\s+port)\b",
                             re.IGNORECASE)
ISLANDS_WORDS = {"en": "the Channel Islands", "de": "den Kanalinseln"}
# A question about a place itself (a shop, a branch, picking up in person), where the town is what is asked about
_FACILITY = re.compile(  # the company's, not the customer's own ("our office in Salzburg")
    r"(?<!\bmy )(?<!\bour )(?<!\bmein )(?<!\bmeine )(?<!\bunser )(?<!\bunsere )(?<!\bunserem )(?<!\bmeinem )"
    r"\b(?:stores?|shops?|branch(?:es)?|outlets?|showrooms?|locations?|offices?|warehouses?|pick(?:ing)?[ -]?up|"
    r"collect|visit|in person|filial\w*|läden|laden|geschäft\w*|standort\w*|abhol\w*|büro\w*|lager|vor ort|"
    r"besuchen|anprobier\w*|try (?:\w+ )?on|where in|wo in|servicestelle\w*|annahmestelle\w*|abgeben|"
    r"drop(?:ping)? (?:\w+ )?off|service (?:center|centre|desk|point)s?)\b", re.IGNORECASE)
# A facility asked of where the customer is ("Do you have a store there?", "a shop near me")
_FACILITY_HERE = re.compile(r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )\b(?:there|nearby|near me|close to me|"
                            r"around me|in my (?:area|city|town)|around here|dort|in meiner nähe|bei mir in der nähe|"
                            r"hier in der nähe)\b", re.IGNORECASE)
# A town named before its state or country ("Fairbanks, Alaska", "Portland, Oregon")
_TOWN_BEFORE = re.compile(r"\b[A-ZÄÖÜ][\w'’.-]*(?:\s+[A-ZÄÖÜ][\w'’.-]*)?,\s+(?=[A-ZÄÖÜ])")
# ... or after a place preposition and before "in" its region ("to Whitehorse in the Yukon", "nach Linz in Österreich")
_TOWN_IN = re.compile(r"\b(?P<prep>to|in|from|near|at|nach|aus|bei)\s+[A-ZÄÖÜ][\w'’.-]*(?:\s+[A-ZÄÖÜ][\w'’.-]*)?\s+"
                      r"(?:in|im)\s+(?=(?:the\s+|der\s+)?[A-ZÄÖÜ])")
# The postal codes of the states, provinces and territories, as customers write them after their town ("Vancouver
# BC", "Austin, TX"): the country's word, or the region's where the help centre has rules for it (Alaska, Yukon)
_US_STATES = ("AL AZ AR CA CO CT DE FL GA ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK "
              "OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC").split()
_CA_PROVINCES = "BC AB SK MB ON QC NB NS PE NL".split()
POSTAL_CODES = {**{c: "United States" for c in _US_STATES}, **{c: "Canada" for c in _CA_PROVINCES},
                "AK": "Alaska", "HI": "Hawaii", "YT": "Yukon", "NT": "Northwest Territories", "NU": "Nunavut"}
# in capitals only, after a capitalised town ("in Portland OR"), never in a question typed in capitals; a code that is
# an English word too ("OR", "IN", "ON") only after a town the gazetteer or ``PLACES`` knows ("Plus, OR Pro?" is no place)
_WORD_CODES = frozenset("AL CO DE HI ID IN LA MA ME OH OK ON OR PA".split())
_TOWN_CODE = re.compile(rf"\b([A-ZÄÖÜ][\w'’.-]*),?\s+({'|'.join(POSTAL_CODES)})\b(?![\w'’-])")


def _coded_town(m: re.Match) -> bool:
    """Whether a ``_TOWN_CODE`` match is a town and its code (see there)."""
    town = m.group(1)
    return m.group(2) not in _WORD_CODES or town.casefold() in towns() or any(
        p.fullmatch(town) for p in _PLACE_PATTERNS.values())


def places_as_countries(text: str, locale: str = "en") -> str:
    """``text`` with the customer's whereabouts said by the country the help centre names: a city, state or
    province in ``PLACES`` becomes its country ("I'm in Toronto" -> "I'm in Canada"), a town named before a known
    state or country goes ("Fairbanks, Alaska" -> "Alaska"). A help centre states rules by country, never by the
    customer's town, so a town it never names is no subject the question asks about, as a country it names is not
    either. Unchanged when the question asks about a place itself (a store, a branch, picking up in person:
    "Do you have a shop in Vienna?" is about Vienna)."""
    if _FACILITY.search(text):
        # the place asked about is the sentence's that names the facility ("what time does the store in Denver
        # open?"); a town told in another sentence is still the customer's whereabouts ("I'm in Phoenix. When must I
        # order so it leaves the warehouse the same day?"), unless a facility is asked of as "there" or "near me"
        parts = re.split(r"(?<=[.!?])\s+", text)
        if len(parts) < 2 or _FACILITY_HERE.search(text):
            return text
        return " ".join(part if _FACILITY.search(part) else places_as_countries(part, locale) for part in parts)
    language = language_of(locale)
    words = COUNTRY_WORDS.get(language, COUNTRY_WORDS["en"])

    def known_after(m: re.Match) -> bool:
        at = m.end()
        at += len(re.match(r"(?:the\s+|der\s+)?", text[at:]).group(0))  # "in the Yukon"
        return any(p.match(text, at) for p in (*_PLACE_PATTERNS.values(), *_COUNTRY_NAMES.values(),
                                               *_CASE_PATTERNS["region"].values()))

    if not text.isupper():  # "Vancouver BC" -> "Vancouver, Canada" (and the town goes below)
        text = _TOWN_CODE.sub(lambda m: f"{m.group(1)}, {POSTAL_CODES[m.group(2)]}" if _coded_town(m) else m.group(0),
                              text)
    text = _TOWN_BEFORE.sub(lambda m: "" if known_after(m) else m.group(0), text)
    text = _TOWN_IN.sub(lambda m: f"{m.group('prep')} " if known_after(m) else m.group(0), text)
    for country, pattern in _PLACE_PATTERNS.items():
        text = pattern.sub(words[country], text)
    islands = ISLANDS_WORDS.get(language, ISLANDS_WORDS["en"])
    text = _CHANNEL_ISLAND.sub(lambda m: f"{m.group('prep')} {islands}", text)
    for start, end, town in reversed(towns_in(text)):  # the gazetteer's towns (``places``): "in Anchorage" -> "in Alaska"
        text = f"{text[:start]}{town.region[1] if town.region else words[town.country]}{text[end:]}"
    for start, end, country in reversed(towns_in(text, foreign=True)):  # "in Basel" -> "in Schweiz": another country
        text = f"{text[:start]}{foreign_country_word(country, language)}{text[end:]}"
    return text
# An amount in a country's currency is that country's figure.
CURRENCY_COUNTRY = {"usd": "United States", "cad": "Canada", "gbp": "United Kingdom", "mxn": "Mexico"}
EURO_COUNTRIES = frozenset({"Germany", "Austria"})
# Families whose cases admission's completeness check holds an answer to: a figure for another
# country or plan is another customer's answer. Product lines only steer the extractive answerer.
CHECKED_FAMILIES = ("country", "plan", "holiday")
# Families of cases that have rules of their own (a sale item's return window, an opened item's fee): a question
# naming one is answered by that case's figure where the passages state one, not by the general rule beside it.
NAMED_FAMILIES = ("product", "condition")

_CLOCK = re.compile(r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:a\.?m\.?|p\.?m\.?|uhr)(?!\w)|\bnoon\b|\bmittags?\b|\b24/7\b|"
                    r"\b24 hours a day\b|\brund um die uhr\b", re.I)
_SIZE = re.compile(r"\b\d+(?:[.,]\d+)?[\s-]?(?:kb|mb|gb|tb|bytes?|lbs?|kg|characters|zeichen|rows|zeilen|digits?|"
                   r"ziffern|stellen|stellig\w*)\b", re.I)
_CONTACT = re.compile(r"\+?\d[\d ()./-]{6,}\d|[\w.+-]+@[\w-]+\.[\w.]+")
# Durations and amounts said in words: "immediately", "the same day", "at no extra cost", "kostenlos".
_DURATION_WORDS = re.compile(
    r"\bimmediately\b|\bstraight away\b|\bsame day\b|\bnext (?:business )?day\b|\bnever expires?\b|"
    r"\bfor the life of\b|\bat any time\b|\bsofort\b|\bam selben tag\b|\bnächste[nr]? werktag|\bverfällt nie\b|"
    r"\bunbegrenzt\b|\bjederzeit\b", re.I)
_FREE_WORDS = re.compile(r"(?-i:\bfree\b|^Free\b)|\bno (?:extra |additional )?(?:charge|cost|fee)\b|\bat no (?:extra )?cost\b|"
                         r"\bnothing (?:extra )?to pay\b|\bdoes not charge\b|\bdon't charge\b|\bnot charge\b|"
                         r"\bkostenlos\b|\bgratis\b|\bohne aufpreis\b|\bkeine gebühr|\bnicht berechnet|\bberechnen wir \W*nicht",
                         re.I)
_NUMBER_WORD = re.compile(r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|zwei|drei|vier|fünf|sechs|"
                          r"sieben|acht|neun|zehn|zwölf)\b", re.I)


@dataclass(frozen=True)
class Asked:
    kind: str | None  # one of KINDS, or None
    cases: dict[str, str]  # family -> case ("country" -> "United Kingdom")

    @property
    def wants_fact(self) -> bool:
        return self.kind in FACT_KINDS

    def describe(self) -> str:
        for_ = " and ".join(self.cases.values())
        return f"{_ARTICLE.get(self.kind, 'a ')}{self.kind}" + (f" for {for_}" if for_ else "")


_ARTICLE = {"amount": "an ", "yesno": "a "}


def asked(question: str) -> Asked:
    return Asked(kind=kind_of(question), cases=asked_cases(question))


# A case the customer says is not theirs: "i'm not premier", "I'm not a Plus member", "ohne Plus", "kein Plus-Mitglied"
_NEGATED = re.compile(r"\b(?:not|non|no longer|ohne|kein\w*|nicht)"
                      r"(?:\s+(?:a|an|on|on the|the|in the|ein\w*|im|in|auf))?\s*-?\s*$", re.IGNORECASE)


def asked_cases(question: str) -> dict[str, str]:
    """``cases_in`` of a question, less a case it names only negated ("how much is Saturday delivery? i'm not
    premier" asks for no Premier figure; "I'm on Premier, not Pro" asks for Premier's); a town the gazetteer knows
    (``places``: "to my house in Anchorage") names its country and region."""
    found = {family: {case for case in named if not all(
        _NEGATED.search(question[:m.start()]) for m in _CASE_PATTERNS[family][case].finditer(question))}
        for family, named in all_cases_in(question).items()}
    for _, _, town in towns_in(question):
        region = town.region[0] if town.region else None
        # Alaska and Hawaii are a case of the country family too, as "shipping to Alaska" names them
        found.setdefault("country", set()).add(region if region in CASES["country"] else town.country)
        if region:
            found.setdefault("region", set()).add(region)
    return _one_each(question, found)


# each kind's last pattern: the general size and clock ones (the length and hours-span patterns come before them)
_KIND_PATTERNS_BY_NAME = dict(_KIND_PATTERNS)


def kind_of(question: str) -> str | None:
    """The kind of fact a question wants (``KINDS``), or None."""
    if YES_NO_QUESTION.match(question) and not re.search(r"\bhow\b|\bwie\b", question, re.I):
        # "is there a max file size for ...?" wants the size, as "what is the max file size" does
        return "size" if _KIND_PATTERNS_BY_NAME["size"].search(question) else "yesno"
    # a yes/no question after the sentences that tell the case ("Found my TV cheaper at another US retailer. I'm on
    # the Free plan. can you still price match it?"): the kind its own words ask for ("Is there a fee to return it?"),
    # else yes or no, never that of a word of the case
    asking = _SENTENCE.split(question.strip())
    if len(asking) > 1 and asking[-1].rstrip().endswith("?") and YES_NO_QUESTION.match(asking[-1]):
        return next((name for name, pattern in _KIND_PATTERNS if pattern.search(asking[-1])), None) or \
            kind_of(asking[-1])
    for name, pattern in _KIND_PATTERNS:
        if pattern.search(question):
            return name
    # a statement the customer asks to have confirmed ("so I get the 60 days to return it too, right?"), or a yes/no
    # question after what the customer tells ("i have the pro plan, can i add both my roommates to my team?")
    last = _LAST_CLAUSE.split(question.strip())[-1] if question.rstrip().endswith("?") else ""
    return "yesno" if _TAG_QUESTION.search(question) or (
        YES_NO_QUESTION.match(last) and not re.search(r"\bhow\b|\bwie\b", last, re.I)) else None


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LAST_CLAUSE = re.compile(r"(?<=[,.;:!])\s+|\s+[-–—]+\s+")


_TAG_QUESTION = re.compile(r",\s*(?:right|correct|yes|true|isn'?t it|don'?t i|can'?t i|won'?t i|oder|richtig|stimmt'?s?|"
                           r"nicht wahr|ja|gell)\s*\?+\s*$", re.I)


def cases_in(text: str) -> dict[str, str]:
    """The case of each family a text names, where it names exactly one ("in the UK" -> United Kingdom)."""
    return _one_each(text, all_cases_in(text))


def _one_each(text: str, found: dict[str, set[str]]) -> dict[str, str]:
    """Of the cases ``text`` names (``found``), each family's where it is one."""
    out = {}
    for family, named in found.items():
        if family == "country" and len(named) > 1:
            # a country named by name beats one a city implies: "I'm in the UK" / "we ship across the UK from Leipzig"
            named = (named_countries(text) & named) or named
        if len(named) == 1:
            out[family] = next(iter(named))
    return out


def currency_countries(currency: str) -> frozenset[str]:
    """The countries whose amounts a currency labels ("eur": Germany and Austria); empty for an unknown one."""
    return EURO_COUNTRIES if currency == "eur" else frozenset(filter(None, {CURRENCY_COUNTRY.get(currency, "")}))


def all_cases_in(text: str, *, with_currency: bool = False) -> dict[str, set[str]]:
    """Every case of each family a text names; with ``with_currency`` an amount's currency names its country, and a
    phone number's calling code its country."""
    out: dict[str, set[str]] = {}
    for family, cases in _CASE_PATTERNS.items():
        named = {case for case, pattern in cases.items() if pattern.search(text)}
        if named:
            out[family] = named
    if with_currency:
        _, _, amounts = quantities(text)
        countries = set()
        for currency, _ in amounts:
            countries |= currency_countries(currency)
        for code in _PHONE_CODE.findall(text):  # "+1 (555) 010-4480" is a number in North America
            countries |= PHONE_COUNTRIES[code]
        if countries:
            out.setdefault("country", set()).update(countries)
    return out


# A phone number's country calling code names its country, as a currency does an amount's: "phone +1 (555) 010-4480"
# is no answer to the UK's support number.
PHONE_COUNTRIES = {"1": frozenset({"United States", "Canada"}), "44": frozenset({"United Kingdom"}),
                   "49": frozenset({"Germany"}), "43": frozenset({"Austria"}), "52": frozenset({"Mexico"})}
_PHONE_CODE = re.compile(r"(?<![\w+])\+(1|44|49|43|52)(?=[\s(-]*\d)")


# A line's head, the words before its colon or bracket ("Phone UK: +44 ...", "USA Expedited (2 Werktage): 12,95 $"),
# or its first three words: a case named there is whose figure the line states, whatever else its section names
# ("Customer support: UK, Germany and Austria", "USA und Kanada").
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_HEAD = re.compile(r"^([^:()\n]{1,40}?)\s*[:(]|^((?:\S+\s+){0,2}\S+)")


def head_cases(line: str) -> dict[str, set[str]]:
    """The cases a line's head names (``_HEAD``): the line's own subject."""
    m = _HEAD.match(_LIST_MARK.sub("", line.strip().replace("**", "")))
    return all_cases_in(m.group(1) or m.group(2)) if m else {}


def line_labels(text: str, context: str = "", *, with_currency: bool = False) -> dict[str, set[str]]:
    """The cases a line is labelled with: those it or its context (its section, its list's lead-in) names, except
    that a family its head names is labelled with that only ("Phone UK: +44 20 5550 1188" under "Customer support:
    UK, Germany and Austria" is the UK's number, not Austria's)."""
    labels = all_cases_in(f"{context}\n{text}", with_currency=with_currency)
    lines = [line for line in text.split("\n") if line.strip()]
    labels.update(head_cases(lines[-1]) if lines else {})
    return labels


def labels_of(text: str, section: str = "", title: str = "", *, with_currency: bool = False) -> dict[str, set[str]]:
    """The cases a unit of an article is labelled with: those its text or its section names (an amount's
    currency its country, ``with_currency``; a case its head names alone: ``line_labels``), and for a family
    neither names, the one case the article's title names ("Acme Plus membership"; not "Free, Pro and Premier
    plans": an overview)."""
    labels = line_labels(text, section, with_currency=with_currency)
    for family, named in all_cases_in(title).items():
        if family not in labels and len(named) == 1:
            labels[family] = set(named)
    return labels


# A length of time stated as a difference from another ("take 3-5 business days longer", "2 Tage später")
# is not the length asked for: the customer still does not know how long it takes.
_RELATIVE_DURATION = re.compile(
    r"\b\d+(?:[.,]\d+)?(?:\s*[–-]\s*\d+(?:[.,]\d+)?)?\s*(?:business |working )?(?:minutes?|hours?|days?|weeks?|months?|"
    r"years?|minuten|stunden|werktagen?|tagen?|wochen|monaten?|jahren?)\s+(?:longer|later|more|länger|später|mehr)\b", re.I)


_IDENTIFIER = re.compile(r"\b[A-Za-z]{1,5}-(\d{3,})\b")


def kinds_in(text: str) -> set[str]:
    """The kinds of fact a text states: "amount", "duration", "count", "clock", "contact"."""
    numbers, measures, amounts = quantities(text)
    found = set()
    _, absolute, _ = quantities(_RELATIVE_DURATION.sub(" ", text)) if _RELATIVE_DURATION.search(text) else (0, measures, 0)
    if any(unit != "percent" for _, unit in absolute) or _DURATION_WORDS.search(text):
        found.add("duration")
    if amounts or any(unit == "percent" for _, unit in measures) or _FREE_WORDS.search(text):
        found.add("amount")
    if _SIZE.search(text):
        found.add("size")
    if _CLOCK.search(text):
        found.add("clock")
    if _CONTACT.search(text):
        found.add("contact")
    # a count is a bare number ("up to 5 photos", "8 backup codes"), not the figure of a length of time or an amount
    # ("a 2-year limited warranty" counts nothing: "How many pictures can I attach?" was answered with it, and cached)
    # nor a record's number ("a claim number in the format WC-123456", "AO-338120"): an identifier counts nothing
    identifiers = {number(n) for n in _IDENTIFIER.findall(text)}
    if numbers - {v for v, _ in measures} - {v for _, v in amounts} - identifiers or _NUMBER_WORD.search(text):
        found.add("count")
    return found


# A question that asks in words itself ("Is it free?", "Do I get it immediately?") is answered by words.
_ASKS_IN_WORDS = re.compile(r"\bfree\b|\bfor nothing\b|\bimmediately\b|\binstantly\b|\bright away\b|\bstraight away\b|"
                            r"\bsame day\b|\bkostenlos|\bgratis\b|\bumsonst\b|\bsofort\b|\b(?:selben|gleichen) tag\b", re.I)


def figure_stated(kind: str, text: str) -> bool:
    """Whether a text states an amount or a duration as a figure ("$14.99", "within 1 business day"), not only in
    words ("at no extra cost", "straight away"); other kinds: whether it states them at all."""
    if kind not in ("amount", "duration"):
        return kind in kinds_in(text)
    _, measures, amounts = quantities(_RELATIVE_DURATION.sub(" ", text))
    if kind == "amount":
        return bool(amounts) or any(unit == "percent" for _, unit in measures)
    # a "by when" question is answered by a time of day or a date as well ("Bestellungen bis 13:00 Uhr")
    return any(unit != "percent" for _, unit in measures) or bool(_CLOCK.search(text))


def asks_in_words(question: str) -> bool:
    """Whether the question itself asks in the words a rule may answer with ("Is it free?")."""
    return bool(_ASKS_IN_WORDS.search(question))


def states(kind: str | None, text: str) -> bool:
    """Whether a text states a fact of this kind (a kind that is no figure is stated by any text)."""
    if kind not in FACT_KINDS:
        return True
    return kind in kinds_in(text)


def case_fit(wanted: dict[str, str], labels: dict[str, set[str]]) -> int:
    """+1: the text is labelled with the asked case of some family; -1: it is labelled only with other
    cases of a family the question asks about; 0: neither (it names no case of those families)."""
    fit = 0
    for family, case in wanted.items():
        named = labels.get(family)
        if not named:
            continue
        if case in named:
            fit = max(fit, 1)
        elif fit == 0:
            fit = -1
    return fit


VERSION_BASE = [p.pattern for _, p in _KIND_PATTERNS] + [YES_NO_QUESTION.pattern, _CLOCK.pattern, _CONTACT.pattern,
                                                    _DURATION_WORDS.pattern, _FREE_WORDS.pattern,
                                                    sorted((f, sorted(c.items())) for f, c in CASES.items()),
                                                    sorted(PLACES.items()),
                                                    sorted(_CASED)]


# Words that say which kind of fact is wanted, not what it is about ("how much does Plus cost").
_TRIGGERS = frozenset(terms("cost costs price prices fee fees charge charges take takes long much many time times "
                            "get valid kostet kosten preis preise gebühr gebühren dauert dauer lange hoch viel viele "
                            "zeit wann gilt gültig"))
PROXIMITY_CHARS = 80  # how near a figure the question's words must be to be what it is about


def case_terms(text: str) -> set[str]:
    """The content words of the case names in a text ("United Kingdom" -> {"unite", "kingd"})."""
    words = set()
    for named in _CASE_PATTERNS.values():
        for pattern in named.values():
            for m in pattern.finditer(text):
                words |= terms(m.group(0))
    return words


def focus_terms(question: str, *, cases: bool = True) -> set[str]:
    """The question's content words that say what the fact is about: not the words asking for a kind
    ("cost", "how long"), not what it is compared with ("need it faster than standard"), and, without ``cases``,
    not the names of the asked case either."""
    compared = {t for m in (*_COMPARED.finditer(question), *_DENIED.finditer(question)) for t in terms(m.group(1))}
    return terms(question) - _TRIGGERS - compared - (set() if cases else case_terms(question))


# The thing a contact question asks for ("Gibt es dafür eine eigene E-Mail-Adresse?", "which phone number"): what
# every contact line states, so it is no sign of what the line is about ("eine Lösch- oder Datenanfrage ... von der
# E-Mail-Adresse Ihres Kontos an privacy@..." is no answer to where VAT invoice questions go). Only the asked
# thing's noun phrase: "Which address do your emails come from?" asks about the emails.
# Nor who answers every contact line: customer service ("whats the phone number for customer service in the UK?"
# is answered by "Customer support: UK, ...: Phone UK: ...").
_CONTACT_ASKED = re.compile(r"\b(?:e-?mail|mail)[- ]?(?:address(?:es)?|adressen?)\b|\bphone\s+numbers?\b|"
                            r"\btelefonnummer(?:n)?\b|\bmailadressen?\b|\bcustomer\s+(?:service|support|care)\b|"
                            r"\bsupport(?:\s+team)?\b|\bkunden(?:service|dienst)\b|\bwhat'?s\b|"
                            # nor the asking for it: "Unter welcher Nummer erreiche ich ...?", "which number do I call"
                            r"\bnumbers?\b|\bnummer\b|\b(?:reach|contact|call|ring|erreiche\w*|kontaktier\w*|anrufen|"
                            r"rufe)\b|\bunter\b|\bwelche[rsmn]?\b|\bwhich\b|\bwhat\b", re.IGNORECASE)


def about_terms(question: str, kind: str | None) -> set[str]:
    """What the asked fact is about (``focus_terms`` without the cases' names), not counting, for a contact
    question, the contact it asks for."""
    about = focus_terms(question, cases=False)
    if kind == "contact":
        about -= {t for m in _CONTACT_ASKED.finditer(question) for t in terms(m.group(0))}
    return about


# What a question compares the asked thing with: "faster than standard", "instead of Express", "schneller als Standard"
_COMPARED = re.compile(r"(?:\b(?:than|instead of|rather than|statt|anstatt)|\w+er\s+als)\s+"
                       r"(?:the\s+|der\s+|die\s+|das\s+|dem\s+|den\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)


# What the customer says is not their case: "I paid with PayPal, not a card", "per Überweisung, nicht mit Karte"
_DENIED = re.compile(r"(?:\b(?:not|never)\s+(?:with\s+|by\s+|via\s+|through\s+|using\s+|on\s+)?(?:a\s+|an\s+|the\s+|my\s+)|"
                     r"\bnicht\s+(?:mit|per|über|via|auf)\s+(?:der\s+|die\s+|das\s+|dem\s+|den\s+|einer\s+|einem\s+|"
                     r"meiner\s+|meinem\s+)?)([^\W\d_][\w-]*)", re.IGNORECASE)


# A text about one plan's or membership's own terms names it first: "Premier: free Standard shipping",
# "Plus members get ...", "Plus costs $49", "Pro-Mitglieder ..."; not "Phone (Pro and Premier plans): ..."
# (what the plans include) nor "Free Standard shipping" (no plan at all).
_PLAN_SUBJECT = re.compile(r"^[\s•*-]*(?:Acme[\s-]+)?(Plus|Pro|Premier|Free(?=\s*:|\s+plan\b))\b")
# Special cases a sentence can be about that a question must name to be asked about: "A replacement
# item keeps ... 6 months" is not the warranty on products, "Items bought ... during a sale can be
# returned within 14 days" is not the return window.
SPECIAL_FAMILIES = ("product", "region")


def plan_subject(text: str) -> str | None:
    """The plan or membership whose own figure a text states ("Premier: $19 per month" -> Premier)."""
    m = _PLAN_SUBJECT.match(text)
    if not m:
        return None
    return "Free plan" if m.group(1) == "Free" else m.group(1)


# Clauses of a unit, for finding the one that states a figure: a stop before a capital ends one, even
# after a figure ("$24.95. Not available to Alaska or Hawaii"), which ends no sentence for
# ``split_sentences`` ("am 3. Mai"); so does a semicolon ("24,95 $; nicht an ... Alaska oder Hawaii").
_CLAUSE = re.compile(r"(?<=[.;])\s+(?=[A-ZÄÖÜ])|;\s+")


def special_fit(wanted: Asked, text: str) -> int:
    """-1 when a unit states the figure of a plan, or of a special case (a product line), that the
    question does not ask about ("Premier: $19 per month" for the Pro plan's price, "Items bought on
    sale can be returned within 14 days" for the return window); +1 for the asked plan's own figure."""
    plan = plan_subject(text)
    if plan:
        return 1 if wanted.cases.get("plan") == plan else -1
    # the sentences that state the asked kind say whose figure it is: "Overnight: $24.95. Not available to
    # Alaska or Hawaii." states the US figure; "Canada: all provinces. Deliveries to Yukon take 3-5 days longer."
    # states only Yukon's
    clauses = _CLAUSE.split(text) or [text]
    stating = [s for s in clauses if wanted.kind in FACT_KINDS and wanted.kind in kinds_in(s)] or [text]
    for family in SPECIAL_FAMILIES:
        if family not in wanted.cases and all(all_cases_in(s).get(family) for s in stating):
            return -1
    return 1


def foreign_plan(wanted: Asked, question: str, heading: str, known_names: str = "") -> bool:
    """Whether a section (``heading``: "Article title — Section") belongs to an article about one plan or
    membership ("Acme Plus membership") that the question neither names nor asks about in the title's
    other words ("membership", "Mitgliedschaft"): its figures are that plan's, not the asker's ("Free
    Standard shipping on every order" is no answer to "From what order value is standard shipping free?")."""
    title = heading.split(" — ")[0]
    plan = cases_in(title).get("plan")
    if plan is None or wanted.cases.get("plan") == plan:
        return False
    own_words = terms(title) - case_terms(title) - terms(known_names)
    return not own_words & terms(question)


# An instruction, a step of a procedure: "To join, go to ...", "Ship the item within 10 days", "Öffnen Sie ...".
_INSTRUCTION = re.compile(
    r"^[\s•*-]*(?:\d{1,3}[.)]\s*)?(?:to \w+[^,]{0,40},\s*)?(?P<verb>go|click|open|choose|select|enter|sign in|tick|type|pack|"
    r"drop|take|make sure|ship|send|bring|mail|print|upload|describe|zum \w+ öffnen|öffnen sie|klicken sie|"
    r"wählen sie|geben sie|melden sie|verpacken sie|schicken sie|senden sie)\b", re.I)


def instruction_verb(text: str) -> str | None:
    """The verb a text instructs with ("ship", "pack"), or None for a text that is no instruction."""
    m = _INSTRUCTION.match(text)
    return m.group("verb").lower() if m else None


def figure_spans(kind: str | None, text: str) -> list[tuple[int, int]]:
    """Where in a text its figures of a kind are (character spans)."""
    if kind == "clock":
        return [m.span() for m in _CLOCK.finditer(text)]
    if kind == "size":
        return [m.span() for m in _SIZE.finditer(text)]
    if kind == "contact":
        return [m.span() for m in _CONTACT.finditer(text)]
    spans = []
    for m in QUANTITY.finditer(text):
        unit = UNITS.get((m.group("unit") or "").lower())
        money = m.group("cur1") or m.group("cur2") or unit == "percent"
        if kind == "count" or (kind == "amount" and money) or (kind == "duration" and unit and unit != "percent"):
            spans.append(m.span())
    if kind == "amount":
        spans += [m.span() for m in _FREE_WORDS.finditer(text)]
    if kind == "duration":
        spans += [m.span() for m in _DURATION_WORDS.finditer(text)]
    return spans


def proximity(focus: set[str], kind: str | None, text: str) -> float:
    """The largest share of the focus words found within PROXIMITY_CHARS of one figure of the kind
    (the figure's own words left out: "at no extra cost" is no cost named beside a figure)."""
    if not focus:
        return 0.0
    best = 0
    for start, end in figure_spans(kind, text):
        near = terms(f"{text[max(0, start - PROXIMITY_CHARS):start]} {text[end:end + PROXIMITY_CHARS]}")
        best = max(best, len(focus & near))
    return best / len(focus)


def trigger_terms(question: str) -> set[str]:
    """The question's words asking for the kind of fact ("cost", "kostet", "fee"): said beside a figure,
    they say it is the figure asked for ("Plus costs $49")."""
    return terms(question) & _TRIGGERS




# Words that say what nearly every article of a shop's help centre is about (an article, an item,
# an order, a product, the account): sharing one of them with the question is no evidence that a
# sentence is about what the question asks ("Was kostet der Umtausch eines Artikels?" is not answered
# by "... schicken wir den Artikel ... zurück oder recyceln ihn kostenlos").
GENERIC_TERMS = frozenset(terms(
    "article articles item items product products order orders purchase purchases account customer customers "
    "artikel artikels produkt produkte produkts bestellung bestellungen kauf käufe konto kunde kunden ein eine eines"))


def specific_terms(words: set[str]) -> set[str]:
    """The words of a set that are not generic (``GENERIC_TERMS``); all of them if every one is."""
    return (words - GENERIC_TERMS) or words


# The event a duration question asks the length of: "How long does it take to repair ...", "How long
# does delivery take", "How long does Acme take to ship", "Wie lange dauert eine Reparatur", "Wie lange dauert es, bis die Erstattung ...".
_EVENT = re.compile(
    r"\bhow long (?:does|will|did) it (?:usually |normally )?take (?:for (?:\w+ ){1,3})?to (?P<verb>\w+)|"
    r"\bhow long (?:does|do|will) (?:(?:a|an|the|my|your) )?(?P<subject>\w+(?: \w+)?)(?: (?:to|in|for|of|from) (?:\w+ ){0,3}?\w+)? (?:usually |normally )?take\b(?: to (?P<verb2>\w+))?|"
    r"\bwie lange (?:dauert|braucht|brauchen) (?:es,? bis (?:(?:der|die|das|mein|meine|ich) )?)?(?:(?:der|die|das|ein|eine|mein|meine) )?"
    r"(?P<noun>\w+)", re.I)
# A duration stated as the length of a thing, not of an event: "a 2-year limited warranty", "a
# 12-month warranty", "eine Garantie von 2 Jahren", "nach Ablauf der 2-jährigen Garantie".
_THING_DURATION = re.compile(
    r"\b\d+[-‑](?:year|month|week|day|jährige[nr]?|monatige[nr]?|tägige[nr]?)\s+(?:(?P<adj>[a-zäöüß]+)\s+)?"
    r"(?P<thing>[a-zäöüß]+)|"
    r"\b(?P<thing2>[a-zäöüß]+)\s+(?:of|von)\s+\d+(?:[–-]\d+)?\s+(?:years?|months?|weeks?|days?|jahren|monaten|wochen|tagen)\b",
    re.I)


# "How long until I get it?", "how long before we receive the refund?": the event is receiving it.
_RECEIVING = re.compile(r"\bhow long (?:until|till|before) (?:i|we) (?:will |can |would )?(?:get|receive|have)\b", re.I)


def asked_event(question: str) -> set[str]:
    """The words of the event a duration question asks the length of ("repair", "delivery"), or none."""
    if _RECEIVING.search(question):
        return terms("receive")
    m = _EVENT.search(question)
    if not m:
        return set()
    # "How long does Acme take to ship?" asks how long shipping takes, not Acme
    return terms(m.group("verb") or m.group("verb2") or m.group("subject") or m.group("noun") or "") - GENERIC_TERMS


def duration_things(text: str) -> list[set[str]]:
    """For each duration a text states as a thing's length, the words naming that thing."""
    plain = text.replace("*", "")
    return [terms(" ".join(g for g in (m.group("adj"), m.group("thing"), m.group("thing2")) if g))
            for m in _THING_DURATION.finditer(plain)]


# The customer's own action a deadline question asks about: "How long do I have to drop off the parcel?", "By when
# must I pay?", "Bis wann muss ich das Rücksendepaket abgeben?", "Wie viele Tage habe ich Zeit, ... abzugeben?". Its
# answer is the sentence that gives that action's deadline ("drop the parcel off within 7 days", "geben Sie das Paket
# innerhalb von 7 Tagen ab"), not another step's ("30 days ... to start a return").
_ACTION_EN = re.compile(
    r"\b(?:how long|how many (?:days|hours|weeks)|how much time) (?:do|will) (?:i|we) (?:still )?(?:have|get)(?: left)? "
    r"to (?:still )?(?P<v1>\w+)(?: (?:it|them|this|that|my \w+|the \w+))?(?: (?P<p1>off|back|in|up))?\b|"
    r"\bhow long have (?:i|we) got to (?P<v2>\w+)(?: (?:it|them|this|that|my \w+|the \w+))?(?: (?P<p2>off|back|in|up))?\b|"
    r"\b(?:by|until|till) when (?:do|must|should|can|have) (?:i|we) (?:to )?(?P<v3>\w+)(?: (?:it|them|this|that|my \w+|"
    r"the \w+))?(?: (?P<p3>off|back|in|up))?\b", re.I)
_ACTION_DE = re.compile(r"\b(?:bis wann|wie lange|wie viele (?:tage|stunden|wochen)|wie viel zeit|innerhalb welcher frist)\b"
                        r"(?P<rest>[^?]*\b(?:muss|müssen|kann|können|darf|dürfen|soll|sollen|habe|haben|hab)\b[^?]*)", re.I)
_DE_PARTICLE = re.compile(r"^(zurück|weg|ab|an|auf|aus|ein|mit|nach|vor|her|hin)(?:zu)?(\w{3,})$")
# Words for one customer action: sending an item back is returning it.
_ACTION_SYNONYMS = (frozenset({"return", "send back", "sent back", "ship back", "mail back", "zurückgeben", "zurücksenden",
                               "zurückschicken", "rücksendung"}),
                    frozenset({"drop off", "abgeben", "bring"}),
                    frozenset({"ring", "call", "phone", "anrufen", "telefon"}),
                    frozenset({"turn on", "switch on", "enable", "activate", "set up", "einschalten", "aktivieren"}),
                    frozenset({"type in", "enter", "eintippen", "eingeben"}),
                    frozenset({"fix", "repair", "correct", "change", "update", "edit", "switch", "modify", "reparieren",
                               "korrigieren", "ändern"}),
                    frozenset({"turn off", "switch off", "disable", "deactivate", "ausschalten", "deaktivieren"}))
_ACTION_AUX = frozenset({"be", "get", "wait", "go", "do", "make", "haben", "sein", "werden", "warten", "lassen", "zeit"})


def asked_action(question: str) -> str:
    """The customer's action whose deadline a question asks ("drop off", "pay", "abgeben"), or ""."""
    m = _ACTION_EN.search(question)
    if m:
        verb = next(g for g in (m.group("v1"), m.group("v2"), m.group("v3")) if g).lower()
        particle = next((g for g in (m.group("p1"), m.group("p2"), m.group("p3")) if g), "")
        return "" if verb in _ACTION_AUX else f"{verb} {particle.lower()}".strip()
    m = _ACTION_DE.search(question)
    return _german_clause_verb(m.group("rest"), _ACTION_AUX) if m else ""  # "... abgeben", "... zurückzugeben"


def _german_clause_verb(clause: str, excluded: frozenset[str]) -> str:
    """The verb that ends a German clause, its "zu" taken out ("zurückzugeben" -> "zurückgeben"), or "" when the
    clause ends in no lower-case infinitive or in one of ``excluded``."""
    words = re.findall(r"[^\W\d_]+", clause)
    verb = words[-1] if words else ""
    if verb.islower() and verb.endswith(("en", "rn", "ln")) and verb not in excluded:
        p = _DE_PARTICLE.match(verb)
        return f"{p.group(1)}{p.group(2)}" if p else verb
    return ""


def _action_forms(action: str) -> list[tuple[str, str]]:
    """(particle, stem) pairs an action may be written as: "abgeben" as "abgeb…" or "geb…" with "ab" apart."""
    forms = []
    for alias in next((group for group in _ACTION_SYNONYMS if action in group), {action}):
        verb, *rest = alias.split()
        p = _DE_PARTICLE.match(verb)
        # "ship back", "sent back": the particle too, or any "Ship the item within 10 days" would be the return
        forms.append(("back" if rest == ["back"] else "", verb[:max(4, len(verb) - 2)]))
        if p:
            forms.append((p.group(1), p.group(2)[:max(3, len(p.group(2)) - 2)]))
    return forms



# The customer's own action a yes/no question asks about: "If I delete my account, can I sign up again later with the
# same email?" asks whether they can sign up, "Muss ich die Uhr erst einschicken, bevor ...?" whether they must send
# it in. A help centre that speaks of that action nowhere in what it retrieved does not answer the question, whatever
# its passages say of the account or the watch.
_YESNO_ACTION_EN = re.compile(
    r"(?:^|[.!?;:,–—]\s*|\s-\s+)\s*(?:and\s+|so\s+|but\s+|then\s+|also\s+|ok\s+|okay\s+|hi\s+|hey\s+)?"
    r"(?:can|could|may|do|does|will|would|should|must|shall)\s+(?:i|we|you|u)\s+(?:guys\s+)?(?:still\s+|also\s+|just\s+|then\s+|"
    r"ever\s+|really\s+|even\s+)?(?:have\s+to\s+|need\s+to\s+|be\s+able\s+to\s+|get\s+to\s+)?(?P<verb>[a-z]+)"
    r"(?:\s+(?:it|them|this|that|one|my\s+\w+|the\s+\w+))?(?:\s+(?P<particle>up|off|back|in|on|out|over|down)(?![\w-]))?\b", re.I)
_YESNO_ACTION_DE = re.compile(r"(?:^|[.!?;:,–—]\s*|\s-\s+)\s*(?:und\s+|aber\s+|also\s+|ok\s+|hallo\s+)?"
                              r"(?:kann|können|muss|müssen|darf|dürfen|soll|sollen)\s+(?:ich|wir|man)\b(?P<rest>[^?,;.]*)",
                              re.I)
# Verbs that say too little of an action to look for ("can I get ...", "do I have ...", "can you do that"), and
# those whose object is the asked thing, not the verb ("can I use PayPal", "can I pay with Klarna")
_YESNO_GENERIC = _ACTION_AUX | frozenset({
    "have", "use", "see", "need", "want", "know", "ask", "find", "take", "give", "keep", "come", "put", "let", "try",
    "pay", "buy", "order", "add", "set", "expect", "receive", "rely", "count", "check", "choose", "pick", "select",
    "not", "also", "still", "bekommen", "kriegen", "machen", "tun", "nutzen", "benutzen", "verwenden", "zahlen",
    "bezahlen", "bestellen", "kaufen", "erhalten", "sehen", "wissen", "fragen", "wählen", "auswählen", "nehmen", "holen",
    "request", "anfordern", "beantragen",
    # what happens to the customer, not what they do ("do I lose my store credit if I switch my email?")
    "lose", "lost", "verlieren",
    # "do you offer / sell / accept ...": what is asked is the thing offered (``retrieval.subject.unstated_thing``)
    "offer", "sell", "provide", "carry", "stock", "accept", "support", "allow", "anbieten", "akzeptieren"})


_ON_VERBS = frozenset({"turn", "switch", "log", "put", "try"})


def speaks_of_action(action: str, text: str) -> bool:
    """Whether a text speaks of a customer's action as ``holds_action`` reads it, an English particle close after
    its verb ("sign up", "signed up for"; not "sign in ... up to 30 days")."""
    verb, _, particle = action.partition(" ")
    if not particle or not re.fullmatch(r"[a-z]+", verb):
        return holds_action(action, text)
    words = [w.lower() for w in re.findall(r"[^\W\d_]+", text)]
    stem = verb[:max(4, len(verb) - 2)]
    return any(w.startswith(stem) and particle in words[i + 1:i + 4] for i, w in enumerate(words)) or any(
        holds_action(alias, text) for alias in next((g for g in _ACTION_SYNONYMS if action in g), ()) if alias != action)


def yesno_action(question: str) -> str:
    """The customer's own action a yes/no question asks about ("sign up", "einschicken"), or "" (a verb that says
    little: "can I get", "can I use"; or no action of the customer's: "does the warranty cover ...")."""
    asking = question.split(REWRITE_MARK, 1)[0]
    m = _YESNO_ACTION_EN.search(asking)
    if m:
        verb = m.group("verb").lower()
        particle = (m.group("particle") or "").lower()
        if verb in _YESNO_GENERIC or len(verb) < 3:
            return ""
        if particle == "on" and verb not in _ON_VERBS:  # "ring on Saturday": a day, not "turn on"
            particle = ""
        return f"{verb} {particle}".strip()
    m = _YESNO_ACTION_DE.search(asking)
    return _german_clause_verb(m.group("rest"), _YESNO_GENERIC) if m else ""  # "... erst einschicken"


# The customer's action a question makes its condition: "If I refuse the delivery, do I get the whole amount back?",
# "Und wenn ich die Annahme verweigere, bekomme ich dann ...?". The answer is the rule for that action, so a passage
# that never speaks of it (the customs article's "no further fees on delivery") answers another situation. A
# condition that only tells the customer's state or case ("if I'm in Canada", "wenn ich Plus-Mitglied bin", "if I
# upgrade to Premier") is no such action: the case checks read it.
_CONDITION_EN = re.compile(
    r"\b(?:if|once|when)\s+(?:i|we)\s+(?:just\s+|simply\s+|then\s+|already\s+|still\s+|now\s+)?(?:don'?t\s+|do not\s+|"
    r"didn'?t\s+|never\s+)?(?P<verb>[a-z]+)(?:\s+(?:it|them|this|that|the\s+\w+|my\s+\w+|an?\s+\w+))?"
    # the rest of the condition's clause: a case it names ("if I ship it to Canada") makes it the customer's case
    r"(?:\s+(?P<particle>up|off|back|in|out|over|down)(?![\w-]))?[^?,;.!–—]*", re.I)
_CONDITION_DE = re.compile(r"\b(?:wenn|falls|sobald)\s+(?:ich|wir|man)\b(?P<rest>[^?,;.!:–—]*)", re.I)
# what a condition's verb may be without naming an action: a state, a possession, a plan or a place
_CONDITION_STATES = frozenset({
    "am", "m", "was", "were", "had", "has", "live", "lived", "living", "move", "moved", "moving", "stay", "staying",
    "upgrade", "upgraded", "downgrade", "switch", "switched", "join", "joined", "become", "became", "sign", "signed",
    "bought", "ordered", "paid", "got", "used", "chose", "picked", "selected", "wanted", "needed", "decide", "decided",
    "think", "like", "prefer", "happen", "forgot", "forget", "miss", "missed", "already", "also", "only", "really",
    "bin", "war", "wäre", "hätte", "habe", "hatte", "wohne", "wohnen", "lebe", "leben", "ziehe", "ziehen", "werde",
    "werden", "möchte", "möchten", "will", "wollen", "brauche", "brauchen", "bestelle", "kaufe", "zahle", "bezahle",
    "nutze", "benutze", "wähle", "nehme", "bekomme", "kriege", "haben", "sind", "seid"})


# A purpose the customer tells and the question points back at ("Ich will die 2FA wieder ausschalten. Was brauche ich
# dafür?", "I want to turn off 2FA. What do I need for that?"): the action is the question's condition as much as an
# "if" clause's is
_PURPOSE_EN = re.compile(
    r"\b(?:i|we)\s*(?:want|need|'d like|would like|am trying|'m trying|are trying|'re trying)\s+to\s+"
    r"(?:just\s+|simply\s+|now\s+)?(?P<verb>[a-z]+)(?:\s+(?:it|them|this|that|the\s+\w+|my\s+\w+|an?\s+\w+))?"
    r"(?:\s+(?P<particle>up|off|back|in|out|over|down|on)(?![\w-]))?[^?,;.!–—]*", re.I)
_PURPOSE_DE = re.compile(r"\b(?:ich|wir)\s+(?:will|möchte|möchten|wollen|würde gerne?|würden gerne?)\s+"
                         r"(?P<rest>[^?,;.!:–—]*)", re.I)
_POINTS_AT_PURPOSE = re.compile(r"\b(?:for that|for this|to do that|to do this|to do so|dafür|dazu|hierfür|hierzu)\b",
                                re.I)


def condition_action(question: str) -> str:
    """The customer's action a question's condition names ("refuse", "verweigern"), or "" (none, or a state); or the
    purpose the customer tells and the question points back at ("Ich will ... ausschalten. Was brauche ich dafür?")."""
    asking = question.split(REWRITE_MARK, 1)[0]
    action = _condition_action(asking, _CONDITION_EN, _CONDITION_DE)
    if action or not _POINTS_AT_PURPOSE.search(asking):
        return action
    return _condition_action(asking, _PURPOSE_EN, _PURPOSE_DE)


def _condition_action(asking: str, english: re.Pattern, german: re.Pattern) -> str:
    m = english.search(asking)
    if m:
        verb = m.group("verb").lower()
        if verb in _YESNO_GENERIC or verb in _CONDITION_STATES or len(verb) < 4 or asked_cases(m.group(0)):
            return ""
        return f"{verb} {(m.group('particle') or '').lower()}".strip()
    m = german.search(asking)
    if not m or asked_cases(m.group("rest")):
        return ""
    words = re.findall(r"[^\W\d_]+", m.group("rest"))
    verb = words[-1] if words else ""
    if not (verb.islower() and len(verb) >= 5) or verb in _CONDITION_STATES or verb in _YESNO_GENERIC:
        return ""
    # a finite verb ends its clause ("verweigere", "zurückschicke"): the infinitive is what the passages' stems match
    if not verb.endswith(("en", "rn", "ln")):  # "verweigere", "verweigert" -> "verweigern"; "abholt" -> "abholen"
        base = verb[:-1] if verb.endswith(("e", "t")) else verb
        base = base[:-1] if verb.endswith("et") else base
        verb = base + ("n" if base.endswith(("er", "el")) else "en")
    return _german_clause_verb(verb, _YESNO_GENERIC)  # its particle joined as the yes/no action's is


def holds_action(action: str, text: str, *, before_figure: bool = False) -> bool:
    """Whether a text speaks of the customer's action ("drop the parcel off", "geben Sie das Paket ... ab"); with
    ``before_figure``, before its first length of time, as the deadline's own verb ("drop the parcel off within 7
    days", not "After 7 days ... you need to start a new return")."""
    if not action:
        return False
    raw = [w.lower() for w in re.findall(r"[^\W\d_]+", text)]  # a German verb's particle ends the clause: "geben ... ab"
    if before_figure:
        spans = figure_spans("duration", text)
        text = text[:spans[0][0]] if spans else ""
    head = [w.lower() for w in re.findall(r"[^\W\d_]+", text)]
    forms = {w for w in head} | {f"{p.group(1)}{p.group(2)}" for p in map(_DE_PARTICLE.match, head) if p}
    return any(any(w.startswith(stem) for w in forms) and (not particle or particle in raw)
               for particle, stem in _action_forms(action))


# A question for a minimum ("the minimum order total for bank transfer", "the least I can spend", "Mindestbestellwert") is
# answered by an amount stated as a lower bound that includes it ("for orders of $250 or more", "from $150", "mindestens
# 50 €"), where the passages have one; an amount something must exceed ("more than $500 need extra verification") is
# another rule's threshold.
MINIMUM_QUESTION = re.compile(r"\bminimum\b|\bmin\.|\bthe least\b|\bsmallest\b|\blowest\b|\bat least\b|\bmindest|"
                              r"\bwenigsten|\bkleinste", re.I)
_MONEY = r"(?:(?:ca\$|mx\$|us\$|[$€£])\s?\d[\d.,]*|\d[\d.,]*\s?(?:ca\$|mx\$|us\$|[$€£]))"
_LOWER_BOUND = re.compile(rf"{_MONEY}(?:\s*\([^)]*\))?\s+(?:or more|or above|oder mehr)\b|"
                          rf"\b(?:at least|(?<!no )minimum(?: of| order(?: value| total)? of)?|from|starting at|mindestens|ab|"
                          rf"mindestbestellwert(?: von)?)\s+{_MONEY}", re.I)


def asks_minimum(question: str) -> bool:
    return bool(MINIMUM_QUESTION.search(question))


def states_minimum(text: str) -> bool:
    """Whether a text states an amount as an inclusive lower bound ("$250 or more", "from $150 to $10,000")."""
    return bool(_LOWER_BOUND.search(text))


# What a `name` question asks the name of, where the help centre names such things: a carrier ("Which carrier ...",
# "Who delivers ...", "Mit welchem Paketdienst ...") or an app. An answer names one when its line, or the section it is
# quoted from, speaks of carriers ("Carriers and tracking numbers") or apps, or names a company with what it does
# ("Standard with DHL", "through Estafeta", "UPS in the US", "Canada Post in Canada").
NAME_HEADS = {
    "carrier": re.compile(r"\b(?:carriers?|couriers?|(?:delivery|shipping|parcel|postal) (?:company|companies|service|partner)|"
                          r"paketdienst\w*|versanddienstleister\w*|zusteller\w*|lieferdienst\w*|transportunternehmen|"
                          r"who (?:delivers|ships|brings|picks up)|wer (?:liefert|stellt|bringt))\b", re.I),
    "app": re.compile(r"\bapps?\b|-app\b", re.I),
}
_SPEED_WORDS = r"(?!(?:Standard|Express|Expedited|Overnight|Freight|Plus|Pro|Premier)\b)"
_NAMED_COMPANY = re.compile(
    rf"\b(?:with|through|by|via|mit|per|über)\s+{_SPEED_WORDS}(?:[A-Z]{{2,}}|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\b|"
    rf"\b{_SPEED_WORDS}(?:[A-Z]{{2,}}|[A-Z][a-z]+\s+[A-Z][a-z]+)\s+(?:in|for|für)\s+(?:the\s+|den\s+)?[A-ZÄÖÜ]|"
    rf"\b{_SPEED_WORDS}(?:[A-Z]{{2,}}|[A-Z][a-z]+\s+[A-Z][a-z]+)\s+(?:\w+\s+)?(?:delivers|deliver|ships|stellt|liefert)\b")


def name_head(question: str) -> str:
    """What a name question asks the name of ("carrier", "app"), or "" for another or no name question."""
    if kind_of(question) != "name" and not NAME_HEADS["carrier"].search(question):
        return ""
    return next((head for head, pattern in NAME_HEADS.items() if pattern.search(question)), "")


def names_head(head: str, text: str, heading: str = "", company: str = "") -> bool:
    """Whether a text names what a name question asks for: an app it speaks of, a company it names as a carrier
    ("Standard with DHL", "Canada Post delivers ..."), or any line under a heading about carriers ("Carriers and
    tracking numbers"); not a sentence that only says "the carrier" ("der Zusteller verlangt ... keine Gebühren")."""
    if not head:
        return True
    if head == "carrier":  # the shop itself is no carrier: "Acme Outfitters liefert in fünf Länder"
        own = text.replace(company, " ") if company.strip() else text
        return bool(NAME_HEADS[head].search(heading)) or bool(_NAMED_COMPANY.search(own))
    return bool(NAME_HEADS[head].search(f"{heading}\n{text}"))


# The day of the week a question about hours asks for ("on Sundays", "sonntags"): a line answers it when it names
# that day, a range of days holding it ("Monday to Saturday", "dienstags bis samstags") or every day ("24/7").
_DAYS = {day: i for i, names in enumerate((
    ("monday", "montag"), ("tuesday", "dienstag"), ("wednesday", "mittwoch"), ("thursday", "donnerstag"),
    ("friday", "freitag"), ("saturday", "samstag", "sonnabend"), ("sunday", "sonntag"))) for day in names}
_DAY = re.compile(r"\b(" + "|".join(_DAYS) + r")(?:s|e|en)?\b", re.I)
_DAY_RANGE = re.compile(r"\b(" + "|".join(_DAYS) + r")s?\s*(?:to|through|until|bis|–|-)\s*(" + "|".join(_DAYS) + r")s?\b",
                        re.I)
_EVERY_DAY = re.compile(r"\bevery day\b|\bdaily\b|\b24/7\b|\b7 days a week\b|\btäglich\b|\bjeden tag\b|"
                        r"\brund um die uhr\b|\baround the clock\b|\b24 hours a day\b", re.I)


def asked_day(question: str) -> int | None:
    """The day of the week (0 = Monday) a question names, where it names exactly one."""
    days = {_DAYS[m.group(1).lower()] for m in _DAY.finditer(question)}
    return days.pop() if len(days) == 1 else None


def covers_day(day: int, text: str) -> bool:
    """Whether a text states something for a day of the week: by its name, a range holding it, or every day."""
    if _EVERY_DAY.search(text):
        return True
    for m in _DAY_RANGE.finditer(text):
        first, last = _DAYS[m.group(1).lower()], _DAYS[m.group(2).lower()]
        if first <= day <= last or (first > last and (day >= first or day <= last)):
            return True
    return any(_DAYS[m.group(1).lower()] == day for m in _DAY.finditer(_DAY_RANGE.sub(" ", text)))


# Leaving the warehouse is not arriving: "Orders placed later ... are dispatched on the next business day"
# says when an order leaves, not how long shipping (to the customer) takes.
_DISPATCH = re.compile(r"\bdispatch\w*|\bleaves? (?:our |the )?(?:warehouse|[A-Z]\w+)\b|\bpacked\b|\bverlässt\b|"
                       r"\bverpackt\b|\bverlassen\b")


# A length said as what something takes: "The tracking number can take up to 48 hours", "A carrier
# investigation takes up to 5 business days", "Die Prüfung dauert 3 Werktage": the subject is whose length it is.
_TAKES = re.compile(
    r"(?P<subject>(?:[A-Za-zÄÖÜäöüß-]+\s+){1,3}?)(?:can |may |usually |normally |will |often |typically )?"
    r"(?:takes?|dauert|dauern)\s+(?:up to |about |around |roughly |at least |bis zu |etwa |ungefähr |mindestens )?\d", re.I)
_PRONOUNS = frozenset({"it", "this", "that", "es", "das", "dies"})


def _taken_by_another(event: set[str], sentence: str) -> bool:
    """Whether the sentence's length is what a named subject other than the asked event takes, and
    it states no other length."""
    m = _TAKES.search(sentence)
    if not m:
        return False
    words = m.group("subject").split()
    if not words or words[-1].lower() in _PRONOUNS:
        return False
    subject = terms(m.group("subject")) - GENERIC_TERMS
    rest = sentence[:m.start()] + " " + sentence[m.end():]
    return bool(subject) and not same_event(subject, event) and not _free_duration(_TAKES_TAIL.sub(" ", rest))


# Words for one event: "How long does delivery take?" is answered by "Shipping takes ...".
_EVENT_SYNONYMS = {t: group for group, words in (
    ("ship", "ship shipping deliver delivery deliveries send parcel versand versendet lieferung liefern zustellung "
             "arrive arrives receive receives email emails emailed"),
    ("refund", "refund refunds erstattung erstattungen rückerstattung money geld"),
    ("repair", "repair repairs fix reparatur reparaturen"),
    # a billing period: "if I pay yearly" is "$190 per year with annual billing"
    ("year", "year years yearly annual annually jahr jahre jährlich jährliche jährlichen"),
    ("month", "month months monthly monat monate monatlich monatliche monatlichen")) for t in terms(words)}


def same_event(a: set[str], b: set[str]) -> bool:
    """Whether two sets of words share a word, or words for the same event (shipping, delivery)."""
    return bool({_EVENT_SYNONYMS.get(t, t) for t in a} & {_EVENT_SYNONYMS.get(t, t) for t in b})


_TAKES_TAIL = re.compile(r"^[\d.,]*(?:\s*[–-]\s*\d+)?\s*(?:business |working )?\w+", re.I)


# An instruction to wait is the customer's waiting time, not how long the asked event takes.
_WAIT = re.compile(r"\bwait (?:for |up to |at least |another )?\d+(?:\s*[–-]\s*\d+)?\s*(?:business |working )?\w+|"
                   r"\bwarten sie (?:daher |bitte |noch |dann )?(?:bis zu |mindestens )?\d+(?:\s*[–-]\s*\d+)?\s*\w+", re.I)
_WAIT_ASKED = re.compile(r"\bwait|\bwarten", re.I)


# What the customer may or must do by a deadline ("you can ask until the 3rd day", "Sie können ... bis"): the
# customer's deadline, not how long the asked event takes, unless it is that event or what the customer
# receives ("you can expect delivery within 5 days").
_CUSTOMER_DEADLINE = re.compile(r"\byou (?:can|may|must|have to|need to) (?:still |also |only )?(?P<verb>\w+)|"
                                r"\b(?:können|müssen|dürfen) Sie (?:\w+ ){0,4}?(?P<verb2>\w+en)\b", re.I)
_RECEIVING_VERBS = frozenset({"expect", "get", "receive", "see", "track", "erwarten", "erhalten", "bekommen"})


def _customers_deadline(event: set[str], sentence: str) -> bool:
    m = _CUSTOMER_DEADLINE.search(sentence)
    if not m:
        return False
    verb = (m.group("verb") or m.group("verb2") or "").lower()
    return verb not in _RECEIVING_VERBS and not same_event(terms(verb), event)


# What the company does to a named kind of thing within a time: "We answer privacy requests within 45 days" is how long
# privacy requests take, no answer to how long an e-mail to support takes ("We answer within 2 business days"). Only an
# object of two words whose first names the kind ("privacy requests", "warranty claims"); "most orders", "your
# parcel" name no other thing.
_DONE_WITHIN = re.compile(r"\bwe (?:usually |normally |typically |aim to |try to |will |can )?(?P<verb>[a-z]+)(?: to)? "
                          r"(?P<kind>[a-z-]+) (?P<head>[a-z-]+) (?:within|in) (?:up to |about |around )?\d+(?:\s*[–-]\s*\d+)?\s*"
                          r"(?:business |working )?[a-z]+", re.I)
_NO_KIND = frozenset("a an the your our their its my his her this that these those all most many some any every each "
                     "it them you us new other more".split())


def _done_to_another(question: str, sentence: str) -> bool:
    """Whether a sentence's only length is what the company does to a named kind of thing the question never names."""
    m = _DONE_WITHIN.search(sentence)
    if not m or m.group("kind").lower() in _NO_KIND:
        return False
    named = terms(m.group("kind")) - GENERIC_TERMS
    return bool(named) and not named & terms(question) and not _free_duration(sentence[:m.start()] + sentence[m.end():])


def duration_of_another_thing(question: str, sentence: str) -> bool:
    """Whether every duration a sentence states is the length of a thing (the warranty) that is not the
    event the question asks about ("How long does it take to repair ...": "a 2-year limited warranty"),
    or the time an order leaves the warehouse when the question asks how long another event takes."""
    event = asked_event(question)
    if not event:
        return False
    if _DISPATCH.search(sentence) and not _DISPATCH.search(question) and not event & terms(sentence):
        return True
    if _taken_by_another(event, sentence.replace("*", "")):
        return True
    if _WAIT.search(sentence) and not _WAIT_ASKED.search(question) and not _free_duration(_WAIT.sub(" ", sentence)):
        return True  # "... so wait 48 hours", "warten Sie daher 48 Stunden": how long to wait, not how long it takes
    if _customers_deadline(event, sentence) or _done_to_another(question, sentence):
        return True
    things = duration_things(sentence)
    if not things:
        return False
    return all(not thing & event for thing in things) and not _free_duration(sentence)


def only_things_durations(question: str, sentence: str) -> bool:
    """Whether every duration a sentence states is the length of a thing the question does not name ("Faulty
    items are handled under our 2-year warranty" for how long an opened item can be returned)."""
    things = duration_things(sentence)
    return bool(things) and not _free_duration(sentence) and all(not thing & terms(question) for thing in things)


def _free_duration(sentence: str) -> bool:
    """Whether a sentence states a duration beside those of things (that figure may answer)."""
    plain = _THING_DURATION.sub(" ", sentence.replace("*", ""))
    return bool(re.search(r"\d+\s*(?:[–-]\s*\d+\s*)?(?:business |working )?(?:days?|weeks?|hours?|months?|years?|"
                          r"werktagen?|tagen?|wochen|stunden|monaten?|jahren?)\b", plain, re.I))



# A question that asks two things in one ("How long is the link valid, and how long must the password be?", "Was
# kostet Express nach Wien und wie lange dauert er?"): each ask starts with a question word or an auxiliary, after
# "and" or a comma, or is a question sentence of its own ("Is the store open on Sundays? What hours?").
_ASK_WORD = (r"(?:how|what(?:'s| is| are| does| do)?|when|where|which|who|can|could|do|does|is|are|will|would|should|"
             r"wie|was|wann|wo|welche[rsmn]?|kann|können|gibt|ist|sind|muss|darf|bekomme)")
# after a bare comma only an English question that inverts ("..., how long do I have?"): "where", "which" and every German
# word may start a relative clause ("ein Laden in Wien, wo ich Jacken anprobieren kann?")
_NEXT_ASK = re.compile(rf"(?:,\s*(?:and|und|&|also|plus)|;|\s+(?:and|und|&))\s+(?={_ASK_WORD}\b)|"
                       rf",\s+(?=(?:how|what|when|can|could|do|does|is|are|will|would|should)\b)", re.I)
_QUESTION_END = re.compile(r"(?<=\?)\s+")
MAX_ASKS = 3
# two question words sharing one clause: "Unter welcher Nummer und wann erreiche ich euch?", "Which number and when
# can I call?"
_SHARED_CLAUSE = re.compile(r"^(?P<before>\W*(?:\w+\s+)?)(?P<first>(?:welche[rsmn]?|which|what)\s+\w+)\s+(?:und|and)\s+"
                            r"(?P<second>wann|wo|wie lange|wie|when|where|how long|how)\s+(?P<rest>.+)$", re.I)
REWRITE_MARK = " (about: "  # supportbot.conversation.TOPIC_MARK: what a rewritten follow-up carries of its conversation


def asks_of(question: str) -> tuple[str, list[str]]:
    """What a question tells and what it asks, when it asks more than one thing: (the told sentences, each ask
    as a question of its own); (question, []) for a question of one ask. An ask starts with a question word or an
    auxiliary and asks for a known kind (``kind_of``); a part that does not ("If you lower the price after I buy,
    ...") stays with the ask after it. An ask whose words name nothing ("..., and how long?", "wie lange dauert
    er?") is one ask with the ask before it."""
    if REWRITE_MARK in question:  # a follow-up rewritten with its conversation's words: each ask carries them
        message, about = question.split(REWRITE_MARK, 1)
        told, asks = asks_of(message)
        return (question, []) if not asks else (told, [f"{ask}{REWRITE_MARK}{about}" for ask in asks])
    told, asks = [], []
    for sentence in split_sentences(" ".join(question.split())):
        for paragraph in _QUESTION_END.split(sentence):
            if not (paragraph.rstrip().endswith("?") or _ASK_START.match(paragraph)):
                told.append(paragraph)
                continue
            pending = ""
            shared = _SHARED_CLAUSE.match(paragraph)  # "Unter welcher Nummer und wann erreiche ich euch?"
            parts = ([f"{shared['before']}{shared['first']} {shared['rest']}", f"{shared['second']} {shared['rest']}"]
                     if shared else _NEXT_ASK.split(paragraph))
            for part in (p.strip(" ,;") for p in parts):
                if not part:
                    continue
                part = f"{pending} {part}".strip() if pending else part
                if not ((shared or _ASK_START.match(part)) and kind_of(part)):
                    pending = part
                    continue
                pending = ""
                if asks and not _names_something(part):
                    part = f"{asks.pop().rstrip('?')}, {part}"
                asks.append(part)
            if pending:
                if asks:
                    asks[-1] = f"{asks[-1]} {pending}"
                else:
                    told.append(pending)
    if not 1 < len(asks) <= MAX_ASKS:
        return question, []
    return " ".join(told), asks


def ask_kind(ask: str) -> str | None:
    """``kind_of`` an ask of ``asks_of``: of its own words, not of the conversation's a rewrite carries."""
    return kind_of(ask.split(REWRITE_MARK, 1)[0])


_ASK_START = re.compile(rf"^\W*{_ASK_WORD}\b|{YES_NO_QUESTION.pattern}", re.I)
_NAMING_NOTHING = frozenset(terms(
    "i me my we us our you your it its that this these those he she they them ich mir mich wir uns sie ihr er es das "
    "die der dies man have has need do does be get take lange hour hours time times number uhr uhrzeit nummer"))


def _names_something(part: str) -> bool:
    return bool(focus_terms(part, cases=False) - _NAMING_NOTHING - GENERIC_TERMS)


VERSION = VERSION_BASE + [sorted(_TRIGGERS), PROXIMITY_CHARS, _PLAN_SUBJECT.pattern, _INSTRUCTION.pattern, "foreign plan",
                          sorted(GENERIC_TERMS), _EVENT.pattern, _THING_DURATION.pattern,
                          _RELATIVE_DURATION.pattern, _CLAUSE.pattern, _DISPATCH.pattern, _TAKES.pattern, sorted(_EVENT_SYNONYMS.items()), _WAIT.pattern, _RECEIVING.pattern,
                          _CUSTOMER_DEADLINE.pattern, sorted(_RECEIVING_VERBS), _HEAD.pattern,
                          _ACTION_EN.pattern, _ACTION_DE.pattern, _DE_PARTICLE.pattern, sorted(map(sorted, _ACTION_SYNONYMS)),
                          MINIMUM_QUESTION.pattern, _LOWER_BOUND.pattern, _SIZE.pattern,
                          sorted((k, p.pattern) for k, p in NAME_HEADS.items()), _NAMED_COMPANY.pattern,
                          _DAY.pattern, _DAY_RANGE.pattern, _EVERY_DAY.pattern, "action particle: back",
                          _ASKS_IN_WORDS.pattern, "the question's own 'free' is its condition: a figure answers it",
                          _ASK_WORD, _NEXT_ASK.pattern, _SHARED_CLAUSE.pattern, _TAG_QUESTION.pattern, _LAST_CLAUSE.pattern, MAX_ASKS, sorted(_NAMING_NOTHING),
                          _DENIED.pattern, _YESNO_ACTION_EN.pattern, _YESNO_ACTION_DE.pattern, sorted(_YESNO_GENERIC), sorted(_ON_VERBS),
                          "a yes/no action: a particle close after its verb", _CONDITION_EN.pattern, _CONDITION_DE.pattern,
                          sorted(_CONDITION_STATES), _DONE_WITHIN.pattern, sorted(_NO_KIND),
                          "a count is a bare number, not a length's or an amount's", _IDENTIFIER.pattern,
                          _CONTACT_ASKED.pattern, _PURPOSE_EN.pattern, _PURPOSE_DE.pattern, _POINTS_AT_PURPOSE.pattern]
