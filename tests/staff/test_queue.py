"""Queue membership: which customer feedback, samples and flags become review items."""
import json

import pytest
from django.urls import reverse

from caching.models import AskEvent, Feedback, Label, LabeledPair, ReviewItem, SampledHit
from supportbot import hit_sampling, pipeline, review
from tests.caching.helpers import offer
from tests.staff.conftest import served_hit

RETURN_Q = "How do I return an item?"
RETURN_PARAPHRASE = "How can I return an item?"


def test_no_on_an_exact_hit_opens_a_review_item_from_the_chat_page(client, acme, sample_nothing):
    ask, decision, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    assert ask.serving_layer == "exact"
    url = reverse("chat-feedback", args=[acme.slug, ask.request_id])
    response = client.post(url, {"helpful": "no"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert b"Thanks" in response.content
    item = ReviewItem.objects.get(ask=ask)
    assert (item.source, item.status, item.layer, item.decision_id) == ("feedback", "open", "exact", decision.pk)
    assert item.entry is not None and item.entry.question == RETURN_Q  # found through the exact key
    assert Feedback.objects.get(ask=ask).helpful is False


def test_no_on_a_semantic_hit_via_the_api_opens_one_item_even_when_repeated(client, acme, sample_nothing):
    ask, decision, _ = served_hit(acme, RETURN_Q, RETURN_PARAPHRASE)
    assert ask.serving_layer == "semantic"
    url = reverse("api-feedback", args=[acme.slug])
    for _ in range(2):
        response = client.post(url, json.dumps({"request_id": str(ask.request_id), "helpful": False,
                                                "comment": "this is about something else"}),
                               content_type="application/json")
        assert response.status_code == 200, response.content
        assert response.json()["recorded"] is True
    items = ReviewItem.objects.filter(ask=ask)
    assert items.count() == 1
    assert items[0].entry_id == int(decision.candidate)
    assert items[0].note == "this is about something else"


def test_yes_on_a_hit_opens_nothing_and_no_on_a_fresh_answer_reaches_the_queue(client, acme, sample_nothing):
    ask, _, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    client.post(reverse("chat-feedback", args=[acme.slug, ask.request_id]), {"helpful": "yes"})
    assert not ReviewItem.objects.exists()
    offered = offer(pipeline.Asker(acme, "en"), "Where is the Denver store?", article="opening-hours")
    fresh = AskEvent.objects.get(request_id=offered.request_id)
    assert fresh.serving_layer == "none"
    response = client.post(reverse("api-feedback", args=[acme.slug]),
                           json.dumps({"request_id": str(fresh.request_id), "helpful": False}),
                           content_type="application/json")
    assert response.status_code == 200
    assert Feedback.objects.filter(ask__in=[ask, fresh]).count() == 2
    item = ReviewItem.objects.get()
    assert (item.ask, item.source, item.layer, item.decision.layer) == (fresh, "feedback", "fresh", "admission")
    assert item.entry is not None and item.entry.source_ask_id == fresh.pk  # the entry it was admitted as


def test_feedback_api_rejects_unknown_answers_and_bad_bodies(client, acme, initech, sample_nothing):
    ask, _, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    url = reverse("api-feedback", args=[acme.slug])
    cases = [
        ({"request_id": "not-a-uuid", "helpful": False}, 404),
        ({"request_id": "6b0f3a4e-5f1c-4d36-9a55-0d2f7d4f0b1e", "helpful": False}, 404),
        ({"request_id": str(ask.request_id), "helpful": "no"}, 400),
        ({"request_id": str(ask.request_id), "helpful": False, "extra": 1}, 400),
    ]
    for body, status in cases:
        assert client.post(url, json.dumps(body), content_type="application/json").status_code == status, body
    # another tenant cannot comment on acme's answers
    other = client.post(reverse("api-feedback", args=[initech.slug]),
                        json.dumps({"request_id": str(ask.request_id), "helpful": False}),
                        content_type="application/json")
    assert other.status_code == 404
    assert not ReviewItem.objects.exists()


def test_answer_footer_offers_the_question(client, acme, sample_nothing):
    ask, _, offered = served_hit(acme, RETURN_Q, RETURN_Q)
    from django.template.loader import render_to_string
    from supportbot.pipeline import outcome

    html = render_to_string("supportbot/partials/answer_footer.html", {"outcome": outcome(offered), "tenant": acme})
    assert "Did this answer your question?" in html
    assert reverse("chat-feedback", args=[acme.slug, offered.request_id]) in html


def test_sampled_hit_labelled_wrong_enters_the_queue_and_keeps_a_negative_pair(acme, agent, sample_everything):
    ask, decision, _ = served_hit(acme, RETURN_Q, RETURN_PARAPHRASE)
    sample = SampledHit.objects.get(decision=decision)
    assert (sample.stratum, sample.why, sample.labeled) == ("semantic", "rate", False)
    review.label_sample(sample, "wrong", "scope", agent)
    item = ReviewItem.objects.get(decision=decision)
    assert (item.source, item.reason, item.status) == ("sample", "scope", "open")
    pair = LabeledPair.objects.get(decision=decision)
    assert (pair.should_hit, pair.reason, pair.cached_question, pair.new_question) == \
        (False, "scope", RETURN_Q, RETURN_PARAPHRASE)
    assert pair.similarity == pytest.approx(decision.similarity)
    assert SampledHit.objects.get(pk=sample.pk).labeled


def test_sampled_hit_labelled_correct_stays_out_of_the_queue(acme, agent, sample_everything):
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_PARAPHRASE)
    review.label_sample(SampledHit.objects.get(decision=decision), "correct", "", agent)
    assert not ReviewItem.objects.exists()
    assert LabeledPair.objects.get(decision=decision).should_hit is True
    assert Label.objects.get(decision=decision).verdict == "correct"
    # a second verdict on the same sample (double submit, two labellers) keeps the first
    again = review.label_sample(SampledHit.objects.get(decision=decision), "wrong", "entity", agent)
    assert again.verdict == "correct" and Label.objects.filter(decision=decision).count() == 1
    assert not ReviewItem.objects.exists()


def test_wrong_needs_a_reason(acme, agent, sample_everything):
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_PARAPHRASE)
    with pytest.raises(review.ReviewError):
        review.label_sample(SampledHit.objects.get(decision=decision), "wrong", "", agent)
    assert not Label.objects.exists()


