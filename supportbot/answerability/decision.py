"""The decision: answerable when the passage most likely to answer reaches the locale's threshold."""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from caching.answer_checks.asked import (CASE_PATTERNS, REWRITE_MARK, cases_in, places_as_countries, speaks_of_action,
                                         yesno_action)
from core.models import Tenant
from ingestion.textsearch import text_search_config
from retrieval.models import IndexGeneration
from retrieval.search import article_texts
from retrieval.subject import (article_lexemes, asked_readings, asked_terms, nouns_of, spelled, states_same, subject_of,
                               subject_terms, told_case, truecased, unnamed, unstated_action, unstated_property,
                               unstated_thing)
from supportbot.answerability.company import unstated_company_facts
from supportbot.answerability.features import named_terms, pair_features, unit_similarities
from supportbot.answerability.model import ModelUnavailable, current_model

log = logging.getLogger(__name__)
MAX_RELATED = 3


@dataclass(frozen=True)
class Verdict:
    answerable: bool
    probability: float  # P(the best passage answers the question)
    threshold: float
    chunk_id: int | None  # the best passage
    reason: str
    model_version: str = ""
    unseen_terms: tuple[str, ...] = ()  # subject terms the help centre never states
    passing: frozenset[int] = frozenset()  # the passages (chunk ids) that reach the threshold
    # all of those when the likeliest reaches the locale's store threshold, else none: an answer citing one may be cached
    storable: frozenset[int] = frozenset()

    @property
    def doubted(self) -> bool:
        """Handed off on the model's threshold alone: no rule of the check (a name, an action, a product's property, a
        thing or the company the help centre never states) handed it off."""
        return not self.answerable and self.reason.startswith(BELOW_THRESHOLD)


# How the reason of a question handed off on the model's threshold starts (``Verdict.doubted``)
BELOW_THRESHOLD = "not answerable: P="


