"""The exact answer cache in Redis, through the real pipeline."""
from __future__ import annotations

import json

import pytest
from django.test import override_settings

from caching.layers.exact import ExactLayer, citations
from caching.models import AskEvent
from core.models import Tenant
from core.redis_client import get_redis
from ingestion.models import Article
from ingestion.services import article_edit
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, decision, offer, scripted_model

QUESTION = "What is your return policy?"


def asker(tenant, locale="en", customer=None) -> pipeline.Asker:
    return pipeline.Asker(tenant, locale, customer)


@pytest.fixture
def acme_exact_only(acme):
    """Semantic cache off, so a hit can only come from the exact layer."""
    acme.semantic_mode = Tenant.SemanticMode.OFF
    acme.save(update_fields=["semantic_mode"])
    return acme


@pytest.mark.parametrize("variant", [
    "What is your return policy?",
    "  what IS your   return policy ",
    "WHAT IS YOUR RETURN POLICY?!",
    "What is your return policy\u3002",  # ideographic full stop
    "\uff37hat is your return policy\uff1f",  # full-width W and question mark (NFKC)
])
def test_an_exact_hit_is_served_for_every_normalised_form(acme, variant):
    offered = offer(asker(acme), QUESTION, completion_tokens=73)
    assert offered.admitted

    state, served = cached_lookup(asker(acme), variant)

    assert served is not None and served.answer == offered.answer and served.citations == offered.citations
    event = AskEvent.objects.get(request_id=state.request_id)
    assert event.serving_layer == AskEvent.ServingLayer.EXACT and event.answer == offered.answer
    # an exact hit needs neither the embedding model nor the semantic layer
    assert list(event.decisions.order_by("pk").values_list("layer", "disposition")) == [
        ("eligibility", "miss"), ("exact", "hit")]
    hit = decision(state, "exact")
    assert hit.saved_tokens == 73 and hit.key_version and hit.candidate == offered.key[-16:]
    assert hit.entry_age_s is not None and hit.entry_age_s >= 0
    assert pipeline.outcome(state).to_api()["cache"] == {"layer": "exact"}  # the reason is for staff


@pytest.mark.redis_cluster
def test_a_different_question_misses(acme_exact_only):
    offer(asker(acme_exact_only), QUESTION)
    state, served = cached_lookup(asker(acme_exact_only), "What is your refund policy?")
    assert served is None and decision(state, "exact").reason == "no entry"


@pytest.mark.redis_cluster
def test_the_value_carries_provenance_and_the_ttl_comes_from_settings(acme):
    with override_settings(EXACT_CACHE_TTL_S=321):
        offered = offer(asker(acme), QUESTION)
    r = get_redis()
    assert 300 < r.ttl(offered.key) <= 321
    value = json.loads(r.get(offered.key))
    assert value["source_request"] == offered.request_id
    assert value["model"] == offered.spec.model and value["prompt_version"] == offered.spec.prompt_version
    assert value["created"] > 0 and value["question"] == QUESTION
    # the reverse index lets a changed article purge the key
    article_pk = offered.citations[0]["article_pk"]
    assert offered.key.encode() in r.smembers(citations.key(article_pk, acme.pk))


@pytest.mark.redis_cluster
def test_a_hit_is_refused_once_a_cited_article_has_a_new_version(acme_exact_only):
    offered = offer(asker(acme_exact_only), QUESTION)
    article = Article.objects.get(tenant=acme_exact_only, locale="en", external_id="return-policy")
    old_version = article.version
    assert article_edit(article, title=article.title, body=article.body + "\n\nNew rule.", url=article.url) == "updated"

    state, served = cached_lookup(asker(acme_exact_only), QUESTION)

    assert served is None
    miss = decision(state, "exact")
    assert miss.disposition == "miss" and miss.reason == f"cited article changed: return-policy v{old_version}"
    assert get_redis().get(offered.key) is None  # dropped on sight


def test_an_unrelated_article_edit_keeps_the_hit(acme_exact_only):
    offer(asker(acme_exact_only), QUESTION)
    other = Article.objects.get(tenant=acme_exact_only, locale="en", external_id="opening-hours")
    article_edit(other, title=other.title, body=other.body + "\n\nNew rule.", url=other.url)
    assert cached_lookup(asker(acme_exact_only), QUESTION)[0].layer == "exact"


