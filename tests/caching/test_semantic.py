"""The guarded semantic answer cache, through the real pipeline: answers are offered to the normal
admission (``offer_answer``) and questions looked up as the views look them up, with the real
embedding model and pgvector."""
from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.utils import timezone

from caching import guards
from caching.guards import classify
from caching.layers.base import CachedAnswer
from caching.layers.semantic import SemanticLayer
from caching.models import AskEvent, SemanticEntry, ThresholdSetting
from caching.thresholds import invalidate_thresholds, model_in_force
from core.models import Tenant
from ingestion.models import Article
from ingestion.services import article_edit
from retrieval.embeddings import embed_query
from supportbot import pipeline
from tests.caching.helpers import (
    cached_lookup, decided, decision, offer, prompt_of, scripted_model,
)


def asker(tenant, locale="en", customer=None) -> pipeline.Asker:
    return pipeline.Asker(tenant, locale, customer)


def set_mode(tenant: Tenant, mode: str) -> Tenant:
    tenant.semantic_mode = mode
    tenant.save(update_fields=["semantic_mode"])
    return tenant


def entry_for(state: pipeline.AskState) -> SemanticEntry:
    return SemanticEntry.objects.get(normalized_question=state.normalized, status=SemanticEntry.Status.ACTIVE,
                                     tenant=state.asker.tenant, locale=state.asker.locale)


# --------------------------------------------------------------------------- serving

def test_a_paraphrase_is_served_from_the_semantic_layer_and_every_layer_records_its_decision(acme):
    offered = offer(asker(acme), "What is your return policy?")
    assert offered.admitted
    entry = entry_for(offered)
    assert str(entry.source_ask.request_id) == offered.request_id  # provenance

    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")

    assert served is not None and served.answer == "Synthetic verified answer to: What is your return policy? [1]"
    assert served.entry_id == entry.pk and served.citations == offered.citations
    event = AskEvent.objects.get(request_id=state.request_id)
    assert event.serving_layer == AskEvent.ServingLayer.SEMANTIC and event.answer == served.answer
    layers = list(event.decisions.order_by("pk").values_list("layer", "disposition"))
    # the query vector may come from the embedding cache (vectors outlive a test): either is recorded
    assert layers[:3] == [("eligibility", "miss"), ("exact", "miss"), ("semantic", "hit")]
    assert layers[3:] in ([("embedding", "miss")], [("embedding", "hit")])
    hit = decision(state, "semantic")
    assert hit.candidate == str(entry.pk) and hit.candidate_question == "What is your return policy?"
    # the judge that was loaded is recorded with the decision and the entry; a strict match with the
    # judge not serving (the default) does not pay for its forward pass: no probability on the request path
    assert hit.judge_version == guards.judge_version() != "" and entry.judge_version == hit.judge_version
    assert "judge not consulted" in hit.reason and hit.judge_probability is None
    recorded = event.decisions.get(layer="semantic")
    assert (recorded.judge_version, recorded.judge_probability) == (hit.judge_version, hit.judge_probability)
    assert hit.threshold is not None and hit.similarity >= hit.threshold
    assert hit.filters["tenant_id"] == acme.pk and hit.filters["locale"] == "en"
    assert hit.entry_age_s is not None and hit.entry_age_s >= 0
    entry.refresh_from_db()
    assert entry.hit_count == 1 and entry.last_hit_at is not None
    assert pipeline.outcome(state).to_api()["cache"] == {"layer": "semantic"}  # the reason is for staff


@pytest.mark.parametrize("batches", [True, False], ids=["float", "int8"])
def test_the_candidates_are_scored_ahead_only_for_a_judge_that_batches_them(acme, learned, monkeypatch, batches):
    """A float cross-encoder scores a lookup's candidates in one forward pass before they are judged; an
    int8 one scores each pair when it is judged, so the layer does not work out the candidates to prefetch."""
    if learned.cross_encoder is None:
        pytest.skip(f"the chosen judge ({learned.kind}) does not read the cross-encoder")
    offer(asker(acme), "What is your return policy?")
    scorer = copy.copy(learned.cross_encoder)
    scorer.quantize = not batches  # what ``wants_prefetch`` reads; the spy below scores nothing either way
    judge = copy.copy(learned)
    judge.cross_encoder = scorer
    asked = []
    monkeypatch.setattr(guards, "learned_judge", lambda: judge)
    monkeypatch.setattr(guards, "prefetch", lambda question, candidates, *args, **kwargs: asked.append(candidates) or 0)

    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")

    assert served is not None and state.layer == "semantic"  # judged the same way
    assert [[c[0] for c in candidates] for candidates in asked] == ([["What is your return policy?"]] if batches else [])