def assess(*, generation: IndexGeneration, tenant_id: int, locale: str, question: str, vector: np.ndarray,
           passages: Sequence, embed: Callable[[list[str]], np.ndarray]) -> Verdict:
    """Whether any of ``passages`` (retrieved for ``question`` in the tenant's scope) answers it."""
    if not passages:
        return Verdict(False, 0.0, 1.0, None, "no passage similar enough")
    try:
        model = current_model()
    except ModelUnavailable as exc:  # an outage of the check is no reason to stop answering
        log.warning("answerability not checked: %s", exc)
        every = frozenset(p.chunk_id for p in passages)
        return Verdict(True, 1.0, 0.0, passages[0].chunk_id, f"not checked: {exc}"[:300], passing=every, storable=every)
    chunk_ids = [p.chunk_id for p in passages]
    # a German question typed in lower case with its nouns' capitals back, which the nouns check reads; its nouns are
    # a guess, so its answer is shown, never cached
    guessed = truecased(generation, tenant_id, locale, question)
    typed_lower, question = guessed != question, guessed
    # the customer's town or state said by its country: no subject of the question ("I'm in Toronto - ..."); a word
    # typed with a slip of the keys as the help centre writes it ("downlaod")
    question = spelled(generation, tenant_id, locale, places_as_countries(question, locale))
    question = _dated_as_passages_date(question, passages)  # "Christmas Eve" as a passage dates it: "December 24"
    question = _RECORD_REFERENCE.sub(" ", question)  # "AO-771204" is which order, not what the question is about
    units = unit_similarities(passages, vector, embed)
    subject, nouns, rows, stated, grounded, headed = evidence(
        generation=generation, tenant_id=tenant_id, locale=locale, question=question, vector=vector,
        passages=passages, embed=embed, units=units)
    probabilities = model.probabilities(rows)
    # an answer may be cached when the question is answerable surely enough (``model.sure``); it must still cite
    # an answering passage (admission's ``not_answerable``)
    # A German question that names nothing ("Wie alt bist du?") rests on a verb or an adjective it shares with a passage
    # ("alt" of "altes Passwort"): shown, never cached; so is one typed in lower case, whose nouns are guessed
    named = nouns is None or (bool(nouns.stems) and not typed_lower)
    ok = model.passing(probabilities, stated, locale, grounded, headed)
    storable = frozenset(c for c, good in zip(chunk_ids, ok) if good) \
        if named and model.sure(probabilities, ok, locale) else frozenset()
    tenant_name = Tenant.objects.filter(pk=tenant_id).values_list("name", flat=True).first() or ""
    # a question that tells its case before it asks ("Opened my earbuds, don't like the sound. Can I send them
    # back?") and that no passage answers as a whole is read again without its case (``asked_readings``); such an
    # answer is never cached (``storable`` is the whole question's)
    config = text_search_config(locale)
    own_ask = _own_ask(question)
    after = own_ask == question  # a case told after the question sentence is told: of the customer's own words only
    told = told_case(question, after=after) if nouns is None and not any(ok) else None
    readings, alone = asked_readings(config, told, subject, tenant_name)
    states_asked = [True] * len(chunk_ids)
    if alone != readings and _asks_by_itself(config, told, subject, tenant_name):
        # a question sentence that names what it asks by itself is read without the names told before it too; so
        # read, it is answered only by an article that states what it asks ("do you have a military discount?" after
        # "I ship to an APO address" is not answered by the countries article, which names military addresses)
        readings, lexemes = alone, article_lexemes(generation, tenant_id, locale, chunk_ids)
        asks = asked_terms(config, told, tenant_name, time_words=False)
        states_asked = [_states_ask(config, asks, lexemes.get(c, frozenset()), subject, question) for c in chunk_ids]
    answered = None  # the reading whose passing passage is likeliest
    for reading in readings:
        asked = subject_of(generation, tenant_id, locale, reading, chunk_ids)
        if not asked.terms:
            continue
        again = model.probabilities(pair_features(passages, asked, units, locale, reading))
        again_ok = [good and whole for good, whole in zip(model.passing(again, stated, locale, grounded, headed),
                                                           states_asked)]
        if any(again_ok) and (answered is None or max(again) > max(answered[0])):
            answered = again, again_ok
    if answered:
        probabilities, ok = answered
    passing = frozenset(c for c, good in zip(chunk_ids, ok) if good)
    # the best passage: the likeliest of those that answer, else the likeliest of all
    best = max(range(len(passages)), key=lambda i: (ok[i], probabilities[i]))
    p = float(probabilities[best])
    threshold = model.needed(stated[best], headed[best], locale)
    unseen = tuple(subject.unseen())
    chunk_id = passages[best].chunk_id
    names = [n for n in unnamed(generation, tenant_id, locale, question, subject, tenant_name)
             if not _dated(n, passages)]
    if names:  # a name the customer only tells, of a question that names what it asks by itself, is their case
        told_names = told_case(question, after=after, whole=True)
        if _asks_by_itself(config, told_names, subject, tenant_name):
            names = [n for n in names if n.casefold() in told_names.asked.casefold()]
    if names:  # a brand, place or device the help centre never names: no passage is about it
        return Verdict(False, p, threshold, chunk_id, f"not answerable: the help centre never names "
                       f"{', '.join(names[:4])}"[:300], model.version, unseen)
    action = unstated_action(locale, question, subject, generation=generation, tenant_id=tenant_id)
    if action:  # the action asked for: no passage that shares the rest answers it
        return Verdict(False, p, threshold, chunk_id, f"not answerable: asks to {action}, which the help centre "
                       f"never states"[:300], model.version, unseen)
    # (English only: German articles say the same action in other words and other verb forms more often than the
    # equivalents cover; measured on the German held-out answerable files, six were handed off)
    own = yesno_action(own_ask) if config == "english" else ""  # the message's own ask only
    if own and any(ok):
        # whether the customer can do a thing: an article that answers it speaks of that action ("sign up", "send
        # back"); one that shares the rest of the question ("email address", "delete my account") does not answer it
        texts = article_texts(generation, tenant_id, locale, {p.article_id for p, good in zip(passages, ok) if good})
        if not any(speaks_of_action(own, text) for text in texts.values()):
            return Verdict(False, p, threshold, chunk_id, f"not answerable: asks whether the customer can {own}, of "
                           f"which no answering article speaks"[:300], model.version, unseen)
    spec = unstated_property(generation, tenant_id, locale, question)
    if spec:  # a product's property: no passage states any word of it
        return Verdict(False, p, threshold, chunk_id, f"not answerable: asks for a product's property ({spec}), which the "
                       f"help centre never states"[:300], model.version, unseen)
    thing = unstated_thing(locale, question, subject)
    if thing:  # what it asks whether there is: no passage that shares the rest states it
        return Verdict(False, p, threshold, chunk_id, f"not answerable: asks whether there is {thing}, which the help "
                       f"centre never states"[:300], model.version, unseen)
    # the message's own ask: "the account owner" of a rewrite's conversation words asks nothing of the company
    company = unstated_company_facts(own_ask, config, tenant_name, passages)
    if company:  # the company itself: only a passage that says it of the company answers
        return Verdict(False, p, threshold, chunk_id, f"not answerable: asks about the company itself "
                       f"({', '.join(company[:3])}), which no retrieved passage states of {tenant_name}"[:300],
                       model.version, unseen)
    if ok[best]:
        return Verdict(True, p, threshold, chunk_id, f"answerable: P={p:.3f} >= {threshold:.3f} "
                       f"({passages[best].article_id})", model.version, unseen, passing, storable)
    detail = f"; the help centre never states {', '.join(unseen[:4])}" if unseen else ""
    if not any(grounded):
        detail += "; no retrieved article states any word the question asks about"
    elif not stated[best] and nouns is not None:
        detail += f"; its article does not state {', '.join(nouns.unstated[chunk_id][:4])}"
    return Verdict(False, p, threshold, chunk_id, f"{BELOW_THRESHOLD}{p:.3f} < {threshold:.3f}{detail}"[:300],
                   model.version, unseen)