def _clone(decision, **changes):
    """A new decision row like ``decision`` (a sampled decision is sampled once)."""
    copy = type(decision).objects.get(pk=decision.pk)
    copy.pk = None
    for k, v in changes.items():
        setattr(copy, k, v)
    copy.save()
    return copy


def test_sample_rates_and_the_daily_minimum_per_intent(acme, settings, sample_nothing):
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    assert not SampledHit.objects.exists()  # rate 0, no minimum
    settings.SAMPLE_MIN_PER_INTENT_DAY = 2
    ask = decision.ask
    picked = [hit_sampling.sample_decisions(ask, [_clone(decision)]) for _ in range(4)]
    assert [len(p) for p in picked] == [1, 1, 0, 0]  # the first two of the day for this intent
    assert {s.why for p in picked for s in p} == {"intent minimum"}
    # a rare intent has its own minimum; a miss is never a candidate
    assert len(hit_sampling.sample_decisions(ask, [_clone(decision, intent="location")])) == 1
    assert hit_sampling.sample_decisions(ask, [_clone(decision, disposition="miss")]) == []
    settings.SAMPLE_RATES = {"exact": 1.0}
    assert [s.why for s in hit_sampling.sample_decisions(ask, [_clone(decision)])] == ["rate"]


def test_a_hit_the_judge_alone_served_takes_the_judge_rate(acme, settings, sample_nothing):
    """The judge's own serves are the hits its mistakes reach: ``SAMPLE_RATES["judge"]`` samples them
    apart from strict matches; without that key they take the semantic rate."""
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    ask = decision.ask
    judged = "judge: p=0.971 >= 0.929 (similarity 0.812), no veto"
    strict = "strict match, no veto (similarity 0.912; judge not consulted)"
    settings.SAMPLE_RATES = {"semantic": 0.0, "judge": 1.0}
    picked = hit_sampling.sample_decisions(ask, [_clone(decision, layer="semantic", reason=judged),
                                                 _clone(decision, layer="semantic", reason=strict)])
    assert [(s.stratum, s.decision.reason, s.why) for s in picked] == [("semantic", judged, "rate")]
    ref = hit_sampling.DecisionRef(_clone(decision).pk, "semantic", "hit", decision.intent, judged)
    assert len(hit_sampling.sample_batch([(acme.pk, [ref])])) == 1  # the background writer's path
    settings.SAMPLE_RATES = {"semantic": 1.0}
    assert len(hit_sampling.sample_decisions(ask, [_clone(decision, layer="semantic", reason=judged)])) == 1
    settings.SAMPLE_RATES = {"semantic": 1.0, "judge": 0.0}
    assert hit_sampling.sample_decisions(ask, [_clone(decision, layer="semantic", reason=judged)]) == []


def test_misses_and_fresh_answers_are_never_sampled(acme, sample_everything):
    _, _, offered = served_hit(acme, RETURN_Q, RETURN_Q)
    offered_ask = AskEvent.objects.get(request_id=offered.request_id)
    assert not SampledHit.objects.filter(decision__ask=offered_ask).exists()
    assert SampledHit.objects.count() == 1


def test_a_batch_of_hits_takes_the_daily_minimum_once(acme, settings, sample_nothing):
    """The writer samples a batch of hits at once: the day's count is read once and the minimum
    still holds across the batch and the batches after it."""
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    settings.SAMPLE_MIN_PER_INTENT_DAY = 2
    refs = [hit_sampling.DecisionRef(_clone(decision).pk, "exact", "hit", decision.intent) for _ in range(4)]
    picked = hit_sampling.sample_batch([(acme.pk, refs[:3]), (acme.pk, refs[3:])])
    assert [s.decision_id for s in picked] == [refs[0].pk, refs[1].pk]
    assert hit_sampling.sample_batch([(acme.pk, [hit_sampling.DecisionRef(_clone(decision).pk, "exact", "hit",
                                                                   decision.intent)])]) == []