def test_the_newest_verified_answer_replaces_the_entry_of_the_same_question(acme):
    first = offer(asker(acme), "What is your return policy?", "Old answer [1]")
    second = offer(asker(acme), "what is your RETURN policy", "New answer [1]")
    assert first.admitted and second.admitted
    rows = SemanticEntry.objects.filter(tenant=acme, normalized_question="what is your return policy")
    assert sorted(rows.values_list("answer", "status")) == [("New answer [1]", "active"), ("Old answer [1]", "retired")]
    _, served = cached_lookup(asker(acme), "Can you tell me your return policy?")
    assert served.answer == "New answer [1]"


# --------------------------------------------------------------------------- signature guards

SHIPPING = {"answer": "Standard shipping is free above the order value in the article [1].",
            "article": "shipping-times-and-costs"}


@pytest.mark.parametrize("cached, new, field", [
    ("Do you deliver on weekends?", "Do you not deliver on weekends?", "negations"),
    ("Can I return items bought on sale?", "Can I return items that are not on sale?", "negations"),
    ("Can I return an opened item?", "Can I return an unopened item?", "conditions"),
    ("Can I return an item?", "Can I return a damaged item?", "conditions"),
    ("Is shipping free for orders over $50?", "Is shipping free for orders under $50?", "comparatives"),
    ("Is shipping free for orders over $50?", "Is shipping free for orders over $100?", "money"),
    ("Do you ship to Canada?", "Do you ship to Mexico?", "places"),
    ("Does the Trailblazer 2 tent have a warranty?", "Does the Trailblazer 3 tent have a warranty?", "numbers"),
])
def test_signature_guards_refuse_a_near_miss_the_embedding_alone_would_serve(acme, cached, new, field):
    # the synthetic answer must be grounded in what it cites (an amount the article lacks is refused)
    offered = offer(asker(acme), cached, **(SHIPPING if "$" in cached else {}))
    assert offered.admitted, offered.layers
    entry = entry_for(offered)

    state, served = cached_lookup(asker(acme), new)

    assert served is None
    d = decision(state, "semantic")
    assert d.disposition == "miss" and d.candidate == str(entry.pk)
    # the similarity clears the intent's floor: only the veto stands between them
    assert d.similarity >= d.threshold, (d.similarity, d.threshold)
    assert field in d.signature_difference, d.signature_difference
    assert d.reason.startswith("veto:") and field in d.reason, d.reason
    assert d.judge_probability is None  # a veto refuses before the judge is asked
    assert AskEvent.objects.get(request_id=state.request_id).serving_layer == AskEvent.ServingLayer.NONE


def test_order_numbers_never_share_an_answer(acme):
    """A question about one order is personal: it is neither stored nor looked up. Even an entry
    that got in another way (staff-approved) is refused to a question about another order."""
    offered = offer(asker(acme), "Can I track order 4417 online?")
    assert not offered.admitted and not SemanticEntry.objects.filter(tenant=acme).exists()
    state, served = cached_lookup(asker(acme), "Can I track order 4471 online?")
    assert served is None and decided(state, "semantic").disposition == "bypass"

    # a staff-approved entry about order 4417, then the layer itself is asked about order 4471
    layer = SemanticLayer()
    probe = pipeline.start(asker(acme), "Can I track order 4417 online?", streamed=False)
    pipeline.check_eligibility(probe)
    scope = pipeline.semantic_scope(probe)
    layer.store(scope, question=probe.question, normalized_question=probe.normalized,
                vector=embed_query(probe.question), exact_key=probe.key, source=SemanticEntry.Source.STAFF,
                answer=CachedAnswer(answer="Order 4417 ships Monday [1].", citations=[], intent="policy",
                                    created=0.0, model="m", prompt_version="p", source_request=""))
    new = "Can I track order 4471 online?"
    result = layer.lookup(scope, new, embed_query(new), Tenant.SemanticMode.SERVE)
    assert not result.hit and result.value is None
    assert result.similarity > 0.8  # close in embedding space, yet a different order
    assert result.signature_difference["ids"] == {"cached": ["4417"], "new": ["4471"]}


# --------------------------------------------------------------------------- isolation

def test_an_answer_never_crosses_tenants(acme, initech):
    question = "What is your return policy?"
    assert offer(asker(acme), question).admitted

    for q in (question, "return policy details"):
        state, served = cached_lookup(asker(initech), q)
        assert served is None
        assert decision(state, "exact").disposition == "miss"
        assert decision(state, "semantic").reason == "no candidate in scope"
    # control: the same lookups in acme hit
    assert cached_lookup(asker(acme), "Can you tell me your return policy?")[1] is not None