# The most of an ask's subject weight an article may leave unstated and still answer the question read without its case
ASK_UNSTATED_SHARE = 0.25


def _states_ask(config: str, asks: set[str], lexemes: frozenset[str], subject, question: str) -> bool:
    """Whether an article (``lexemes``) states what a question sentence asks about (``asks``, its subject terms): every
    name of it, and all but a small share of the rest by weight ("When you price match, do you compare the price with
    their shipping added?" is answered without "added"; "do you have a military discount?" is not answered by an
    article of military addresses, nor "Can I get the SMS updates in Spanish?" by one of SMS updates)."""
    unstated = {t for t in asks if not states_same(config, t, lexemes)}
    if not unstated:
        return True
    if unstated & named_terms(question, unstated):
        return False
    weight = sum(subject.weights.get(t, 0.0) for t in asks) or 1.0
    return sum(subject.weights.get(t, 0.0) for t in unstated) / weight <= ASK_UNSTATED_SHARE


def _own_ask(question: str) -> str:
    """The customer's message of a question: without a rewrite's conversation words ("... (about: ...)") or an
    unresolved follow-up's earlier turns ("... | ...")."""
    return question.split(REWRITE_MARK, 1)[0].split(" | ", 1)[0]


# A word of a question sentence pointing back at what was told before it ("Can I send them back?", "Geht das?",
# "Repariert ihr die?"); "it" of "is it too late", "gibt es" point at nothing
_POINTS_BACK = re.compile(
    r"\b(?:them|they|those|these|ones?|its|ihn|ihm|ihnen|dies\w*)\b|(?-i:\bsie\b)|\b(?<!gibt )(?<!geht )es\b|"
    r"\bit\b(?!\s+(?:too\s+)?(?:late|possible|ok|okay|allowed|true|worth|normal|necessary)\b)|"
    r"\b(?:die|das|den|dem|der)\s*(?:auch|noch|denn|überhaupt|dann|wieder)?\s*\?", re.IGNORECASE)


