"""Faults, for real: a Redis that is killed, frozen and restarted; a PostgreSQL that is not there;
a model server that is down, hung, or killed mid-answer. Answers still come through (or a clear
message with a hand-off), nothing wrong is cached, the record says why, nothing hangs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import override_settings

from caching.models import AskEvent, CacheDecision, SemanticEntry
from core.redis_client import DOWN_BACKOFF_S, get_redis
from supportbot import pipeline
from tests.security.conftest import api_answer, api_post, blackhole_server, free_port, parse_sse

CACHED = "What is your return policy?"
MISS = "How do I enable two-factor authentication?"  # has passages, never offered: goes to the model


def decisions(request_id) -> dict[str, tuple[str, str]]:
    return {d.layer: (d.disposition, d.reason) for d in CacheDecision.objects.filter(ask__request_id=request_id)}


def timed(fn):
    started = time.monotonic()
    result = fn()
    return result, time.monotonic() - started


# --------------------------------------------------------------------------- Redis

def test_redis_killed_answers_still_come_through_and_recovery_is_automatic(client, demo, offers, own_redis,
                                                                          dead_model, settings):
    acme = demo["acme"]
    state, _ = offers.offer(pipeline.Asker(acme, "en"), CACHED)
    assert state.admitted and get_redis().get(state.key)
    settings.RATELIMIT_CLIENT_REQUESTS = 1  # limits fail open while Redis is down
    own_redis.kill()

    for stream in (False, True, False):
        response, took = timed(lambda: api_post(client, "acme", {"question": CACHED, "stream": stream}))
        answer = api_answer(response)
        assert response.status_code == 200 and took < 3.0, (response.status_code, took)
        assert answer["cache"]["layer"] == "semantic" and offers.owner(answer["answer"])  # PostgreSQL layer
        exact = decisions(answer["request_id"])["exact"]
        assert exact[0] == "skipped" and "redis unavailable" in exact[1]

    response, took = timed(lambda: api_post(client, "acme", {"question": MISS}))
    answer = api_answer(response)
    assert response.status_code == 503 and took < 5.0  # the model is down too: clear message, no hang
    assert answer["handoff"] and answer["status"] == "unavailable"
    recorded = decisions(answer["request_id"])
    assert recorded["exact"][0] == "skipped" and recorded["retrieval"][0] == "skipped"

    own_redis.restart()
    time.sleep(DOWN_BACKOFF_S + 0.2)
    response = api_post(client, "acme", {"question": CACHED})
    recovered = decisions(api_answer(response)["request_id"])
    assert recovered["exact"][0] == "miss" and recovered["exact"][1] == "no entry"  # Redis in use again
    assert api_post(client, "acme", {"question": CACHED}).status_code == 429  # and the limits are back


def test_redis_frozen_costs_one_socket_timeout_not_a_hang(client, demo, offers, own_redis, dead_model, caplog):
    acme = demo["acme"]
    offers.offer(pipeline.Asker(acme, "en"), CACHED)
    os.kill(own_redis.proc.pid, signal.SIGSTOP)  # accepts connections at the kernel level, never answers
    try:
        response, took = timed(lambda: api_post(client, "acme", {"question": CACHED}))
        answer = api_answer(response)
        assert response.status_code == 200 and answer["cache"]["layer"] == "semantic"
        assert took < settings.REDIS_SOCKET_TIMEOUT_S * 4 + 2.0, took
        exact = decisions(answer["request_id"])["exact"]  # the limiter met the timeout first, then backed off
        assert exact[0] == "skipped" and exact[1].startswith("redis unavailable"), exact
        assert any("TimeoutError" in r.getMessage() for r in caplog.records)
        # while backing off, later requests skip Redis without waiting at all
        response, took = timed(lambda: api_post(client, "acme", {"question": CACHED}))
        assert decisions(api_answer(response)["request_id"])["exact"][1] == "redis unavailable (backing off)"
    finally:
        os.kill(own_redis.proc.pid, signal.SIGCONT)
    time.sleep(DOWN_BACKOFF_S + 0.2)
    response = api_post(client, "acme", {"question": CACHED})
    assert api_answer(response)["cache"]["layer"] == "exact"  # the entry survived the freeze


# --------------------------------------------------------------------------- PostgreSQL

PG_DOWN_SCRIPT = """
import json, django
django.setup()
from django.test import Client
c = Client(raise_request_exception=False)
api = c.post("/api/t/acme/ask", data=json.dumps({"question": "What is your return policy?"}),
             content_type="application/json")
page = c.get("/t/acme/")
form = c.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en"})
print(json.dumps({"api": [api.status_code, api.content.decode(), api.get("Retry-After")],
                  "page": [page.status_code, page.content.decode()[:200]], "form": form.status_code}))