@pytest.mark.redis_cluster
def test_tenants_and_locales_have_their_own_keys(acme, initech):
    offer(asker(acme), QUESTION)
    for other in (asker(initech), asker(acme, "de")):
        state, served = cached_lookup(other, QUESTION)
        assert served is None and decision(state, "exact").reason == "no entry"


def test_another_model_never_gets_the_answer_of_the_old_one(acme_exact_only):
    offer(asker(acme_exact_only), QUESTION)
    with scripted_model():
        state, served = cached_lookup(asker(acme_exact_only), QUESTION)
    assert served is None and decision(state, "exact").reason == "no entry"
    assert cached_lookup(asker(acme_exact_only), QUESTION)[0].layer == "exact"  # control


@pytest.mark.redis_cluster
def test_a_corrupt_entry_is_a_miss_not_an_error(acme_exact_only):
    offered = offer(asker(acme_exact_only), QUESTION)
    get_redis().set(offered.key, b"{not json")
    state, served = cached_lookup(asker(acme_exact_only), QUESTION)
    assert served is None and decision(state, "exact").disposition == "miss"
    assert get_redis().get(offered.key) is None


@pytest.mark.redis_cluster
def test_purge_article_removes_every_key_citing_it(acme_exact_only):
    offered = offer(asker(acme_exact_only), QUESTION)
    other = offer(asker(acme_exact_only), "When are you open?", article="opening-hours")
    assert ExactLayer().purge_article(offered.citations[0]["article_pk"]) == 1
    assert get_redis().get(offered.key) is None and get_redis().get(other.key) is not None


@pytest.mark.slow
def test_a_real_answer_is_admitted_then_served_by_both_layers(client, acme, model_server):
    def ask(question):
        response = client.post("/api/t/acme/ask", data=json.dumps({"question": question}),
                               content_type="application/json")
        assert response.status_code == 200, response.content
        return response.json()

    fresh = ask("How do I reset my password?")  # the small CPU model answers this one briefly
    assert fresh["status"] == "answered" and fresh["citations"] and fresh["cache"]["layer"] == "none", fresh
    admission = AskEvent.objects.get(request_id=fresh["request_id"]).decisions.get(layer="admission")
    assert admission.disposition == "stored", admission.reason

    again = ask("how do I reset my password")
    assert again["cache"] == {"layer": "exact"}
    assert (again["answer"], again["citations"]) == (fresh["answer"], fresh["citations"])
    assert again["timings_ms"]["total"] < fresh["timings_ms"]["total"] / 10

    paraphrase = ask("How can I reset my password?")
    assert paraphrase["cache"]["layer"] == "semantic" and paraphrase["answer"] == fresh["answer"]


# --------------------------------------------------------------------------- hit records off the request path

def test_inside_a_transaction_a_hit_is_recorded_by_the_caller(acme):
    from supportbot.pipeline import hit_records

    offer(asker(acme), QUESTION)
    state, served = cached_lookup(asker(acme), QUESTION)
    assert served is not None and not hit_records.submit(state)  # no web request, and a transaction is open
    assert AskEvent.objects.filter(request_id=state.request_id).exists()


@pytest.fixture
def writer_batches(monkeypatch):
    """The sizes of the batches the hit-record writer writes, and a list of errors the next
    batches raise instead of being written. The writer is stopped at the end: its thread closes
    its connection, so the test database can be dropped."""
    from supportbot.pipeline import hit_records

    batches, failures, write = [], [], hit_records._write

    def spy(batch):
        batches.append(len(batch))
        if failures:
            raise failures.pop(0)
        write(batch)

    monkeypatch.setattr(hit_records, "_write", spy)
    yield batches, failures
    hit_records.stop()


