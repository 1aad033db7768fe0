"""Questions about the company itself: who founded or owns it, its shares, its headquarters, its management,
staff or revenue.

A help centre seldom says any of it, yet such a question shares a word with passages about something else
("the account owner", "share the link", "the Acme Trail app"): the tenant's name is never a subject term
(``retrieval.subject.subject_terms``), so what is left of "Who is the owner of Acme Outfitters?" is "owner",
and the API-keys article states it. Such a question names the company (or says "your company") and asks with
one of ``ORGANISATION_WORDS``; it is answered only when a retrieved passage has that word in a sentence
that names the company ("Acme Outfitters was founded in 1998 in Denver").
"""
from __future__ import annotations

import re
from collections.abc import Sequence


# The words that ask about the company as an organisation, as customers write them (surface forms: the
# stemmer joins "owned" with "own" and "shares" with "share", which say nothing of the company).
ORGANISATION_WORDS = {
    "english": frozenset(
        "founded founder founders founding owns owned owner owners ownership shares shareholder shareholders "
        "stock stocks stockholders investor investors ipo headquarters headquartered hq ceo cfo executive "
        "executives employees employ employs revenue revenues turnover profit profits dividend dividends ticker "
        "subsidiary".split()),
    "german": frozenset(
        "gegründet gründete gründer gründerin gründung inhaber inhaberin eigentümer gehört aktie aktien aktionär "
        "aktionäre börse börsennotiert börsengang firmensitz hauptsitz unternehmenssitz geschäftsführer "
        "geschäftsführerin geschäftsführung vorstand vorstandschef mitarbeiter mitarbeiterinnen mitarbeitende "
        "beschäftigte angestellte umsatz gewinn dividende mutterkonzern investor investoren".split()),
}
# Words that name the company without its name ("your company", "Ihre Firma").
COMPANY_WORDS = {"english": frozenset({"company", "firm", "business"}),
                 "german": frozenset({"firma", "unternehmen", "konzern"})}
_WORDS = re.compile(r"[^\W\d_]+", re.U)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def company_question(question: str, config: str, tenant_name: str) -> tuple[str, ...]:
    """The organisation words of a question about the company itself (it names the company, or says
    "company"), or () when it is not one."""
    # what the customer tells of themselves is no question about the company ("I'm the Owner of our Business account.
    # Where do I make an API key?"): the sentences that ask, when one does
    asking = [s for s in _SENTENCE.split(question) if s.strip().endswith("?")]
    words = _WORDS.findall(question.casefold())
    asked = tuple(w for w in dict.fromkeys(_WORDS.findall(" ".join(asking or [question]).casefold()))
                  if w in ORGANISATION_WORDS.get(config, ()))
    if not asked:
        return ()
    name = {w.casefold() for w in _WORDS.findall(tenant_name)}
    names_company = bool(name & set(words)) or bool(COMPANY_WORDS.get(config, frozenset()) & set(words))
    return asked if names_company else ()


def unstated_company_facts(question: str, config: str, tenant_name: str, passages: Sequence) -> tuple[str, ...]:
    """For a question about the company itself (``company_question``), its organisation words when no
    sentence of ``passages`` has one of them, as the question writes it, together with a word of the company's
    name; () otherwise. The word as it is, not its stem: "share the link" is not about shares."""
    asked = company_question(question, config, tenant_name)
    if not asked:
        return ()
    name = {w.casefold() for w in _WORDS.findall(tenant_name)}
    for p in passages:
        for sentence in _SENTENCE.split(p.text):
            words = set(_WORDS.findall(sentence.casefold()))
            if words & name and words & set(asked):
                return ()
    return asked
