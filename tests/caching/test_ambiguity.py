"""The semantic layer's ambiguity check (a ratio test): a candidate that would serve is refused when
another candidate with another answer is nearer to the question (whatever refused it), or about as
close (``SEMANTIC_AMBIGUITY_MARGIN``) and refused by nothing but the judge. Real pipeline, real embeddings and pgvector.

The first case is a BANKING77 test question the default policy answered from the wrong intent
(``bench.banking77``): "Can you explain the transfer fee to me?" is a strict match of "Is there a
charge for transfers?" (0.73), but "Why would I be charged an extra fee while doing a transfer?"
(another answer) is nearer (0.80)."""
from __future__ import annotations

from caching import guards
from caching.layers.semantic import AMBIGUOUS
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, decided, decision, offer

CHARGE = "Is there a charge for transfers?"
WHY_CHARGED = "Why would I be charged an extra fee while doing a transfer?"


def asker(tenant) -> pipeline.Asker:
    return pipeline.Asker(tenant, "en")


def test_a_question_as_close_to_another_answer_is_refused_and_the_reason_names_it(acme, settings):
    # the check on a strict match, whatever the learned judge (the tests' small one) would say of the nearer entry
    settings.SEMANTIC_JUDGE_SERVES = False
    charge, why = offer(asker(acme), CHARGE), offer(asker(acme), WHY_CHARGED)
    assert charge.admitted and why.admitted

    state, served = cached_lookup(asker(acme), "Can you explain the transfer fee to me?")

    assert served is None
    miss = decided(state, "semantic")
    assert miss.disposition == "miss" and miss.reason.startswith(f"{AMBIGUOUS}: entry ")
    assert repr(WHY_CHARGED[:60]) in miss.reason and "would have served: strict match" in miss.reason
    assert miss.candidate_question == CHARGE  # the candidate it would have served, for the staff pages
    recorded = decision(state, "semantic")
    assert (recorded.disposition, recorded.reason) == ("miss", miss.reason)

    settings.SEMANTIC_AMBIGUITY_MARGIN = -1.0  # the check off: the strict match serves the other intent's answer
    _, served = cached_lookup(asker(acme), "Can you explain the transfer fee to me?")
    assert served is not None and served.question == CHARGE


def test_a_clearly_nearest_answer_is_served(acme):
    assert offer(asker(acme), CHARGE).admitted and offer(asker(acme), WHY_CHARGED).admitted

    state, served = cached_lookup(asker(acme), "Are there charges for transfers?")  # 0.96 vs 0.70

    assert served is not None and served.question == CHARGE
    assert not decided(state, "semantic").reason.startswith(AMBIGUOUS)


def test_neighbours_with_the_same_answer_are_no_rivals(acme, settings):
    settings.SEMANTIC_AMBIGUITY_MARGIN = 0.2  # "Why is there a charge for transfers?" is 0.82 away, the match 0.96
    assert offer(asker(acme), CHARGE, "Transfers are free [1]").admitted
    assert offer(asker(acme), "Why is there a charge for transfers?", "Transfers cost nothing [1]").admitted
    state, served = cached_lookup(asker(acme), "Are there charges for transfers?")
    assert served is None and decided(state, "semantic").reason.startswith(AMBIGUOUS)

    assert offer(asker(acme), "Why is there a charge for transfers?", " transfers are FREE [1]").admitted  # the same text
    state, served = cached_lookup(asker(acme), "Are there charges for transfers?")
    assert served is not None and served.question == CHARGE


def test_two_entries_for_one_question_are_no_rivals(acme, settings):
    """Answers written for the same question (the strict match of the two cached questions) are
    interchangeable, however worded: they must not block each other, or a popular question's
    entries would stop serving once it had two."""
    settings.SEMANTIC_AMBIGUITY_MARGIN = 0.1
    assert offer(asker(acme), "What is your return policy for jackets?", "Jackets: 30 days, with a receipt [1]").admitted
    assert offer(asker(acme), "What is your return policy for jackets? Thanks",
                 "You may return a jacket within 30 days [1]").admitted
    assert guards.same_question("What is your return policy for jackets?", "What is your return policy for jackets? Thanks")

    state, served = cached_lookup(asker(acme), "What is the return policy for jackets?")

    assert served is not None, decided(state, "semantic").reason
    assert not guards.same_question(CHARGE, WHY_CHARGED)  # another question: still a rival (the first test)


def test_a_vetoed_neighbour_is_no_rival(acme, settings):
    settings.SEMANTIC_AMBIGUITY_MARGIN = 0.1  # the opened-earphones entry is 0.90 away, the match 0.97
    assert offer(asker(acme), "Can I return earphones?").admitted
    assert offer(asker(acme), "Can I return opened earphones?").admitted

    state, served = cached_lookup(asker(acme), "Is it possible to return earphones?")

    assert served is not None and served.question == "Can I return earphones?"


def test_a_contender_is_what_only_the_judge_could_refuse():
    assert guards.contender("Can you explain the transfer fee to me?", WHY_CHARGED, 0.80)
    assert not guards.contender("Is it possible to return earphones?", "Can I return opened earphones?", 0.90)  # veto
    assert not guards.contender("Can you explain the transfer fee to me?", WHY_CHARGED, 0.30)  # below the floor
    assert not guards.contender("Where is my order 4471?", "Where is my order?", 0.90)  # personal: not shareable


def test_a_nearer_neighbour_with_another_answer_is_a_rival_even_when_a_veto_refused_it(settings):
    """The judge or strict match would serve a further entry: a nearer entry with another answer
    blocks it whatever refused that entry (here a veto: opened vs not), within the margin only one
    refused by nothing but the judge does (``test_a_vetoed_neighbour_is_no_rival``)."""
    from types import SimpleNamespace

    from caching.layers.semantic import _rival

    settings.SEMANTIC_AMBIGUITY_MARGIN = 0.1
    question = "Is it possible to return earphones?"

    def row(q, answer, similarity):
        return SimpleNamespace(question=q, answer=answer, distance=1.0 - similarity, signature=guards.signature(q))

    chosen = row("Can I return earphones?", "Earphones: 30 days [1]", 0.90)
    vetoed = row("Can I return opened earphones?", "Opened earphones cannot be returned [1]", 0.95)
    assert not guards.contender(question, vetoed.question, 0.95)  # a veto refuses it
    sig = guards.signature(question)
    assert _rival([vetoed, chosen], chosen, question, sig, {}, "en") == (vetoed, 0.95)
    further = row(vetoed.question, vetoed.answer, 0.85)  # within the margin, but vetoed: no rival
    assert _rival([chosen, further], chosen, question, sig, {}, "en") is None
    same = row(vetoed.question, chosen.answer, 0.95)  # nearer, but the same answer: no rival
    assert _rival([same, chosen], chosen, question, sig, {}, "en") is None
