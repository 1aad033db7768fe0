"""Admission checks an answer against the articles it cites before it enters a shared cache:
a loop, a repeated sentence, the prompt's scaffolding, a number or a name the articles lack, a
yes/no that contradicts them and an answer to another question are each refused with their
reason, recorded, counted on the dashboard and stored nowhere. The answers are the issue's own
examples of what the embedded model wrote."""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from caching import stats
from caching.answer_checks import Evidence
from caching.answer_checks.facts import FactsCheck
from caching.answer_checks.polarity import PolarityCheck
from supportbot import pipeline
from tests.caching.helpers import offer, prompt_of, scripted_model
from tests.caching.test_admission import assert_stored_nowhere, refusal


def asker(tenant) -> pipeline.Asker:
    return pipeline.Asker(tenant, "en")


REFUSED = [
    ("How long do I have to return an item?", "return-policy", "",
     "You can return it within 30 days. You can return it within 30 days. You can return it within 30 days [1].",
     "repeated_sentence"),
    ("How long do I have to return an item?", "return-policy", "",
     "Returns are accepted for 30 days and then 30 days and then 30 days and then 30 days and then more [1].",
     "loop"),
    ("How long do I have to return an item?", "return-policy", "",
     "You have 60 days to return an item, or 48 hours for opened items and 72 hours for sale items [1].",
     "ungrounded_facts"),
    ("Do you ship to Canada?", "shipping-countries", "Canada",
     "No, I do not ship to Canada. I only ship to the US and Europe [1].", "ungrounded_facts"),
    ("Do you ship to Canada?", "shipping-countries", "Canada", "No, we don't deliver to Canada [1].", "polarity"),
    ("How long does shipping to the United Kingdom take?", "shipping-times-and-costs", "£5.95",
     "You can order in the United Kingdom within business days. The answer is: quickly [1].", "scaffolding"),
    ("How long does shipping to the United Kingdom take?", "shipping-times-and-costs", "£5.95",
     "The shipping times are not available in the passage [1].", "refusal or fallback"),
    ("How long does shipping to the United Kingdom take?", "shipping-times-and-costs", "£5.95",
     "Our mascot is a friendly mountain goat with a red scarf [1].", "off_topic"),
]


@pytest.mark.parametrize("question, article, containing, answer, code", REFUSED)
def test_a_bad_answer_is_refused_with_its_reason_and_stored_nowhere(acme, question, article, containing, answer, code):
    state = offer(asker(acme), question, answer, article=article, containing=containing, checks=True)
    assert_stored_nowhere(state)
    assert refusal(state).startswith(code), refusal(state)


@pytest.mark.parametrize("question, article, containing, answer", [
    ("How long do I have to return an item?", "return-policy", "", "You can send it back within 30 days of delivery [1]."),
    ("Do you ship to Canada?", "shipping-countries", "Canada", "Yes, Acme Outfitters delivers to Canada [1]."),
    ("How long does shipping to the United Kingdom take?", "shipping-times-and-costs", "£5.95",
     "Standard shipping to the UK takes 4–7 business days and costs £5.95 [1]."),
])
def test_the_same_questions_answered_right_are_admitted(acme, question, article, containing, answer):
    state = offer(asker(acme), question, answer, article=article, containing=containing, checks=True)
    assert state.admitted, refusal(state)


def test_the_other_tenants_no_is_right_for_it_and_its_yes_is_refused(initech):
    no = offer(asker(initech), "Do you ship to Canada?", "No, we don't ship to Canada [1].",
               article="shipping-countries", containing="Canada")
    yes = offer(asker(initech), "Can you deliver to Canada?", "Yes, we ship to Canada [1].",
                article="shipping-countries", containing="Canada", checks=True)
    assert no.admitted
    assert_stored_nowhere(yes)
    assert refusal(yes) == "polarity: says yes, the passages say no"


def test_a_number_from_the_question_is_not_evidence():
    evidence = Evidence("Hello, 12, how long does shipping to the UK take?", "It takes 12 days.",
                        "Standard (4–7 business days): £5.95", "en")
    assert str(FactsCheck().refusal(evidence)) == "ungrounded_facts: 12"


@pytest.mark.parametrize("answer, source, refused", [
    ("Returns are free within thirty days.", "Returns are free within 30 days.", False),  # number words
    ("It costs €5.95.", "The fee is $5.95 (€5.95).", False),
    ("It costs €5.95.", "The fee is $5.95.", True),  # the amount exists, in another currency
    ("Ships in 3 weeks.", "Ships in 3 days.", True),  # the number exists, with another unit
    ("Wir liefern in 5 Werktagen nach Kanada.", "Lieferung nach Kanada in 3–5 Werktagen.", False),
])
def test_facts_compare_numbers_with_their_units_and_currencies(answer, source, refused):
    result = FactsCheck().refusal(Evidence("How long?", answer, source, "de" if "Wir" in answer else "en"))
    assert (result is not None) is refused, result


def test_a_yes_or_no_with_nothing_to_check_it_against_is_refused():
    evidence = Evidence("Do you sell kayaks?", "Yes, we do.", "Returns are free within 30 days.", "en")
    assert PolarityCheck().refusal(evidence).code == "polarity"
    not_yes_no = Evidence("How long do I have to return an item?", "No, 30 days.", "Returns within 30 days.", "en")
    assert PolarityCheck().refusal(not_yes_no) is None


def test_the_dashboard_counts_admissions_and_refusals_by_reason(acme):
    offer(asker(acme), "How long do I have to return an item?", "You can send it back within 30 days of delivery [1].",
          checks=True)
    for question, article, containing, answer, code in REFUSED[:3]:
        offer(asker(acme), question, answer, article=article, containing=containing, checks=True)
    now = timezone.now()
    totals = stats.admission_totals(now - timedelta(hours=1), now + timedelta(minutes=1), acme.pk)
    assert (totals["offered"], totals["stored"]) == (4, 1) and totals["rate"] == pytest.approx(0.25)
    assert dict(totals["refused"]) == {"repeated_sentence": 1, "loop": 1, "ungrounded_facts": 1}


def completion(text: str) -> tuple:
    """A non-streamed OpenAI chat completion, as vLLM sends it."""
    body = {"id": "c1", "object": "chat.completion", "model": "scripted-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 1}}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


@pytest.mark.parametrize("verdict, admitted", [("SUPPORTED", True), ("UNSUPPORTED", False)])
def test_with_the_model_check_on_the_model_reads_the_answer_before_admission(acme, settings, verdict, admitted):
    settings.ADMISSION_MODEL_CHECK = True
    question = "How long do I have to return an item?"
    with scripted_model("You can send it back within 30 days of delivery [1].", completion(verdict)) as server:
        outcome = pipeline.ask(asker(acme), question)
    assert outcome.answerer == "model" and len(server.requests) == 2
    check = prompt_of(server, 1)
    assert "30 days of delivery" in check and question in check and server.requests[1]["body"]["stream"] is False
    admission = next(d for d in outcome.decisions if d["layer"] == "admission")
    assert (admission["disposition"] == "stored") is admitted
    if not admitted:
        assert admission["reason"] == "model_check: the model says UNSUPPORTED"
