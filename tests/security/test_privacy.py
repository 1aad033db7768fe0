"""Nothing a customer or API caller gets back tells them what anyone else asked: no guard reason
quoting a cached question, no timing breakdown that shows which shared cache answered, no cache
shared across tenants or with a personal question. Erasure and retention leave no row, Redis key or
vector holding an erased customer's question (issue 14, items 1-3)."""
from __future__ import annotations

import hashlib
import io
import json

import numpy as np
import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import models
from django.db.models.functions import Cast
from django.test import Client
from pgvector.django import CosineDistance, VectorField

from caching.models import AskEvent, CacheDecision, LabeledPair, SampledHit, SemanticEntry
from core.redis_client import get_redis
from retrieval.embeddings import embed_texts
from supportbot import pipeline
from supportbot.auth import api_key_create
from supportbot.questions import normalize_question
from supportbot.review import entry_quarantine, label_sample
from tests.caching.helpers import cached_lookup
from tests.security.conftest import api_answer, api_post, parse_sse

# A general question carrying someone's name and street, admitted to the shared caches.
SECRET_ASK = "Hello, this is Jane Quimbyfrost from 12 Baker Street, how long does shipping to Canada take?"
PROBE = "Hello, this is Bob from 14 Oak Road, how long does shipping to Canada take?"
TELLTALES = ("quimbyfrost", "baker", "['12']")


def leaks(text: str) -> list[str]:
    return [t for t in TELLTALES if t in text.lower()]


# --------------------------------------------------------------------------- item 1: no reason, no other Ask's text

@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_never_shows_the_cached_question_to_the_caller(client, demo, offers, dead_model, no_rate_limits,
                                                                  stream):
    acme = demo["acme"]
    state, _ = offers.offer(pipeline.Asker(acme, "en", "jane"), SECRET_ASK)
    assert state.admitted
    response = api_post(client, "acme", {"question": PROBE, "stream": stream})
    body = b"".join(response.streaming_content).decode() if stream else response.content.decode()
    answer = api_answer(response) if not stream else json.loads(
        next(d for e, d in parse_sse(body) if e == "done"))
    assert answer["cache"] == {"layer": "none"}
    assert leaks(body) == [], body
    # the full reason stays in the decision record, for staff
    event = AskEvent.objects.get(request_id=answer["request_id"])
    semantic = event.decisions.get(layer="semantic")
    assert semantic.candidate_question == SECRET_ASK and "12" in semantic.reason


def test_the_chat_page_never_shows_the_cached_question(demo, offers, dead_model, no_rate_limits):
    acme = demo["acme"]
    offers.offer(pipeline.Asker(acme, "en", "jane"), SECRET_ASK)
    browser = Client()
    page = browser.post("/t/acme/ask", {"question": PROBE, "locale": "en"})  # the plain form post
    assert page.status_code == 200 and leaks(page.content.decode()) == []
    bubble = browser.post("/t/acme/ask", {"question": PROBE, "locale": "en"}, HTTP_HX_REQUEST="true")
    stream_url = bubble.content.decode().split('sse-connect="')[1].split('"')[0]
    events = b"".join(browser.get(stream_url).streaming_content).decode()
    assert "event: done" in events and leaks(events) == []


def test_an_export_holds_no_cache_reason(demo, offers, dead_model):
    acme = demo["acme"]
    offers.offer(pipeline.Asker(acme, "en", "jane"), SECRET_ASK)
    cached_lookup(pipeline.Asker(acme, "en", "bob"), PROBE)
    out = io.StringIO()
    call_command("customer_export", "--tenant", "acme", "--customer", "bob", stdout=out, stderr=io.StringIO())
    data = json.loads(out.getvalue())
    assert data["count"] == 1 and leaks(out.getvalue()) == []


# --------------------------------------------------------------------------- item 2: timings and presence

