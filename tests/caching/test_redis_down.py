"""Redis holds caches, never the only copy of anything: with Redis dead an Ask still answers through
the miss path (the semantic cache lives in PostgreSQL and keeps working), and every Redis-backed
layer records ``skipped`` with the reason. A throwaway redis-server is killed and restarted here."""
from __future__ import annotations

import json

import pytest

from caching.models import AskEvent
from core.redis_client import get_redis, reset_redis_state
from core.servers import start_redis
from retrieval.services import active_generation_cached
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, decision, offer, scripted_model

ANSWER = "Unused items can be returned within 30 days of delivery [1]."


@pytest.fixture
def throwaway_redis(settings, tmp_path):
    """A redis-server of this test's own, which the test may kill and restart on the same port."""
    servers = []

    def start(port=None):
        proc = start_redis(port, data_dir=tmp_path)
        servers.append(proc)
        settings.REDIS_URL = f"redis://127.0.0.1:{proc.port}/0"
        reset_redis_state()
        return proc

    yield start
    for proc in servers:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    reset_redis_state()


def kill(proc) -> None:
    proc.kill()
    proc.wait(timeout=10)


def skipped(event: AskEvent) -> list[tuple[str, str]]:
    return list(event.decisions.filter(disposition="skipped").order_by("pk").values_list("layer", "reason"))


def says_redis_down(reason: str) -> bool:
    # the first layer to try meets the error; later ones skip Redis at once while it backs off
    return reason in ("redis unavailable: ConnectionError", "redis unavailable (backing off)")


def test_with_redis_unreachable_an_ask_answers_through_the_miss_path(acme, settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port
    reset_redis_state()
    question = "What is your return policy?"

    with scripted_model(ANSWER) as server:
        result = pipeline.ask(pipeline.Asker(acme, "en"), question)

    assert result.status == "answered" and result.answer == ANSWER and result.layer == "none"
    assert len(server.requests) == 1
    assert result.to_api()["cache"] == {"layer": "none"}
    event = AskEvent.objects.get(request_id=result.request_id)
    decisions = skipped(event)
    # the exact lookup, the search-result cache, the exact store (after admission), the embedding cache
    assert [layer for layer, _ in decisions] == ["exact", "retrieval", "exact", "embedding"], decisions
    assert decisions[0][1] == "redis unavailable: ConnectionError"
    assert all(says_redis_down(reason) for layer, reason in decisions[1:3])
    assert decisions[3][1] == "0/1 from cache (redis unavailable)"
    # the verified answer still reaches the semantic cache (PostgreSQL)
    assert event.decisions.filter(layer="semantic", disposition="stored").exists()


def test_killing_and_restarting_redis_never_fails_an_ask(acme, throwaway_redis):
    redis_proc = throwaway_redis()
    asker = pipeline.Asker(acme, "en")
    question = "What is your return policy?"
    with scripted_model(ANSWER, ANSWER) as server:
        assert offer(asker, question).admitted
        assert cached_lookup(asker, question)[0].layer == "exact"

        kill(redis_proc)

        # the same question: the exact layer is skipped, the semantic layer (PostgreSQL) serves it
        state, served = cached_lookup(asker, question)
        assert served is not None and state.layer == "semantic"
        assert decision(state, "exact").disposition == "skipped"
        assert decision(state, "exact").reason.startswith("redis unavailable")
        # a new question: retrieval and generation, nothing from Redis
        result = pipeline.ask(asker, "Can I return a jacket I wore once?")
        assert result.status == "answered" and result.answer == ANSWER and len(server.requests) == 1
        event = AskEvent.objects.get(request_id=result.request_id)
        layers = [layer for layer, reason in skipped(event) if says_redis_down(reason)]
        assert layers == ["exact", "retrieval", "exact"]
        assert skipped(event)[-1] == ("embedding", "0/1 from cache (redis unavailable)")

        throwaway_redis(redis_proc.port)  # back, empty, on the same port

        state, served = cached_lookup(asker, question)
        assert decision(state, "exact").reason == "no entry"  # Redis answers again (and lost its data)
        assert served is not None and state.layer == "semantic"
        result = pipeline.ask(asker, "Can I return a jacket I wore once?")
        assert result.layer in ("exact", "semantic")  # admitted while Redis was down: semantic has it
    assert get_redis().ping()


def test_the_api_answers_with_redis_dead(client, acme, settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"
    reset_redis_state()
    with scripted_model(ANSWER):
        response = client.post("/api/t/acme/ask", data=json.dumps({"question": "What is your return policy?"}),
                               content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "answered" and body["answer"] == ANSWER
    assert body["cache"] == {"layer": "none"}
    event = AskEvent.objects.get(request_id=body["request_id"])
    assert all(d.reason.startswith("redis unavailable") for d in event.decisions.filter(layer="exact"))


def test_an_unreadable_search_result_entry_is_searched_again(acme):
    """A value Redis returns but the code cannot read (corrupt, or written by an older release) is a miss."""
    from django.conf import settings

    from caching.layers.search import search_key

    state = pipeline.start(pipeline.Asker(acme, "en"), "What is your return policy?", streamed=False)
    pipeline.check_eligibility(state)
    key = search_key(state.normalized, acme.pk, "en", settings.RETRIEVAL_TOP_K, active_generation_cached().pk)
    for unreadable in (b"{not json", b'[{"chunk_id": 1}]'):
        get_redis().set(key, unreadable)
        state.layers.clear()
        pipeline.retrieve(state)
        assert state.passages and state.passages[0].article_id == "return-policy"
        assert [(d.layer, d.disposition) for d in state.layers] == [("retrieval", "miss")]
        assert [h["article_id"] for h in json.loads(get_redis().get(key))][0] == "return-policy"  # rewritten