def test_an_answer_never_crosses_locales(acme):
    question = "Wie kann man das Passwort zurücksetzen?"
    assert offer(asker(acme, "de"), question, article="password-reset").admitted

    state, served = cached_lookup(asker(acme, "en"), question)
    assert served is None
    assert decision(state, "exact").reason == "no entry"
    assert decision(state, "semantic").reason == "no candidate in scope"
    # control: the German asker gets it
    assert cached_lookup(asker(acme, "de"), question)[0].layer == "exact"


@pytest.mark.parametrize("question", [
    "What is my account balance?",
    "Where is my order?",
    "When will my refund arrive?",
    "Has my package shipped yet?",
])
def test_a_customer_s_personal_answer_never_reaches_another_customer(acme, question):
    offered = offer(asker(acme, customer="u-1"), question, "Your order ships tomorrow [1].")
    assert not offered.admitted
    assert decided(offered, "admission").reason.startswith("ineligible: personal")

    for other in ("u-2", "u-1", None):
        state, served = cached_lookup(asker(acme, customer=other), question)
        assert served is None
        assert decision(state, "exact").disposition == "bypass"
        assert decision(state, "semantic").disposition == "bypass"
    assert not SemanticEntry.objects.filter(tenant=acme).exists()


def test_general_answers_are_shared_between_customers_but_asks_are_recorded_per_customer(acme):
    offer(asker(acme, customer="u-1"), "What is your return policy?")
    state, served = cached_lookup(asker(acme, customer="u-2"), "What is your return policy?")
    assert served is not None and state.layer == "exact"
    refs = set(AskEvent.objects.filter(tenant=acme).values_list("customer_ref", flat=True))
    assert len(refs) == 2 and "" not in refs and "u-2" not in refs  # hashed, never the raw id


# --------------------------------------------------------------------------- modes

def test_shadow_mode_serves_fresh_but_records_the_would_be_hit(acme):
    set_mode(acme, Tenant.SemanticMode.SHADOW)
    with scripted_model("Unused items can be returned within 30 days of delivery [1].") as server:
        offered = offer(asker(acme), "What is your return policy?")
        entry = entry_for(offered)

        state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")
        assert served is None
        d = decision(state, "semantic")
        assert d.disposition == "shadow_hit" and d.candidate == str(entry.pk)
        assert d.reason.startswith("shadow: would serve")
        entry.refresh_from_db()
        assert entry.hit_count == 0

        # the whole Ask: the customer gets the model's fresh answer, the record says what would have been served
        result = pipeline.ask(asker(acme), "hi, what is your return policy")
    assert len(server.requests) == 1
    assert result.answer == "Unused items can be returned within 30 days of delivery [1]."
    assert result.layer == "none" and result.reason.startswith("shadow: would serve")
    event = AskEvent.objects.get(request_id=result.request_id)
    assert event.serving_layer == "none"
    assert event.decisions.get(layer="semantic", disposition="shadow_hit").candidate == str(entry.pk)


def test_assist_mode_gives_a_near_hit_to_the_model_and_never_admits_the_result(acme):
    set_mode(acme, Tenant.SemanticMode.ASSIST)
    with scripted_model("Opened items can be returned within 30 days if unused [1].") as server:
        offer(asker(acme), "Can I return an item?", "Unused items can be returned within 30 days [1].")
        entries = SemanticEntry.objects.filter(tenant=acme).count()
        result = pipeline.ask(asker(acme), "Can I return an opened item?")
        state, served = cached_lookup(asker(acme), "Can I return an opened item?")

    assert result.answer == "Opened items can be returned within 30 days if unused [1]." and result.layer == "none"
    prompt = prompt_of(server)
    assert "<previous_answer>\nUnused items can be returned within 30 days [1].\n</previous_answer>" in prompt
    event = AskEvent.objects.get(request_id=result.request_id)
    assert event.decisions.get(layer="semantic").disposition == "assist"
    admission = event.decisions.get(layer="admission")
    assert admission.disposition == "refused" and admission.reason.startswith("assisted answer")
    assert SemanticEntry.objects.filter(tenant=acme).count() == entries
    assert served is None and decision(state, "exact").reason == "no entry"


def test_assist_mode_still_serves_a_real_hit(acme):
    set_mode(acme, Tenant.SemanticMode.ASSIST)
    offer(asker(acme), "What is your return policy?")
    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")
    assert served is not None and decision(state, "semantic").disposition == "hit"


def test_mode_off_skips_the_semantic_layer_and_stores_nothing_there(acme):
    set_mode(acme, Tenant.SemanticMode.OFF)
    assert offer(asker(acme), "What is your return policy?").admitted
    assert not SemanticEntry.objects.filter(tenant=acme).exists()
    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")
    assert served is None
    d = decision(state, "semantic")
    assert d.disposition == "skipped" and d.reason == "semantic cache off for this tenant"
    assert cached_lookup(asker(acme), "What is your return policy?")[0].layer == "exact"