def test_customers_get_the_total_time_only_and_a_granted_key_the_breakdown(client, demo, dead_model,
                                                                             no_rate_limits):
    acme = demo["acme"]
    _, plain_key = api_key_create(acme, "shop")
    _, staff_key = api_key_create(acme, "diagnostics", timing_breakdown=True)
    question = {"question": "How long does shipping take?"}
    assert set(api_post(client, "acme", question).json()["timings_ms"]) == {"total"}
    assert set(api_post(client, "acme", question, key=plain_key).json()["timings_ms"]) == {"total"}
    streamed = api_answer(api_post(client, "acme", {**question, "stream": True}, key=plain_key))
    assert set(streamed["timings_ms"]) == {"total"}
    breakdown = api_post(client, "acme", question, key=staff_key).json()["timings_ms"]
    assert {"total", "guards", "retrieval"} <= set(breakdown)


def _latency_class(request_id: str) -> list[tuple[str, str]]:
    """What decides how long an Ask takes: which layers hit, missed or were skipped."""
    event = AskEvent.objects.get(request_id=request_id)
    return sorted((d.layer, d.disposition) for d in event.decisions.exclude(layer__in=["eligibility", "prefix"]))


def test_a_caller_in_another_tenant_cannot_tell_a_question_was_asked(client, demo, offers, dead_model,
                                                                      no_rate_limits):
    acme, initech = demo["acme"], demo["initech"]
    # both products are named in initech's warranty article, so both questions take the same path there whatever
    # the answerability thresholds are
    asked, control = "How long is the warranty on a coffee machine?", "How long is the warranty on a robot vacuum?"
    # the question is asked in acme (its vector and search results cached), then answered and admitted
    api_post(client, "acme", {"question": asked})
    offers.offer(pipeline.Asker(acme, "en", "someone"), asked)
    scope = f":{{t:{acme.pk}}}:".encode()
    assert any(scope in k for k in get_redis().scan_iter(match="emb:*"))
    assert any(k.startswith(f"srch:{{t:{acme.pk}}}:".encode()) for k in get_redis().scan_iter(match="srch:*"))

    fresh = api_post(client, "initech", {"question": control}).json()
    probe = api_post(client, "initech", {"question": asked}).json()
    assert probe.keys() == fresh.keys() and probe["cache"] == fresh["cache"] == {"layer": "none"}
    assert set(probe["timings_ms"]) == set(fresh["timings_ms"]) == {"total"}
    assert _latency_class(probe["request_id"]) == _latency_class(fresh["request_id"])
    assert ("embedding", "miss") in _latency_class(probe["request_id"])


def test_personal_questions_use_neither_shared_cache(demo, dead_model):
    acme = demo["acme"]
    question = "Where is my order AO-7712345?"
    r = get_redis()
    first = pipeline.ask(pipeline.Asker(acme, "en", "cust-1"), question)
    second = pipeline.ask(pipeline.Asker(acme, "en", "cust-2"), question)
    for outcome in (first, second):
        event = AskEvent.objects.get(request_id=outcome.request_id)
        assert event.decisions.get(layer="retrieval").disposition == "bypass"
        assert event.decisions.get(layer="embedding").disposition == "bypass"
    text_hash = hashlib.sha256(question.encode()).hexdigest().encode()
    query_hash = hashlib.sha256(normalize_question(question).encode()).hexdigest()[:32].encode()
    assert not [k for k in r.scan_iter(count=1000) if text_hash in k or query_hash in k]


# --------------------------------------------------------------------------- item 3: erasure reaches everything

def db_rows_containing(token: str) -> list[str]:
    """Every row of every table whose text or JSON columns contain ``token`` (case-insensitive)."""
    found = []
    for model in apps.get_models():
        if model._meta.proxy or not model._meta.managed:
            continue
        for f in model._meta.concrete_fields:
            if isinstance(f, (models.CharField, models.TextField)):
                qs = model.objects.filter(**{f"{f.name}__icontains": token})
            elif isinstance(f, models.JSONField):
                qs = model.objects.annotate(_t=Cast(f.name, models.TextField())).filter(_t__icontains=token)
            else:
                continue
            found += [f"{model._meta.label}.{f.name} pk={pk}" for pk in qs.values_list("pk", flat=True)]
    return found


