"""Admission by generator trust (``caching.answer_checks.grounding``): at ``low`` trust (the embedded
SmolLM2 server) every sentence must restate one passage sentence near-verbatim, numbers included. The
three refused answers are, verbatim, ones SmolLM2-135M wrote for initech in ``bench.answer_quality --answerer
model`` and the word checks admitted: each number is in the passages, on a line about something else."""
from __future__ import annotations

from pathlib import Path

import pytest

from caching.answer_checks import CHECKS, Evidence
from caching.answer_checks.grounding import LOW, STANDARD, LowTrustGroundingCheck

KB = Path(__file__).resolve().parents[2] / "kb"


def passages(*articles: str, tenant: str = "initech", locale: str = "en") -> str:
    return "\n".join((KB / tenant / locale / f"{a}.md").read_text().split("---", 2)[2] for a in articles)


RETURNS = ("How long do I have to return an item?", passages("return-policy", "refunds"))
RESTOCKING = ("Do you charge a restocking fee for opened items?", passages("return-policy"))
TEAM = ("How many people can I add to a Premier team?", passages("team-accounts", "subscription-plans"))


def refusal(context, answer, trust):
    question, source = context
    evidence = Evidence(question, answer, source, "en", known_names="Initech Home", tenant_slug="initech", trust=trust)
    for check in CHECKS:
        found = check.refusal(evidence)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("context, answer", [
    (RETURNS, "You can return an item within 10 days of the date of the return."),
    (RESTOCKING, "You can return items within 14 days of delivery for all customers, including Premier members and "
                 "defective items. The restocking fee applies to items over 50 lb. The restocking fee is **$49** "
                 "(free for Premier members and defective items)."),
    (TEAM, "You can add a team to a Premier team with 2 people."),
])
def test_the_embedded_models_wrong_answers_are_refused_at_low_trust_and_were_admitted_at_standard(context, answer):
    assert refusal(context, answer, STANDARD) is None  # what the word checks let through
    found = refusal(context, answer, LOW)
    assert found is not None and found.code == "ungrounded_for_low_trust", found


@pytest.mark.parametrize("context, answer", [
    (RETURNS, "You can return most items bought from Initech Home within 14 days of delivery [1]."),
    (RESTOCKING, "Opened items in like-new condition are accepted within the return window, but we charge a "
                 "15% restocking fee [1]."),
    (TEAM, "Premier: the owner plus up to 5 members (6 people in total) [1]."),
    (TEAM, "On Premier, the team is the owner plus up to 5 members, 6 people in total [1]."),
])
def test_a_near_verbatim_correct_answer_is_admitted_at_low_trust(context, answer):
    assert refusal(context, answer, LOW) is None


PARAPHRASES = [
    (RETURNS, "Most items can be sent back within 14 days after they are delivered [1]."),
    (RESTOCKING, "Yes: opened items cost a 15% restocking fee, waived for Premier members [1]."),
]


@pytest.mark.parametrize("context, answer", PARAPHRASES)
def test_a_paraphrased_correct_answer_is_admitted_at_standard_trust_and_refused_at_low(context, answer):
    assert refusal(context, answer, STANDARD) is None
    found = refusal(context, answer, LOW)
    assert found is not None and found.code == "ungrounded_for_low_trust"


def test_each_sentence_is_checked_and_the_reason_names_it():
    question, source = RETURNS
    answer = ("You can return most items bought from Initech Home within 14 days of delivery [1]. "
              "Ship the item within 14 days, after which the label expires [1].")
    found = LowTrustGroundingCheck().refusal(Evidence(question, answer, source, "en", trust=LOW))
    assert found is not None and found.code == "ungrounded_for_low_trust" and "'Ship the item" in found.detail, found
    assert LowTrustGroundingCheck().refusal(Evidence(question, answer, source, "en", trust=STANDARD)) is None


@pytest.mark.parametrize("vllm, configured, trust", [
    ("", "", LOW), ("http://vllm:8000", "", STANDARD), ("http://vllm:8000", "low", LOW), ("", "standard", STANDARD)])
def test_the_trust_is_low_for_the_embedded_model_unless_the_operator_says_otherwise(settings, vllm, configured, trust):
    from caching.admission import generation_trust

    settings.VLLM_BASE_URL, settings.GENERATION_TRUST = vllm, configured
    assert generation_trust() == trust


def test_admission_records_the_low_trust_refusal(acme, settings):
    """Through the pipeline: the answer is refused with its reason recorded, and cached nowhere."""
    from supportbot import pipeline
    from caching.models import AskEvent
    from tests.caching.helpers import offer

    settings.VLLM_BASE_URL, settings.GENERATION_TRUST = "", ""
    answer = "Unused items can go back to us within 30 days [1]."
    state = offer(pipeline.Asker(acme, "en"), "What is your return policy?", answer, checks=True)
    event = AskEvent.objects.get(request_id=state.request_id)
    admission = event.decisions.get(layer="admission")
    assert not state.admitted and admission.disposition == "refused"
    assert admission.reason.startswith("ungrounded_for_low_trust: "), admission.reason
    settings.GENERATION_TRUST = "standard"
    assert offer(pipeline.Asker(acme, "en"), "What is your return policy?", answer, checks=True).admitted
