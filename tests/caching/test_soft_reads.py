"""Questions only soft eligibility rules refuse read the semantic cache, never write a shared cache
(``SEMANTIC_SOFT_READS``, ``guards.soft_only``): through the real pipeline, pgvector, Redis and the
real embedding model."""
from __future__ import annotations

import pytest
from django.test import override_settings

from caching import guards
from caching.models import SemanticEntry
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, decided, decision, offer, stand_in_judge

GENERAL = "How do I open an account?"
SOFT = "I want to open an account"  # action_declared: soft, no object of the customer's own


@pytest.mark.parametrize("question, soft", [
    ("I want to open an account", True),  # action_declared
    ("I need a new card", True),  # action_want
    ("Is the store open now?", True),  # time word
    ("How do I open an account?", False),  # eligible: nothing to read around
    ("Where is my order?", False),  # own state in so many words: hard
    ("Can I get a refund for my order 4417?", False),  # a record: hard
    ("My name is Bob, I want to open an account", False),  # personal details: hard, though a soft rule fires too
    ("Ich möchte jetzt ein Konto eröffnen", False),  # the language-independent nets are hard
])
def test_soft_only_is_a_refusal_by_soft_rules_alone(question, soft):
    assert guards.soft_only(question) is soft
    if soft:
        assert not guards.classify_rules(question).eligible


def test_a_soft_refused_question_reads_a_general_answer_and_writes_nothing(acme):
    asker = pipeline.Asker(acme, "en", None)
    offered = offer(asker, GENERAL)
    assert offered.admitted

    state, served = cached_lookup(asker, SOFT)

    assert served is not None and served.answer == f"Synthetic verified answer to: {GENERAL} [1]"
    assert decision(state, "eligibility").disposition == "bypass"
    assert decision(state, "exact").disposition == "bypass"  # an exact key of its own was never written
    hit = decision(state, "semantic")
    assert hit.disposition == "hit" and hit.candidate_question == GENERAL
    assert "read only: action" in hit.reason
    # its own answer is never stored: admission refuses it as for any ineligible question
    again = offer(asker, SOFT, "Open one in the app [1].")
    assert not again.admitted and decided(again, "admission").reason.startswith("ineligible: action")
    assert not SemanticEntry.objects.filter(tenant=acme, normalized_question=state.normalized).exists()


def test_with_soft_reads_off_a_soft_refused_question_bypasses_the_semantic_cache(acme):
    asker = pipeline.Asker(acme, "en", None)
    offer(asker, GENERAL)
    with override_settings(SEMANTIC_SOFT_READS=False):
        state, served = cached_lookup(asker, SOFT)
    assert served is None and decision(state, "semantic").disposition == "bypass"


@pytest.mark.parametrize("question", ["Where is my order?", "Has my order shipped yet?"])
def test_a_hard_refused_question_never_reads(acme, question):
    asker = pipeline.Asker(acme, "en", None)
    offer(asker, "How do I track an order?")
    state, served = cached_lookup(asker, question)
    assert served is None and decision(state, "semantic").disposition == "bypass"


def test_a_soft_refused_near_miss_is_not_queued_for_the_verifier(acme, monkeypatch, settings,
                                                                  django_capture_on_commit_callbacks):
    """An approved near miss becomes an alias, a stored copy of the question: a read-only question
    must not become one."""
    settings.JUDGE_LEARN_FROM_MISSES = True
    settings.SEMANTIC_JUDGE_SERVES = False  # the stand-in's probability decides, not the real judge's serve
    scores = stand_in_judge(monkeypatch)
    asker = pipeline.Asker(acme, "en", None)
    offer(asker, "What is your refund policy?")
    general, soft = "What is your return policy?", "I want to know your return policy now"
    assert guards.soft_only(soft)
    scores[general] = scores[soft] = 0.6  # unsure: worth a verifier's look
    with django_capture_on_commit_callbacks(execute=False) as queued:
        state, served = cached_lookup(asker, general)
    assert served is None and state.near_miss is not None and len(queued) == 1
    with django_capture_on_commit_callbacks(execute=False) as queued:
        state, served = cached_lookup(asker, soft)
    assert served is None and decision(state, "semantic").disposition == "miss"
    assert state.near_miss is None and not queued


def test_the_judge_alone_never_serves_a_read_only_question(learned):
    """The judge was trained and calibrated on eligible questions only: with ``SEMANTIC_JUDGE_SERVES``
    on, a read-only question is still served only by a strict match, its probability recorded."""
    cached, similarity = "How do I open an account?", 0.8
    soft = "I want to register with you"  # the judge's p is 0.99, but no strict match (operations differ)
    assert guards.soft_only(soft)
    judged = guards.judge(soft, cached, similarity, judge_serves=True, soft_reads=True, judge_threshold=0.0)
    assert not judged.serve and judged.probability is not None
    assert "but the judge does not serve (a read-only question); strict match refused" in judged.reason
    refused = guards.judge(soft, cached, similarity, judge_serves=True, soft_reads=False)
    assert not refused.serve and refused.reason.startswith("new question ineligible: action")
    strict = guards.judge(SOFT, cached, 0.9, judge_serves=True, soft_reads=True)
    assert strict.serve and strict.reason.startswith("strict match, no veto")


@pytest.mark.parametrize("question", ["Rotate my API key.", "Which plan am I on?", "Do I still have access to the beta?"])
def test_an_imperative_or_a_state_question_neither_reads_the_how_to_nor_is_stored(acme, question):
    """"Rotate my API key." asks us to act, "which plan am I on?" depends on who asks: neither reads the
    general answer to a question about the same thing, and neither is stored for the next asker."""
    asker = pipeline.Asker(acme, "en", None)
    assert offer(asker, "How do I rotate my API key?").admitted
    assert offer(asker, "Which plans are there?").admitted
    state, served = cached_lookup(asker, question)
    assert served is None and decision(state, "semantic").disposition == "bypass"
    refused = offer(asker, question, "Done [1].")
    assert not refused.admitted and decided(refused, "admission").reason.startswith("ineligible:")
    assert not SemanticEntry.objects.filter(tenant=acme, question=question).exists()
