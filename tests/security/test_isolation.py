"""Isolation, as properties: whatever was cached by whom, no answer crosses a tenant or a locale,
a personal answer is never served to anyone, and an anonymous visitor never gets what a
signed-in customer was told. Through every layer (exact, semantic, search-result cache) and
through the API, plain and streamed, and the chat page's stream."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from caching import guards
from caching.models import SemanticEntry
from ingestion.models import Article
from supportbot import pipeline
from supportbot.questions import AskRejected
from tests.security.conftest import api_answer, api_post, token_for

GENERAL = [
    "What is your return policy?", "How do I return an item?", "How can I send an item back?",
    "How do I reset my password?", "I forgot my password, how do I reset it?", "Do you ship to Canada?",
    "How long does shipping take?", "How do I enable two-factor authentication?",
    "How can I change my email address?", "How do refunds work?", "What are your opening hours?",
    "Wie kann ich einen Artikel zurückgeben?", "Wie setze ich mein Passwort zurück?",
]
PERSONAL = [
    "Where is my order AO-123456?", "What is the status of my refund?", "Cancel my order",
    "Has my package shipped yet?", "My name is Jane Doe, how do I return an item?",
    "my email is jane@example.com, what is your return policy", "Why was my card declined?",
    "When will my refund for order IH-9876543 arrive?",
]
# The guards' rules read English; a language-independent net (possessives, record ids, "now"
# words) keeps personal questions in other languages out of the shared caches.
PERSONAL_DE = ["Wo ist meine Bestellung AO-123456?", "Wann kommt meine Rückerstattung?",
               "Warum wurde meine Karte abgelehnt?", "Ist mein Paket schon unterwegs?"]
KNOWN_PERSONAL = {q.casefold() for q in PERSONAL}
SCOPES = [("acme", "en"), ("acme", "de"), ("initech", "en")]
CUSTOMERS = [None, "cust-1", "cust-2", "jane@example.com"]

questions = st.one_of(st.sampled_from(GENERAL + PERSONAL), st.sampled_from(GENERAL + PERSONAL).map(str.upper),
                      st.text(min_size=1, max_size=80))
scopes = st.tuples(st.sampled_from(SCOPES), st.sampled_from(CUSTOMERS))
operations = st.lists(st.tuples(st.sampled_from(["offer", "ask"]), scopes, questions), min_size=1, max_size=8)

PROPERTY = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def asker(demo, scope) -> pipeline.Asker:
    (slug, locale), customer = scope
    return pipeline.Asker(demo[slug], locale, customer)


def assert_may_serve(offers, served_answer: str, to: pipeline.Asker, question: str):
    owner = offers.owner(served_answer)
    # ground truth first (the PERSONAL list), then the classifier's own verdicts
    assert question.casefold() not in KNOWN_PERSONAL, f"a personal question was answered from a cache: {question!r}"
    assert owner is not None, f"served an answer nobody offered: {served_answer!r}"
    assert (owner["tenant"], owner["locale"]) == (to.tenant.slug, to.locale), (owner, to)
    assert owner["admitted"], owner
    assert owner["question"].casefold() not in KNOWN_PERSONAL, f"a personal answer was cached and served: {owner}"
    assert owner["category"] == "general", f"a {owner['category']} answer was cached and served: {owner}"
    assert guards.classify(question).eligible, f"an ineligible question was served from a cache: {question!r}"
    if owner["customer"] != to.customer:
        # Shared only because it is a general answer from the knowledge base, not about anyone.
        assert guards.classify(owner["question"]).category == "general"


def test_cached_answers_never_cross_tenant_locale_or_customer(demo, offers):
    served_by = []

    @PROPERTY
    @given(ops=operations)
    def run(ops):
        for op, scope, question in ops:
            who = asker(demo, scope)
            if op == "offer":
                try:
                    state, _ = offers.offer(who, question)
                except AskRejected:
                    continue
                if not state.eligibility.eligible:
                    assert not state.admitted, "a personal/action/time answer was admitted to a shared cache"
                continue
            try:
                state = pipeline.start(who, question, streamed=False)
            except AskRejected:
                continue
            served = pipeline.lookup(state)
            if served is not None:
                assert_may_serve(offers, served.answer, who, question)
                served_by.append(state.layer)

    run()
    # the property was exercised: both answer caches served something along the way
    assert {"exact", "semantic"} <= set(served_by), served_by


@PROPERTY
@given(first=st.sampled_from(SCOPES), second=st.sampled_from(SCOPES),
       question=st.one_of(st.sampled_from(GENERAL), st.text(min_size=3, max_size=60)))
def test_search_result_cache_never_returns_another_scopes_passages(demo, first, second, question):
    for slug, locale in (first, second, first):  # the second scope reads after the first one filled the cache
        try:
            state = pipeline.start(pipeline.Asker(demo[slug], locale), question, streamed=False)
        except AskRejected:
            return
        pipeline.retrieve(state)
        pks = set(state.article_pks.values())
        if pks:
            scopes = set(Article.objects.filter(pk__in=pks).values_list("tenant__slug", "locale"))
            assert scopes == {(slug, locale)}, (slug, locale, scopes)


@pytest.mark.parametrize("question", PERSONAL_DE)
def test_german_personal_questions_bypass_the_shared_caches(demo, offers, question):
    acme = demo["acme"]
    state, _ = offers.offer(pipeline.Asker(acme, "de", "cust-1"), question)
    assert not state.admitted, state.eligibility
    other = pipeline.start(pipeline.Asker(acme, "de", "cust-2"), question, streamed=False)
    assert pipeline.lookup(other) is None


def test_a_personal_question_is_never_cached_even_for_the_same_customer(demo, offers):
    acme = demo["acme"]
    me = pipeline.Asker(acme, "en", "cust-1")
    for q in PERSONAL[:8]:
        state, _ = offers.offer(me, q)
        assert not state.admitted, (q, state.layers)
        again = pipeline.start(me, q, streamed=False)
        assert pipeline.lookup(again) is None
        assert [d.disposition for d in again.layers if d.layer in ("exact", "semantic")] == ["bypass", "bypass"]
    assert not SemanticEntry.objects.filter(tenant=acme).exists()


# --------------------------------------------------------------------------- through the API

API_SCOPES = st.tuples(st.sampled_from(SCOPES), st.sampled_from(CUSTOMERS), st.sampled_from(["key", "token"]),
                       st.booleans())


def test_api_plain_and_streamed_never_serve_across_scopes(client, demo, offers, keys, dead_model, no_rate_limits):
    served = []

    @PROPERTY
    @given(seeds=st.lists(st.tuples(st.sampled_from(SCOPES), st.sampled_from(CUSTOMERS),
                                    st.sampled_from(GENERAL + PERSONAL)), min_size=1, max_size=4),
           asks=st.lists(st.tuples(API_SCOPES, st.one_of(st.sampled_from(GENERAL + PERSONAL), questions)),
                         min_size=1, max_size=4))
    def run(seeds, asks):
        for (scope, customer, question) in seeds:
            try:
                offers.offer(asker(demo, (scope, customer)), question)
            except AskRejected:
                pass
        for ((scope, customer, how, stream), question) in asks:
            slug, locale = scope
            body = {"question": question, "locale": locale, "stream": stream}
            if customer is not None and how == "key":
                response = api_post(client, slug, dict(body, customer=customer), key=keys[slug])
            elif customer is not None:
                response = api_post(client, slug, body, token=token_for(demo[slug], customer))
            else:
                response = api_post(client, slug, body)
            assert response.status_code in (200, 400, 503), response.content[:300]
            if response.status_code == 400:
                continue
            answer = api_answer(response)
            if stream:
                assert answer["streamed_text"].startswith(answer["answer"][:20])
            if answer["cache"]["layer"] != "none":
                assert_may_serve(offers, answer["answer"], pipeline.Asker(demo[slug], locale, customer), question)
                served.append((answer["cache"]["layer"], stream, customer is None))
            else:
                assert offers.owner(answer["answer"]) is None, "a cached answer was served as a fresh one"
            assert all(c["url"].startswith(f"https://help.{slug}") and f"/{locale}/" in c["url"]
                       for c in answer["citations"]), answer["citations"]

    run()
    assert {s for _, s, _ in served} == {True, False}, served  # hits were served plain and streamed
    assert {a for _, _, a in served} == {True, False}, served  # to anonymous and signed-in askers


def test_a_customer_claim_without_a_key_is_refused_and_never_reaches_a_personal_answer(client, demo, offers,
                                                                                      dead_model):
    acme = demo["acme"]
    offers.offer(pipeline.Asker(acme, "en", "cust-1"), "Where is my order AO-123456?")
    response = api_post(client, "acme", {"question": "Where is my order AO-123456?", "customer": "cust-1"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "customer_requires_api_key"
    anonymous = api_answer(api_post(client, "acme", {"question": "Where is my order AO-123456?"}))
    assert anonymous["cache"]["layer"] == "none" and offers.owner(anonymous["answer"]) is None


def test_chat_page_stream_keeps_signed_in_and_anonymous_apart(client, demo, offers, dead_model):
    acme = demo["acme"]
    general = "What is your return policy?"
    offers.offer(pipeline.Asker(acme, "en", "cust-1"), general)
    offers.offer(pipeline.Asker(acme, "en", "cust-1"), "What is the status of my refund?")
    signed_in = client.post("/t/acme/sign-in", {"customer_token": token_for(acme, "cust-1")})
    assert signed_in.status_code == 303 and "customer_token" not in signed_in["Location"]
    from django.test import Client

    for browser, customer in ((client, "cust-1"), (Client(), None)):
        for question in (general, "What is the status of my refund?"):
            bubble = browser.post("/t/acme/ask", {"question": question, "locale": "en"}, HTTP_HX_REQUEST="true")
            assert bubble.status_code == 200
            url = bubble.content.decode().split('sse-connect="')[1].split('"')[0]
            body = b"".join(browser.get(url).streaming_content).decode()
            owner = offers.owner(body)
            if question == general:
                assert owner and owner["tenant"] == "acme" and owner["category"] == "general"
            else:
                assert owner is None, f"a personal answer was served to {customer or 'an anonymous visitor'}"
    from caching.models import AskEvent

    refs = dict(AskEvent.objects.filter(tenant=acme, scope="customer").values_list("question", "customer_ref"))
    assert refs and set(refs.values()) == {pipeline.customer_ref(pipeline.Asker(acme, "en", "cust-1"))}
    assert AskEvent.objects.filter(tenant=acme, scope="anonymous", customer_ref="").count() >= 2


@pytest.mark.parametrize("mode", ["serve", "shadow", "assist"])
def test_semantic_modes_never_serve_another_tenants_entry(demo, offers, mode):
    acme, initech = demo["acme"], demo["initech"]
    acme.semantic_mode = initech.semantic_mode = mode
    acme.save(), initech.save()
    offers.offer(pipeline.Asker(acme, "en"), "How do I reset my password?")
    state = pipeline.start(pipeline.Asker(initech, "en"), "How do I reset my password?", streamed=False)
    assert pipeline.lookup(state) is None and state.assist is None
    semantic = [d for d in state.layers if d.layer == "semantic"][0]
    assert semantic.disposition == "miss" and semantic.reason == "no candidate in scope"