"""


def test_postgres_down_is_a_clear_503(demo):
    """A real outage: a web process whose database does not answer (nothing listens on its port)."""
    env = dict(os.environ, DATABASE_URL=f"postgres://ask:ask@127.0.0.1:{free_port()}/ask",
               DATABASE_CONNECT_TIMEOUT_S="2", DJANGO_SETTINGS_MODULE="supportbot.settings")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", PG_DOWN_SCRIPT], cwd=settings.BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    status, body, retry_after = out["api"]
    assert status == 503 and json.loads(body)["error"]["code"] == "unavailable" and retry_after == "5"
    assert out["page"][0] == 503 and "temporarily unavailable" in out["page"][1]
    assert out["form"] == 503
    assert time.monotonic() - started < 60
    assert AskEvent.objects.count() == 0


def test_a_database_failure_while_recording_leaves_no_partial_writes(client, demo, offers, monkeypatch):
    acme = demo["acme"]

    def fail(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(CacheDecision.objects, "bulk_create", fail)  # after the AskEvent insert
    with pytest.raises(OperationalError):
        offers.offer(pipeline.Asker(acme, "en"), CACHED)
    monkeypatch.undo()
    assert AskEvent.objects.count() == 0 and SemanticEntry.objects.count() == 0
    state = pipeline.start(pipeline.Asker(acme, "en"), CACHED, streamed=False)
    assert pipeline.lookup(state) is None  # the exact entry was taken back too
    assert [k for k in get_redis().scan_iter("ans:*")] == []


def test_a_database_failure_on_the_api_is_a_503_json(client, demo, offers, monkeypatch):
    offers.offer(pipeline.Asker(demo["acme"], "en"), CACHED)

    def fail(*args, **kwargs):
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(AskEvent, "save", fail)
    response = api_post(client, "acme", {"question": CACHED})
    assert response.status_code == 503 and response.json()["error"]["code"] == "unavailable"
    assert response["Retry-After"] == "5"


# --------------------------------------------------------------------------- the model server

def assert_nothing_cached(request_id, question):
    assert not SemanticEntry.objects.filter(source_ask__request_id=request_id).exists()
    assert not SemanticEntry.objects.filter(question=question).exists()
    assert [k for k in get_redis().scan_iter("ans:*")] == []


@pytest.mark.parametrize("stream", [False, True])
def test_model_server_down_clear_message_handoff_and_nothing_cached(client, demo, dead_model, stream):
    response, took = timed(lambda: api_post(client, "acme", {"question": MISS, "stream": stream}))
    answer = api_answer(response)
    assert took < 5.0
    assert response.status_code == (200 if stream else 503)  # a stream has sent its 200 before the model fails
    assert answer["status"] == "unavailable" and answer["handoff"] and "try again" in answer["answer"]
    event = AskEvent.objects.get(request_id=answer["request_id"])
    assert event.status == "unavailable" and event.error_reason.startswith("generation: unavailable")
    assert decisions(answer["request_id"])["admission"][0] == "refused"
    assert_nothing_cached(answer["request_id"], MISS)


def test_model_server_hung_times_out_within_the_budget(client, demo):
    with blackhole_server() as port, override_settings(
            VLLM_BASE_URL=f"http://127.0.0.1:{port}", VLLM_MODEL="hung", VLLM_MODEL_REVISION="x",
            GENERATION_MAX_RETRIES=0, GENERATION_TIMEOUT_S=1.5, GENERATION_CONNECT_TIMEOUT_S=0.5):
        response, took = timed(lambda: api_post(client, "acme", {"question": MISS}))
    answer = api_answer(response)
    assert response.status_code == 503 and took < 1.5 + 3.0, took
    event = AskEvent.objects.get(request_id=answer["request_id"])
    assert event.error_reason == "generation: timeout" and event.status == "unavailable"
    assert_nothing_cached(answer["request_id"], MISS)


@pytest.mark.slow
def test_model_server_killed_mid_stream(client, demo):
    from generation.local_model import start_model_server, stop_model_server

    port = free_port()
    proc = start_model_server("127.0.0.1", port)
    try:
        # the model answerer: the default one (no VLLM_BASE_URL) is extractive and calls no model
        with override_settings(EMBEDDED_MODEL_PORT=port, GENERATION_MAX_TOKENS=300, GENERATION_TIMEOUT_S=120,
                               ASK_ANSWERER="model"):
            response = api_post(client, "acme", {"question": "How do I reset my password? List every step.",
                                                 "stream": True})
            chunks = iter(response.streaming_content)
            first = next(chunks).decode()  # the model has started answering
            proc.kill()
            proc.wait(timeout=10)
            events = parse_sse(first + b"".join(chunks).decode())
    finally:
        stop_model_server(proc.pid, proc)
    done = json.loads(next(d for e, d in events if e == "done"))
    text = "".join(json.loads(d)["delta"] for e, d in events if e == "delta")
    if done["status"] == "not_covered":
        pytest.skip("the model declined before it could be killed")
    assert done["status"] == "interrupted", done
    assert text.endswith(pipeline.UNAVAILABLE_TEXT) and done["handoff"]
    event = AskEvent.objects.get(request_id=done["request_id"])
    assert event.status == "interrupted" and event.error_reason == "generation: interrupted"
    assert_nothing_cached(done["request_id"], event.question)