def vectors_near(vector: np.ndarray) -> list[str]:
    found = []
    for model in apps.get_models():
        for f in model._meta.concrete_fields:
            if isinstance(f, VectorField):
                qs = model.objects.annotate(_d=CosineDistance(f.name, vector)).filter(_d__lt=1e-4)
                found += [f"{model._meta.label}.{f.name} pk={pk}" for pk in qs.values_list("pk", flat=True)]
    return found


def redis_holding(token: str, needles: list[bytes]) -> list[bytes]:
    """Keys whose name or value contains ``token`` (any case) or one of ``needles`` (hashes, vector bytes)."""
    r, found = get_redis(), []
    for key in r.scan_iter(count=1000):
        kind = r.type(key)
        if kind == b"string":
            values = [r.get(key)]
        elif kind == b"set":
            values = list(r.smembers(key))
        elif kind == b"zset":
            values = r.zrange(key, 0, -1)
        elif kind == b"hash":
            values = [b for kv in r.hgetall(key).items() for b in kv]
        elif kind == b"list":
            values = r.lrange(key, 0, -1)
        else:
            values = []
        blobs = [key, *(v for v in values if v is not None)]
        if any(token.encode() in b.lower() or any(n in b for n in needles) for b in blobs):
            found.append(key)
    return found


def test_erasure_leaves_no_row_key_or_vector_holding_the_question(demo, offers, dead_model, settings):
    settings.SAMPLE_RATES = {"semantic": 1.0, "exact": 1.0, "shadow": 1.0}
    acme = demo["acme"]
    jane, bob = pipeline.Asker(acme, "en", "jane"), pipeline.Asker(acme, "en", "bob")
    searched = "Hello, this is Jane Quimbyfrost again, do you ship to Canada?"
    # cached (exact + semantic + its vector)
    state, _ = offers.offer(jane, SECRET_ASK)
    entry = SemanticEntry.objects.get(source_ask__request_id=state.request_id)
    # searched (a miss goes through retrieval, whose results are cached; the model is down)
    pipeline.ask(jane, searched)
    # her own hit, sampled and labelled
    again, served = cached_lookup(jane, SECRET_ASK)
    assert served is not None
    own = SampledHit.objects.get(decision__ask__request_id=again.request_id)
    label_sample(own, "correct", "", None)
    # another customer's decision names her entry as its candidate (reason quoting her words),
    # is sampled and labelled: a pair with her question on the cached side
    probe, _ = cached_lookup(bob, PROBE)
    decision = CacheDecision.objects.get(ask__request_id=probe.request_id, layer="semantic")
    assert decision.candidate == str(entry.pk) and decision.candidate_question == SECRET_ASK
    label_sample(SampledHit.objects.create(decision=decision, tenant=acme, stratum="semantic", why="test"),
                 "wrong", "entity", None)
    assert LabeledPair.objects.filter(cached_question=SECRET_ASK).exists()
    # quarantined
    entry_quarantine(entry, [entry.exact_key], None, why="test")

    vector = embed_texts([SECRET_ASK], cache=None)[0]
    needles = [vector.astype(np.float32).tobytes()] + [
        h for q in (SECRET_ASK, searched) for h in (
            hashlib.sha256(q.encode()).hexdigest().encode(),
            hashlib.sha256(normalize_question(q).encode()).hexdigest()[:32].encode())]
    assert db_rows_containing("quimbyfrost") and vectors_near(vector) and redis_holding("quimbyfrost", needles)

    out = io.StringIO()
    call_command("customer_erase", "--tenant", "acme", "--customer", "jane", stdout=out)
    counts = dict(kv.split("=") for kv in out.getvalue().split())
    assert int(counts["search_entries"]) >= 1 and int(counts["embeddings"]) >= 2, counts

    assert db_rows_containing("quimbyfrost") == []
    assert db_rows_containing("Baker Street") == []
    assert vectors_near(vector) == []
    assert redis_holding("quimbyfrost", needles) == []
    # bob's own record stays, without her words
    decision.refresh_from_db()
    assert AskEvent.objects.filter(request_id=probe.request_id).exists()
    assert decision.candidate_question == "" and "12" not in decision.reason