def _asks_by_itself(config: str, told, subject, tenant_name: str) -> bool:
    """Whether a question's own ask (``told_case``) names what it asks about by itself: subject terms of its own,
    each stated by the help centre, and no word pointing back at the told case. Then a name the help centre never
    names that the customer only tells ("Ich will meiner Tochter in London Regenkleidung schicken. Was kostet der
    Standardversand nach Großbritannien?", "just saw the same one cheaper at REI. Is it too late to ask for a price
    match?") is their case, not what is asked (twenty-second session)."""
    if told is None or _POINTS_BACK.search(_own_ask(told.asked)):
        return False
    asks = set(subject_terms(config, _own_ask(told.asked), tenant_name))
    return bool(asks) and not asks & set(subject.unseen())


# A reference to one of the customer's records (an order or invoice number: "AO-771204", "IH-4417820"): no subject
_RECORD_REFERENCE = re.compile(r"\b[A-Z]{2,4}-\d{4,}\b", re.I)


def _dated(name: str, passages: Sequence) -> bool:
    """Whether a name is a holiday that a retrieved passage states by its date ("Christmas Eve": "December 24")."""
    holiday = cases_in(name).get("holiday")
    if holiday is None:
        return False
    pattern = CASE_PATTERNS["holiday"][holiday]
    return any(pattern.search(passage.text) for passage in passages)


def _dated_as_passages_date(question: str, passages: Sequence) -> str:
    """The question with the holiday it names written as the first retrieved passage naming that day writes it
    ("on Christmas Eve" -> "on December 24"): the day is the asked case, not a subject the help centre never states."""
    holiday = cases_in(question).get("holiday")
    if holiday is None:
        return question
    pattern = CASE_PATTERNS["holiday"][holiday]
    said = next((m.group(0) for p in passages if (m := pattern.search(p.text))), None)
    if said is None:
        return question
    # every way the question says the day ("on new years eve (dec 31)"): one date, as the passage writes it
    return pattern.sub(lambda m: said, question)


def evidence(*, generation: IndexGeneration, tenant_id: int, locale: str, question: str, vector: np.ndarray,
             passages: Sequence, embed: Callable[[list[str]], np.ndarray], units: list[float] | None = None):
    """What the model reads of ``passages``: the question's subject, its nouns (or None), one row of
    ``features.NAMES`` a passage, per passage whether its article states every noun, and per passage
    whether its article states any subject term at all (``retrieval.subject.grounded``), and per passage whether
    its article states the question's first noun (``Nouns.head``)."""
    chunk_ids = [p.chunk_id for p in passages]
    subject = subject_of(generation, tenant_id, locale, question, chunk_ids)
    nouns = nouns_of(generation, tenant_id, locale, question, chunk_ids, subject.terms)
    if units is None:
        units = unit_similarities(passages, vector, embed)
    rows = pair_features(passages, subject, units, locale, question)
    return (subject, nouns, rows, [nouns is None or nouns.stated(c) for c in chunk_ids],
            [nouns is None or nouns.grounded(c) for c in chunk_ids],
            [nouns is None or nouns.head_stated(c) for c in chunk_ids])


def related_articles(passages: Sequence, limit: int = MAX_RELATED) -> list[dict]:
    """Up to ``limit`` distinct articles of the passages, in retrieval order: links offered beside a
    hand-off, never as its answer."""
    out, seen = [], set()
    for p in passages:
        if p.article_id in seen:
            continue
        seen.add(p.article_id)
        out.append({"article_id": p.article_id, "title": p.title, "url": p.url})
        if len(out) == limit:
            break
    return out