@pytest.mark.django_db(transaction=True)
def test_in_a_web_request_hit_records_are_batched_by_the_writer(client, writer_batches, caplog):
    """Outside a transaction (as in production) the hit's record is written by the background
    writer, several hits a transaction; a failing batch is logged and the next ones still go in."""
    from django.db import OperationalError

    from supportbot.pipeline import hit_records
    from tests import factories

    tenant = factories.tenant("records-writer")
    factories.article(tenant, "return-policy", "Unused items can be returned within 30 days of delivery.")
    assert offer(asker(tenant), QUESTION).admitted
    batches, failures = writer_batches
    failures.append(OperationalError("the database went away"))
    ids = []
    for _ in range(6):
        response = client.post(f"/api/t/{tenant.slug}/ask", data=json.dumps({"question": QUESTION}),
                               content_type="application/json")
        assert response.status_code == 200 and response.json()["cache"]["layer"] == "exact"
        ids.append(response.json()["request_id"])
    assert hit_records.flush()
    assert sum(batches) == 6
    assert "could not record" in caplog.text
    written = AskEvent.objects.filter(request_id__in=ids)
    assert written.count() == 6 - batches[0]  # the failed batch is lost, nothing else
    for event in written:
        assert event.serving_layer == "exact"
        assert list(event.decisions.order_by("pk").values_list("layer", "disposition")) == [
            ("eligibility", "miss"), ("exact", "hit")]


@pytest.mark.django_db(transaction=True)
def test_the_writer_batches_hits_that_arrive_together_and_feedback_waits_for_their_record(client, settings,
                                                                                          writer_batches):
    """Hits arriving within the linger go in one batch; feedback posted the moment an answer
    arrives finds its Ask although the record was still queued; a semantic hit's count is
    written with its record."""
    from caching.models import SemanticEntry
    from supportbot.pipeline import hit_records
    from tests import factories

    settings.RECORDS_LINGER_MS = 300.0
    tenant = factories.tenant("records-linger", semantic_mode="serve")
    factories.article(tenant, "return-policy", "Unused items can be returned within 30 days of delivery.")
    assert offer(asker(tenant), QUESTION).admitted
    batches, _ = writer_batches
    answers = []
    for question in (QUESTION, QUESTION, "return policy details"):
        response = client.post(f"/api/t/{tenant.slug}/ask", data=json.dumps({"question": question}),
                               content_type="application/json")
        answers.append(response.json())
    assert [a["cache"]["layer"] for a in answers] == ["exact", "exact", "semantic"]
    feedback = client.post(f"/api/t/{tenant.slug}/feedback", content_type="application/json",
                           data=json.dumps({"request_id": answers[0]["request_id"], "helpful": False}))
    assert feedback.status_code == 200 and feedback.json()["recorded"] is True
    assert hit_records.flush()
    assert batches == [3]  # one transaction for the three hits
    assert AskEvent.objects.filter(request_id__in=[a["request_id"] for a in answers]).count() == 3
    entry = SemanticEntry.objects.get(tenant=tenant, status=SemanticEntry.Status.ACTIVE)
    assert entry.hit_count == 1 and entry.last_hit_at is not None


@pytest.mark.django_db(transaction=True)
def test_a_fresh_answer_not_admitted_is_recorded_by_the_writer_and_an_admitted_one_by_its_request(client, acme,
                                                                                                  writer_batches):
    """A fresh answer that was not admitted (and left no near miss) has only its record to write:
    the writer takes it, as a hit's. One that was admitted writes its record itself, in the
    transaction that keeps its cache entries only with their record."""
    from supportbot.pipeline import hit_records

    batches, _ = writer_batches

    def ask(question: str) -> dict:
        response = client.post("/api/t/acme/ask", data=json.dumps({"question": question}),
                               content_type="application/json")
        assert response.status_code == 200
        return response.json()

    handed_off = ask("Do you repair vintage pianos?")
    assert handed_off["cache"]["layer"] == "none" and handed_off["handoff"]
    assert hit_records.flush() and batches == [1]
    assert AskEvent.objects.get(request_id=handed_off["request_id"]).status == "not_covered"
    answered = ask(QUESTION)
    assert answered["cache"]["layer"] == "none" and not answered["handoff"]
    assert AskEvent.objects.filter(request_id=answered["request_id"]).exists()  # written before the response
    assert hit_records.flush() and batches == [1]
    assert ask(QUESTION)["cache"]["layer"] == "exact"  # it was admitted
