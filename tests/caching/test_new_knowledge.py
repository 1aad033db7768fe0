"""New knowledge reaches cached answers (issue 13, part 4): once a new or edited article is
searchable, the cached answers whose question now retrieves it are purged, although they cite
none of it (``caching.purge.purge_retrieving``; the event -> worker path is in
tests/jobs/test_worker.py)."""
from __future__ import annotations

import time

import pytest

from caching.layers.base import CachedAnswer
from caching.layers import exact_layer
from caching.layers.exact import exact_prefix
from caching.models import AskEvent, PurgeRecord, SemanticEntry
from caching.purge import purge_retrieving
from core.models import Tenant
from core.redis_client import get_redis
from ingestion.models import Article
from ingestion.services import article_edit
from retrieval.services import index_sync
from supportbot import pipeline
from tests import factories
from tests.caching.helpers import cached_lookup, offer, scripted_model

pytestmark = pytest.mark.django_db


def article(tenant, external_id) -> Article:
    return Article.objects.get(tenant=tenant, locale="en", external_id=external_id)


def served(tenant, question):
    return cached_lookup(pipeline.Asker(Tenant.objects.get(pk=tenant.pk), "en"), question)[1]


def test_a_new_article_answers_a_question_that_was_not_covered(acme):
    asker = pipeline.Asker(acme, "en")
    question = "Can I rent a kayak?"
    with scripted_model("Yes: kayaks can be rented at the Basecamp Store for $40 a day [1].") as model:
        before = pipeline.ask(asker, question)
        assert before.status == AskEvent.Status.NOT_COVERED and not model.requests

        factories.article(acme, "kayak-rentals", "# Kayak rentals\n\nRent a kayak at the Basecamp Store in Denver "
                          "for $40 a day, paddle and life jacket included. Book at the till.", title="Kayak rentals")
        index_sync(tenant_id=acme.pk)  # what the re-index after the change does
        purge_retrieving([article(acme, "kayak-rentals").pk])

        after = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=acme.pk), "en"), question)
    assert after.status == AskEvent.Status.ANSWERED and after.layer == AskEvent.ServingLayer.NONE
    assert [c["article_id"] for c in after.citations] == ["kayak-rentals"]
    assert "$40 a day" in after.answer


def test_an_edit_to_an_uncited_article_stops_a_cached_answer_it_contradicts(acme):
    question = "Is there a student discount?"
    stale = offer(pipeline.Asker(acme, "en"), question, "There is no student discount; we match lower prices "
                  "instead [1].", article="price-match")
    unrelated = offer(pipeline.Asker(acme, "en"), "How do I turn on two-factor authentication?",
                      article="two-factor-authentication")
    assert stale.admitted and unrelated.admitted
    assert served(acme, question) is not None
    plus = article(acme, "plus-membership")
    assert plus.pk not in {c["article_pk"] for c in stale.citations}

    article_edit(plus, title=plus.title, url=plus.url, body=plus.body + "\n\n## Student discount\n\nStudents get "
                 "a discount of 20% on Plus membership with a valid student card.\n")
    index_sync(tenant_id=acme.pk)
    records = purge_retrieving([plus.pk])

    assert served(acme, question) is None  # neither the exact nor the semantic cache serves it
    assert not get_active(stale.key)
    assert served(acme, "How do I turn on two-factor authentication?") is not None
    assert get_active(unrelated.key)
    [record] = records
    assert (record.article_pk, record.trigger, record.removed_semantic, record.removed_exact) == (
        plus.pk, PurgeRecord.Trigger.RETRIEVAL, 1, 1)
    assert purge_retrieving([plus.pk]) == []  # idempotent: nothing is left to find


def get_active(exact_key):
    return SemanticEntry.objects.filter(exact_key=exact_key, status=SemanticEntry.Status.ACTIVE).exists()


def test_exact_entries_without_a_semantic_twin_are_found_by_their_question(acme):
    Tenant.objects.filter(pk=acme.pk).update(semantic_mode=Tenant.SemanticMode.OFF)
    acme = Tenant.objects.get(pk=acme.pk)
    stale = offer(pipeline.Asker(acme, "en"), "Is there a student discount?", "There is no student discount; we "
                  "match lower prices instead [1].", article="price-match")
    assert stale.admitted and not SemanticEntry.objects.filter(exact_key=stale.key).exists()
    plus = article(acme, "plus-membership")
    article_edit(plus, title=plus.title, url=plus.url, body=plus.body + "\n\n## Student discount\n\nStudents get "
                 "a discount of 20% on Plus membership with a valid student card.\n")
    index_sync(tenant_id=acme.pk)
    [record] = purge_retrieving([plus.pk])
    assert (record.removed_exact, record.removed_semantic) == (1, 0)
    assert served(acme, "Is there a student discount?") is None


def test_a_retired_or_unknown_article_purges_nothing_here(acme):
    offer(pipeline.Asker(acme, "en"), "Is there a student discount?", article="price-match")
    plus = article(acme, "plus-membership")
    Article.objects.filter(pk=plus.pk).update(status=Article.Status.RETIRED)
    assert purge_retrieving([plus.pk, 10 ** 9]) == []
    assert served(acme, "Is there a student discount?") is not None


def test_a_rewrite_is_also_found_by_the_customers_own_words(acme):
    """A rule rewrite's retrieval also searched the customer's own words (``conversation.customers_words``); its
    exact entry keeps them (``CachedAnswer.searched``), and a new article that those words retrieve deletes it,
    although the stored question alone does not retrieve it (was: searched by the stored question only, so the
    entry stayed until its TTL)."""
    key = exact_prefix(acme.pk) + "0" * 32
    exact_layer.store(key, CachedAnswer(
        answer="Go to Account > Password [1].", citations=[], intent="general", created=time.time(), model="m",
        prompt_version="p", source_request="r", question="How do I reset my password?",
        searched="Can I rent a kayak for the weekend?"), acme.pk)
    factories.article(acme, "kayak-rentals", "# Kayak rentals\n\nRent a kayak at the Basecamp Store in Denver "
                      "for $40 a day, paddle and life jacket included. Book at the till.", title="Kayak rentals")
    index_sync(tenant_id=acme.pk)
    [record] = purge_retrieving([article(acme, "kayak-rentals").pk])
    assert (record.removed_exact, record.removed_semantic) == (1, 0)
    assert get_redis().get(key) is None


def test_a_follow_ups_entry_keeps_what_its_retrieval_searched_in_the_customers_words(acme):
    from tests.supportbot.test_answer_facts import FOLLOW_UP
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), FOLLOW_UP)
    event = AskEvent.objects.get(request_id=outcome.request_id)
    [(key, value)] = [(k, v) for k, v in exact_layer.entries(acme.pk) if v and v.get("question") == event.question]
    assert value["searched"].endswith("(about: ship canada)"), value["searched"]
