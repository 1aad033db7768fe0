"""Staff mark an answer wrong, not only a hit (issue 13, part 3): the reason "answer wrong for its
own question" quarantines the entry and drops it from every layer, puts the Ask in the review
queue with the corrected-answer form, never becomes a calibration pair, and is counted apart
from wrong hits; a customer's "no" on a fresh answer reaches the queue too."""
import json

from django.conf import settings
from django.urls import reverse

from caching import stats
from caching.layers.exact import ExactLayer
from caching.layers.search import search_key
from caching.models import AskEvent, LabeledPair, ReasonCode, ReviewItem, SampledHit, SemanticEntry
from core.redis_client import get_redis
from retrieval.search import index_version
from retrieval.services import active_generation_cached
from supportbot import pipeline, review
from tests.caching.helpers import cached_lookup, offer
from tests.staff.conftest import served_hit

RETURN_Q = "How do I return an item?"
PARAPHRASE = "How can I return an item?"
WRONG = ReasonCode.ANSWER_WRONG


def served_layer(tenant, question) -> str:
    state, served = cached_lookup(pipeline.Asker(tenant, "en", None), question)
    return state.layer if served is not None else "none"


def cached_search_key(tenant, question) -> str:
    """The search-result key of a question, after retrieving it once (the results are cached)."""
    state = review.answer_scope(tenant, "en", question)
    pipeline.retrieve(state)
    key = search_key(state.normalized, tenant.pk, "en", settings.RETRIEVAL_TOP_K,
                     active_generation_cached().pk, index_version(tenant.pk))
    assert get_redis().exists(key)
    return key


def test_labelling_a_sampled_hit_answer_wrong_quarantines_it_everywhere_and_queues_it(
        client, acme, agent, sample_everything):
    ask, decision, offered = served_hit(acme, RETURN_Q, PARAPHRASE, answer="Returns are not possible [1].")
    entry = SemanticEntry.objects.get(pk=int(decision.candidate))
    search = cached_search_key(acme, PARAPHRASE)
    assert served_layer(acme, RETURN_Q) == "exact"

    review.label_sample(SampledHit.objects.get(decision=decision), "wrong", WRONG, agent)

    entry.refresh_from_db()
    assert entry.status == SemanticEntry.Status.QUARANTINED
    assert not ExactLayer().lookup(offered.key, acme.pk).hit
    assert not get_redis().exists(search)
    assert served_layer(acme, RETURN_Q) == served_layer(acme, PARAPHRASE) == "none"
    item = ReviewItem.objects.get(ask=ask)
    assert (item.status, item.source, item.reason) == ("open", "sample", WRONG)
    assert not LabeledPair.objects.exists()  # the two questions were alike: nothing to calibrate

    client.force_login(agent)
    page = client.get(reverse("staff:queue")).content.decode()
    assert f'id="review-{item.pk}"' in page and "Approve corrected answer" in page
    assert "Answer wrong for its own question" in page


def test_a_wrong_answer_is_counted_apart_from_wrong_hits(client, acme, agent, sample_everything):
    _, wrong_answer, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    _, wrong_hit, _ = served_hit(acme, "How long does shipping take?", "How long does shipping take?",
                                 answer="Shipping takes a while [1].")
    review.label_sample(SampledHit.objects.get(decision=wrong_answer), "wrong", WRONG, agent)
    review.label_sample(SampledHit.objects.get(decision=wrong_hit), "wrong", "entity", agent)

    rates = stats.wrong_hit_rates(tenant_id=acme.pk)
    assert (rates["by_layer"]["exact"].k, rates["by_layer"]["exact"].n) == (1, 2)
    assert (rates["answers_by_layer"]["exact"].k, rates["answers_by_layer"]["exact"].n) == (1, 2)
    item = ReviewItem.objects.get(decision=wrong_answer)
    review.review_confirm_wrong(item, WRONG, agent)
    assert stats.wrong_answers_confirmed(tenant_id=acme.pk) == {"exact": 1}

    client.force_login(agent)
    page = client.get("/admin/ask/", {"range": "24h", "tenant": acme.slug}).content.decode()
    assert "Wrong-answer rate" in page and 'id="wrong-answers-confirmed"' in page


def test_no_on_a_fresh_answer_reaches_the_queue_and_a_correction_replaces_it(client, acme, agent, sample_nothing):
    offered = offer(pipeline.Asker(acme, "en"), RETURN_Q, "Returns are not possible [1].")
    ask = AskEvent.objects.get(request_id=offered.request_id)
    assert served_layer(acme, RETURN_Q) == "exact"
    response = client.post(reverse("api-feedback", args=[acme.slug]),
                           json.dumps({"request_id": str(ask.request_id), "helpful": False,
                                       "comment": "you do take returns"}), content_type="application/json")
    assert response.status_code == 200
    item = ReviewItem.objects.get(ask=ask)
    assert (item.source, item.layer, item.status, item.note) == ("feedback", "fresh", "open", "you do take returns")
    assert served_layer(acme, RETURN_Q) == "exact"  # one customer's "no" purges nothing before staff look

    client.force_login(agent)
    assert f'id="review-{item.pk}"' in client.get(reverse("staff:queue")).content.decode()
    corrected = "You can return an item within 30 days of delivery [1]."
    entry = review.review_correct(item, corrected, WRONG, agent)

    assert SemanticEntry.objects.get(source_ask=ask, source="generated").status == SemanticEntry.Status.QUARANTINED
    state, served = cached_lookup(pipeline.Asker(acme, "en", None), RETURN_Q)
    assert served is not None and served.answer == corrected and entry.source == "staff"
    assert not LabeledPair.objects.exists()
    assert stats.wrong_answers_confirmed(tenant_id=acme.pk) == {"fresh": 1}


def test_confirming_a_fresh_answer_wrong_clears_an_exact_only_entry(acme, agent, sample_nothing):
    from core.models import Tenant

    Tenant.objects.filter(pk=acme.pk).update(semantic_mode=Tenant.SemanticMode.OFF)
    acme.refresh_from_db()
    offered = offer(pipeline.Asker(acme, "en"), RETURN_Q, "Returns are not possible [1].")
    ask = AskEvent.objects.get(request_id=offered.request_id)
    _, item = review.feedback_record(ask, False)
    assert item is not None and item.entry is None

    removed = review.review_confirm_wrong(item, WRONG, agent)

    assert removed["exact"] == 1 and not ExactLayer().lookup(offered.key, acme.pk).hit
