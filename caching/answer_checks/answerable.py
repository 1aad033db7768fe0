"""Answers the help centre does not give (``not_answerable``).

Two checks, the second a defence in depth behind the first:

- an answer is cached only when a passage it cites passed the answerability check made before it was
  written (``supportbot.answerability``, ``Evidence.answerable``), and reached the locale's store threshold
  there (``uncertain_answerable``, ``ANSWERABILITY_STORE_CHECK``): a cache repeats an answer to every later
  customer, so it asks for more certainty than answering once does;
- whatever that check said, the cited passages must be about what the question asks: they state at least one
  of the question's subject terms (``retrieval.subject.subject_terms``; in German a compound through all of its
  parts, never through its head alone: "Studentenrabatt" is not "Rabatt"), and every name the question asks
  about (``retrieval.subject.name_phrases``: "Garmin", "Leipzig", "Apple Watch" as a phrase). An answer that
  was let through for a question the help centre does not answer is then still never stored for the next
  customer. In German, whose nouns say what a question asks about, also every noun of the question that no
  passage of the tenant's help centre has at all ("Filiale", "Aktie") must be stated by the cited passages: an
  answer sharing only the question's other words ("Leipzig") is not about it. A synonym the articles do not use
  ("Hotline") is then shown but not cached, which costs a cache hit, never an answer. (Every subject term, verbs
  too, was tried: "much", "braucht", "gratis" kept a quarter of the development set's answers out of the cache.) This part stems with the locale's PostgreSQL text-search configuration and reads
  the tenant's help centre, so it runs on evidence that admission builds for a request (``Evidence.tenant_id``).
  A name or noun the help centre has elsewhere is the cited passage's to say another way ("United Kingdom" of the
  question, "UK" of the shipping table): only what no article has at all is refused. Only when the cited passages
  lack most of a German question's nouns, three or more, is it refused for nouns the help centre has elsewhere
  (``MIN_LACKING_NOUNS``): they answer another question of the same words.
"""
from __future__ import annotations

import re

from django.conf import settings

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from ingestion.textsearch import language_of, text_search_config
from retrieval.search import query_terms
from retrieval.services import active_generation_cached
from retrieval.subject import (irregular_alternatives, name_phrases, named_in_scope, noun_words, phrase_stated, states,
                               states_same, stems_of, subject_terms, unseen_in_scope)


# A German question that names three or more things, most of which its cited passages never say, is not answered by
# them (``uncovered_subject``); "Guten Tag" greets, it names nothing
MIN_LACKING_NOUNS = 3
_GREETING = re.compile(r"\bguten\s+(?:tag|morgen|abend)\b|\bschönen\s+(?:tag|gruß)\b|\bviele\s+grüße\b", re.I)


class AnswerableCheck(AnswerCheck):
    code = "not_answerable"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        if evidence.answerable is False:
            return Refusal(self.code, "no passage the answer cites answers the question")
        if evidence.tenant_id is not None:
            missing = uncovered_subject(evidence.question, evidence.passages_text, evidence.locale,
                                        evidence.known_names, evidence.tenant_id)
            if missing:
                return Refusal(self.code, missing)
        if evidence.answerable and evidence.confidently_answerable is False:
            return Refusal("uncertain_answerable", "the passages the answer cites answer the question below the "
                                                   "certainty a cached answer needs (the store threshold)")
        return None


def uncovered_subject(question: str, passages_text: str, locale: str, known_names: str = "",
                      tenant_id: int | None = None) -> str | None:
    """Why the cited passages are not about what the question asks, or None: a name of the question they never
    name, none of its subject terms stated, or (German, with ``tenant_id``) a noun no article has that they lack."""
    config = text_search_config(locale)
    terms = subject_terms(config, question, known_names)
    if not terms:
        return None  # nothing the question asks about beyond the company: no say
    lexemes = frozenset(query_terms(config, passages_text))
    language = language_of(locale)
    compounding = config in settings.TEXT_SEARCH_COMPOUNDS
    forms = irregular_alternatives(config, list(terms), question)

    def stated(term: str) -> bool:
        if compounding:
            return states_same(config, term, lexemes)
        return term in lexemes or any(f in lexemes for f in forms.get(term, ()))

    # the nouns (German: what the question asks about) the cited passages lack and no article has
    nouns = stems_of(config, noun_words(_GREETING.sub(" ", question), known_names)) \
        if language in settings.NOUN_SUBJECT_LOCALES else {}
    lacking = {w: t for w, t in nouns.items() if t in terms and not stated(t)}
    asked_nouns = [w for w, t in nouns.items() if t in terms]
    if len(lacking) >= MIN_LACKING_NOUNS and 2 * len(lacking) > len(asked_nouns):
        # most of what the question names, the cited passages never say: they answer another question of the same
        # words ("kann ich bei DHL Express an der Kasse eine Zustellung vor 10 Uhr oder ein Zeitfenster auswählen,
        # und was kostet das?" answered by Express's price; twenty-first session: such an answer was cached)
        return f"the cited passages state none of {', '.join(lacking)[:120]}, most of what the question names"
    generation = active_generation_cached() if lacking and tenant_id is not None else None
    if generation is not None:
        unknown = unseen_in_scope(generation, tenant_id, locale, list(lacking.values()))
        if unknown:
            return (f"the cited passages never state {', '.join(w for w, t in lacking.items() if t in unknown)[:120]}, "
                    f"nor does any article")
    for phrase in name_phrases(question, config, known_names) if language in settings.NAME_CHECK_LOCALES else ():
        stems = [s for s in stems_of(config, list(phrase)).values()]
        if not stems:
            continue
        named = all(states(s, lexemes) if compounding else s in lexemes for s in stems) and (len(stems) == 1 or phrase_stated(config, passages_text, stems))
        if named:
            continue
        # a name the help centre has elsewhere is the cited passage's to say another way ("United Kingdom": "UK")
        generation = active_generation_cached() if tenant_id is not None else None
        if generation is None or not named_in_scope(generation, tenant_id, locale, stems):
            return f"the cited passages never name {' '.join(phrase)}, nor does any article"
    if not any(stated(t) for t in terms):
        return f"the cited passages state none of {', '.join(terms[:5])}"
    return None