def test_retention_reaches_quarantined_entries_and_the_decisions_quoting_them(demo, offers, dead_model, settings):
    from datetime import timedelta

    from django.utils import timezone

    from supportbot.retention import records_purge_older_than

    acme = demo["acme"]
    state, _ = offers.offer(pipeline.Asker(acme, "en", "jane"), SECRET_ASK)
    entry = SemanticEntry.objects.get(source_ask__request_id=state.request_id)
    probe, _ = cached_lookup(pipeline.Asker(acme, "en", "bob"), PROBE)
    decision = CacheDecision.objects.get(ask__request_id=probe.request_id, layer="semantic")
    assert decision.candidate == str(entry.pk)
    entry_quarantine(entry, [], None, why="test")
    LabeledPair.objects.create(tenant=acme, decision=decision, cached_question=SECRET_ASK, new_question=PROBE,
                               should_hit=False, source=LabeledPair.Source.LABEL)
    old = timezone.now() - timedelta(days=91)
    AskEvent.objects.filter(request_id=state.request_id).update(created_at=old)
    SemanticEntry.objects.filter(pk=entry.pk).update(created_at=old)
    counts = records_purge_older_than(90)
    assert counts["caching.SemanticEntry"] == 1 and counts["caching.LabeledPair"] == 1
    assert db_rows_containing("quimbyfrost") == []
    decision.refresh_from_db()  # bob's recent record stays, without her question
    assert decision.candidate_question == ""


# --------------------------------------------------------------------------- issue 29: the shared embedding cache

def test_erasure_with_admission_checks_on_leaves_no_vector_key_of_the_question(demo, settings):
    """Admission's relevance check embeds the question too: in the tenant's scope, where erasure finds it."""
    from tests.caching.helpers import offer

    settings.GENERATION_TRUST = "standard"
    acme = demo["acme"]
    question = "Hello, this is Jane Quimbyfrost from Baker Street, do you ship to Canada?"
    state = offer(pipeline.Asker(acme, "en", "jane"), question, "Yes, Acme Outfitters delivers to Canada [1].",
                  article="shipping-countries", containing="Canada", checks=True)
    assert state.admitted  # every content check ran, the relevance check among them
    needles = [hashlib.sha256(question.encode()).hexdigest().encode()]
    assert redis_holding("quimbyfrost", needles)

    call_command("customer_erase", "--tenant", "acme", "--customer", "jane", stdout=io.StringIO())
    assert redis_holding("quimbyfrost", needles) == []
    assert db_rows_containing("quimbyfrost") == []


def test_the_exact_only_purge_embeds_cached_questions_in_the_tenants_scope(demo):
    """``purge_retrieving`` searches an exact entry without a semantic twin by its question: that
    question's vector must not land under the shared (knowledge-base) key, which erasure never reaches."""
    from caching.purge import purge_retrieving
    from core.models import Tenant
    from ingestion.models import Article
    from retrieval.embeddings import get_embedder, question_scope
    from tests.caching.helpers import offer

    Tenant.objects.filter(slug="acme").update(semantic_mode=Tenant.SemanticMode.OFF)
    acme = Tenant.objects.get(slug="acme")
    question = "Hello, this is Jane Quimbyfrost, is there a student discount?"
    stale = offer(pipeline.Asker(acme, "en", "jane"), question, "There is no student discount [1].",
                  article="price-match")
    assert stale.admitted
    purge_retrieving([Article.objects.get(tenant=acme, locale="en", external_id="plus-membership").pk])
    embedder, r = get_embedder(), get_redis()
    assert not r.exists(embedder.cache_key(question)), "a customer's question under the shared key"
    assert r.exists(embedder.cache_key(question, question_scope(acme.pk)))
