"""Admission by the trust in the generator: an answer from a generator of ``low`` trust (the embedded
SmolLM2-135M server, or any model the operator has not vetted) is cached only if every sentence of it
says near-verbatim what ONE passage sentence says.

The other checks compare words and numbers with the passages as a whole, so they cannot tell which
line a number belongs to. SmolLM2 wrote "You can return an item within 10 days" (the passages: 14 days;
10 days is how long the return label is valid), "The restocking fee is $49" (15 %; $49 is the pickup
fee) and "A Premier team can have 2 people" (up to 5). Each number is in the passages; each answer is
wrong. A small model's paraphrase cannot be trusted to keep a fact with what it is about, so at low
trust a sentence passes only if one passage sentence (a list item or heading is one) holds
``MIN_OVERLAP`` of its content words and every number, duration, amount and percentage it states. A
quoted sentence passes by construction, so the extractive answerer is unaffected; a correct paraphrase
is refused too, and then still shown to the asker, just never cached. At ``standard`` trust (a vetted
vLLM deployment: ``GENERATION_TRUST``) this check passes everything and the other checks decide.

A list item is not joined with its heading or lead-in: "Return the item within 10 days" shares as
many words with "How to return an item" + "Ship the item within 10 days" as the true answer does.
"""
from __future__ import annotations

from caching.answer_checks.base import AnswerCheck, Evidence, Refusal
from caching.answer_checks.facts import quantities
from caching.answer_checks.text import CITATION_MARKER, sentences_of, terms

LOW, STANDARD = "low", "standard"
TRUST_LEVELS = (LOW, STANDARD)
MIN_OVERLAP = 0.8  # of an answer sentence's content words, found in the one passage sentence it restates


def _facts(text: str) -> set:
    numbers, measures, amounts = quantities(text)
    return numbers | measures | amounts


def grounding(sentence: str, units: list[tuple[set[str], set]]) -> tuple[float, set]:
    """The best (share of the sentence's content words, its facts missing) over single passage units, for
    a unit holding all the sentence's facts if there is one."""
    words, facts = terms(sentence), _facts(sentence)
    best = (0.0, facts)
    for unit_words, unit_facts in units:
        share = len(words & unit_words) / len(words) if words else 1.0
        missing = facts - unit_facts
        if (not missing, share) > (not best[1], best[0]):
            best = (share, missing)
    return best


class LowTrustGroundingCheck(AnswerCheck):
    code = "ungrounded_for_low_trust"

    def refusal(self, evidence: Evidence) -> Refusal | None:
        if evidence.trust != LOW:
            return None
        units = [(terms(u), _facts(u)) for u in sentences_of(evidence.passages_text)]
        for sentence in sentences_of(CITATION_MARKER.sub("", evidence.answer)):
            share, missing = grounding(sentence, units)
            if missing or share < MIN_OVERLAP:
                why = (f"{', '.join(sorted(' '.join(f) if isinstance(f, tuple) else f for f in missing))} in no passage "
                       f"sentence with {share:.2f} of its words" if missing
                       else f"at most {share:.2f} of its words in a passage sentence holding its facts")
                return Refusal(self.code, f"{why}: {sentence[:80]!r}"[:200])
        return None
