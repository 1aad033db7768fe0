"""Retention: old records are purged (nightly task), one customer's records can be exported and erased."""
from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from caching.models import AskEvent, CacheDecision, SemanticEntry
from core.redis_client import get_redis
from retrieval.embeddings import get_embedder, question_scope
from supportbot import pipeline
from supportbot.retention import records_purge_older_than
from supportbot.tasks import records_purge


def age(events, days):
    when = timezone.now() - timedelta(days=days)
    AskEvent.objects.filter(pk__in=[e.pk for e in events]).update(created_at=when)
    CacheDecision.objects.filter(ask__in=events).update(created_at=when)


def test_records_older_than_the_retention_period_are_purged(demo, offers, settings):
    acme = demo["acme"]
    old_state, _ = offers.offer(pipeline.Asker(acme, "en", "c1"), "What is your return policy?")
    new_state, _ = offers.offer(pipeline.Asker(acme, "en", "c1"), "How do I reset my password?")
    old = AskEvent.objects.get(request_id=old_state.request_id)
    age([old], 91)
    entry = SemanticEntry.objects.get(source_ask=old)
    settings.RECORD_RETENTION_DAYS = 90
    counts = records_purge.apply().get()  # the nightly task, run in-process
    assert counts["caching.AskEvent"] == 1 and counts["caching.CacheDecision"] >= 1
    assert not AskEvent.objects.filter(pk=old.pk).exists()
    assert not CacheDecision.objects.filter(ask_id=old.pk).exists()
    assert AskEvent.objects.filter(request_id=new_state.request_id).exists()
    # the entry holds the customer's question: it goes with the record it came from
    assert not SemanticEntry.objects.filter(pk=entry.pk).exists()
    assert SemanticEntry.objects.filter(source_ask__request_id=new_state.request_id).exists()
    assert records_purge_older_than(90) == {}
    with pytest.raises(ValueError):
        records_purge_older_than(0)


def test_customer_export_and_erase(demo, offers):
    acme = demo["acme"]
    me, other = pipeline.Asker(acme, "en", "cust-1"), pipeline.Asker(acme, "en", "cust-2")
    mine = [offers.offer(me, q)[0] for q in ("What is your return policy?", "Where is my order AO-123456?")]
    theirs, _ = offers.offer(other, "How do I reset my password?")
    anon, _ = offers.offer(pipeline.Asker(acme, "en"), "How long does shipping take?")
    out = io.StringIO()
    call_command("customer_export", "--tenant", "acme", "--customer", "cust-1", stdout=out, stderr=io.StringIO())
    data = json.loads(out.getvalue())
    assert data["count"] == 2 and {a["question"] for a in data["asks"]} == {
        "What is your return policy?", "Where is my order AO-123456?"}
    assert {a["request_id"] for a in data["asks"]} == {s.request_id for s in mine}
    r = get_redis()
    assert r.get(mine[0].key) is not None
    emb_key = get_embedder().cache_key("What is your return policy?", question_scope(acme.pk))
    assert r.exists(emb_key)

    out = io.StringIO()
    call_command("customer_erase", "--tenant", "acme", "--customer", "cust-1", stdout=out)
    counts = dict(kv.split("=") for kv in out.getvalue().split())
    assert counts["asks"] == "2" and counts["semantic_entries"] == "1" and counts["exact_entries"] == "1"
    assert int(counts["decisions"]) >= 2 and int(counts["embeddings"]) >= 1
    assert not AskEvent.objects.filter(request_id__in=[s.request_id for s in mine]).exists()
    assert not SemanticEntry.objects.filter(question="What is your return policy?").exists()
    assert r.get(mine[0].key) is None and not r.exists(emb_key)
    # nobody else's records or cached answers went
    assert AskEvent.objects.filter(request_id__in=[theirs.request_id, anon.request_id]).count() == 2
    assert r.get(theirs.key) is not None
    assert SemanticEntry.objects.filter(source_ask__request_id=theirs.request_id).exists()
    again = io.StringIO()
    call_command("customer_export", "--tenant", "acme", "--customer", "cust-1", stdout=again, stderr=io.StringIO())
    assert json.loads(again.getvalue())["count"] == 0


def test_erase_with_redis_down_erases_nothing(demo, offers, own_redis):
    from django.core.management.base import CommandError

    acme = demo["acme"]
    state, _ = offers.offer(pipeline.Asker(acme, "en", "cust-1"), "What is your return policy?")
    own_redis.kill()
    with pytest.raises(CommandError, match="nothing was erased"):
        call_command("customer_erase", "--tenant", "acme", "--customer", "cust-1", stdout=io.StringIO())
    assert AskEvent.objects.filter(request_id=state.request_id).exists()


def test_a_customers_records_are_found_through_the_signed_in_index(demo):
    """Asks are written under load and most are anonymous: the customer index holds only the
    signed-in ones, and export and erasure still find them through it."""
    from django.db import connection

    from supportbot.retention import customer_asks

    # the filter alone: on a table this small the planner may take any index that gives the order
    sql, params = customer_asks(demo["acme"], "c1").order_by().query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "askevent_customer_idx" in plan, plan