# --------------------------------------------------------------------------- what keeps an entry servable

def test_an_entry_citing_a_changed_article_is_refused_and_purged(acme):
    offered = offer(asker(acme), "What is your return policy?")
    entry = entry_for(offered)
    article = Article.objects.get(tenant=acme, locale="en", external_id="return-policy")
    article_edit(article, title=article.title, body=article.body + "\n\nReturns now take 45 days.", url=article.url)

    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")

    assert served is None
    d = decision(state, "semantic")
    assert d.disposition == "miss" and d.candidate == str(entry.pk) and d.reason == "cited article changed"
    entry.refresh_from_db()
    assert entry.status == SemanticEntry.Status.PURGED and entry.hit_count == 0
    # and the same question, whose entry is an exact match in both layers
    assert cached_lookup(asker(acme), "What is your return policy?")[1] is None


def test_an_entry_citing_a_retired_article_is_refused(acme):
    from ingestion.services import article_retire

    offer(asker(acme), "What is your return policy?")
    article_retire(Article.objects.get(tenant=acme, locale="en", external_id="return-policy"))
    assert cached_lookup(asker(acme), "Can you tell me your return policy?")[1] is None


def test_a_policy_version_bump_makes_every_older_entry_unreachable(acme):
    offer(asker(acme), "What is your return policy?")
    acme.policy_version += 1
    acme.save(update_fields=["policy_version"])
    acme = Tenant.objects.get(pk=acme.pk)

    for q in ("What is your return policy?", "return policy details"):
        state, served = cached_lookup(asker(acme), q)
        assert served is None
        assert decision(state, "exact").reason == "no entry"
        assert decision(state, "semantic").reason == "no candidate in scope"
    # answers admitted under the new policy are served again
    offer(asker(acme), "What is your return policy?")
    assert cached_lookup(asker(acme), "Can you tell me your return policy?")[1] is not None


def test_an_expired_entry_is_not_a_candidate(acme):
    entry = entry_for(offer(asker(acme), "What is your return policy?"))
    SemanticEntry.objects.filter(pk=entry.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")
    assert served is None and decision(state, "semantic").reason == "no candidate in scope"


def test_an_entry_embedded_by_another_model_version_is_not_a_candidate(acme):
    entry = entry_for(offer(asker(acme), "What is your return policy?"))
    SemanticEntry.objects.filter(pk=entry.pk).update(embedding_version="older-version")
    state, served = cached_lookup(asker(acme), "Can you tell me your return policy?")
    assert served is None and decision(state, "semantic").reason == "no candidate in scope"


def test_the_threshold_of_the_intent_comes_from_the_newest_staff_setting(acme):
    question, paraphrase = "What is your return policy?", "return policy details"
    intent = classify(paraphrase).intent
    offer(asker(acme), question)
    name, version = model_in_force()  # a staff threshold names the embedding model it was measured on
    ThresholdSetting.objects.create(intent=intent, value=0.99, version=1, embedding_model=name, embedding_version=version)
    ThresholdSetting.objects.create(intent=intent, value=0.995, version=2, embedding_model=name,
                                    embedding_version=version)
    invalidate_thresholds()

    state, served = cached_lookup(asker(acme), paraphrase)

    assert served is None
    d = decision(state, "semantic")
    assert d.threshold == 0.995 and d.similarity < 0.995 and d.disposition == "miss"


@pytest.mark.django_db(transaction=True)
def test_writers_counting_the_same_entries_at_once_never_deadlock():
    """Two web processes' record writers add hits to overlapping entries in opposite orders:
    the rows are locked in key order, so both commit and every hit is counted."""
    import threading

    from django.db import connection

    from tests import factories

    tenant = factories.tenant("count-hits")
    factories.article(tenant, "return-policy", "Unused items can be returned within 30 days of delivery.")
    for q in ("What is your return policy?", "Can I return an item?", "How do returns work?",
              "Do you accept returns?"):
        offer(asker(tenant), q)
    pks = list(SemanticEntry.objects.filter(tenant=tenant, status=SemanticEntry.Status.ACTIVE)
               .order_by("pk").values_list("pk", flat=True))
    assert len(pks) == 4
    layer, errors, rounds = SemanticLayer(), [], 15

    def writer(order):
        try:
            for _ in range(rounds):
                layer.count_hits({pk: 1 for pk in order})
        except Exception as exc:  # noqa: BLE001 - the assertion below reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(order,)) for order in (pks, pks[::-1])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(SemanticEntry.objects.filter(pk__in=pks).values_list("hit_count", flat=True)) == {2 * rounds}
