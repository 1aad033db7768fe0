"""The async server (ASGI under uvicorn, as ``make run`` serves) end to end over real HTTP: the
chat page and the API, in-flight caps, a customer who leaves mid-answer, a reader too slow.

The model is the stand-in model server (``modelserver.standin``): the OpenAI streaming protocol at
a fixed rate, counting when each token was generated and when its client went away (a vLLM server
cannot run here; the CPU model cannot be told how fast to stream).

Named to run late in this folder: the server's threads use their own database connections, so
these tests commit (``transaction=True``) and the database is flushed after each.
"""
from __future__ import annotations

import json
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from caching.models import AskEvent
from core import metrics
from modelserver.standin import StandInModel
from supportbot import inflight

pytestmark = pytest.mark.django_db(transaction=True)

HOST = "127.0.0.1"


@pytest.fixture
def asgi_server(asgi_live_server):
    return asgi_live_server.url


@pytest.fixture
def standin(settings):
    """A stand-in model streaming a word every 50 ms for 100 words, as the model answerer's backend."""
    model = StandInModel(interval_s=0.05, tokens=100)
    port = model.start_in_thread(HOST)
    settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_MODEL_REVISION = f"http://{HOST}:{port}", "standin", "r1"
    settings.ASK_ANSWERER, settings.GENERATION_MAX_RETRIES = "model", 0
    settings.ADMISSION_MODEL_CHECK = False
    yield model
    model.stop()


def sse_events(lines) -> list[tuple[str, str]]:
    events, kind, data = [], None, []
    for line in lines:
        if line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: "):
            data.append(line[len("data: "):])
        elif line == "" and kind:
            events.append((kind, "\n".join(data)))
            kind, data = None, []
    return events


def open_stream(client: httpx.Client, url: str, question: str):
    """POST a streamed ask; returns the response (open) and an iterator of its lines."""
    request = client.build_request("POST", url, json={"question": question, "stream": True})
    response = client.send(request, stream=True)
    return response, response.iter_lines()


def wait_for(predicate, timeout_s: float = 10.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def counter(metric, *labels) -> float:
    return metric.labels(*labels)._value.get()


# --------------------------------------------------------------------------- everything that works today

def test_the_chat_page_and_the_api_work_under_the_async_server(asgi_server, acme, settings):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"
    with httpx.Client(base_url=asgi_server, timeout=60) as client:
        page = client.get("/t/acme/")
        assert page.status_code == 200 and "csrftoken" in client.cookies
        token = client.cookies["csrftoken"]
        bubble = client.post("/t/acme/ask", data={"question": "How long does shipping to the United Kingdom take?",
                                                  "csrfmiddlewaretoken": token},
                             headers={"HX-Request": "true", "X-CSRFToken": token})
        assert bubble.status_code == 200
        stream_url = re.search(r'sse-connect="([^"]+)"', bubble.text).group(1)
        streamed = client.get(stream_url)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = sse_events(streamed.text.split("\n"))
        assert [k for k, _ in events][-1] == "done" and any(k == "delta" for k, _ in events)
        assert "4–7 business days" in "".join(d for k, d in events if k == "delta")

        first = client.post("/api/t/acme/ask", json={"question": "What is your return policy?"})
        again = client.post("/api/t/acme/ask", json={"question": "What is your return policy?"})
        assert first.status_code == again.status_code == 200
        assert again.json()["cache"]["layer"] == "exact" and again.json()["answer"] == first.json()["answer"]
        feedback = client.post("/api/t/acme/feedback", json={"request_id": again.json()["request_id"], "helpful": True})
        assert feedback.status_code == 200 and feedback.json()["recorded"] is True
        assert client.post("/api/t/acme/ask", json={"question": ""}).status_code == 400
        assert client.get("/admin/login/").status_code == 200


def test_the_api_starts_no_thread_a_request_and_hits_take_the_front_lane(asgi_server, acme, settings, monkeypatch):
    """Django's ASGI handler starts two threads a request (a thread-sensitive context's executor,
    then a thread to join it), blocking the loop each time; the async views share long-lived ones
    (``serving.AskASGIHandler``), and the API ask needs none at all (``serving.calls_inline``: the
    request signals and the response's closing run on the loop): an exact hit's one hop to a thread
    is its hop to the front lane."""
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"
    question = {"question": "What is your return policy?"}
    with httpx.Client(base_url=asgi_server, timeout=60) as client:
        for _ in range(3):  # a fresh answer, then hits: every pool and writer this path uses is started
            assert client.post("/api/t/acme/ask", json=question).status_code == 200
        started, lanes, start, submit = [], [], threading.Thread.start, ThreadPoolExecutor.submit

        def counting_start(thread):
            started.append(thread.name)
            return start(thread)

        def noting_submit(pool, fn, *args, **kwargs):
            lanes.append(pool._thread_name_prefix)
            return submit(pool, fn, *args, **kwargs)

        monkeypatch.setattr(threading.Thread, "start", counting_start)
        monkeypatch.setattr(ThreadPoolExecutor, "submit", noting_submit)
        hits = [client.post("/api/t/acme/ask", json=question) for _ in range(20)]
    assert all(hit.json()["cache"]["layer"] == "exact" for hit in hits)
    assert [name for name in started if not name.startswith(("ask-front", "asgi-context"))] == []
    assert lanes.count("ask-front") == 20 and set(lanes) == {"ask-front"}


def test_a_fresh_streamed_ask_makes_three_hops_and_streams_every_token_in_order(asgi_server, acme, standin,
                                                                                 monkeypatch):
    """A fresh answer's blocking steps take three hops to the pools (the exact lookup on the front
    lane; the semantic lookup, slot, retrieval and answerability check in one hop; admission,
    record and release in one), and its deltas, coalesced or not, are the model's words in order."""
    from modelserver.standin import ANSWER_WORDS

    standin.tokens = 12
    lanes, submit = [], ThreadPoolExecutor.submit

    def noting_submit(pool, fn, *args, **kwargs):
        lanes.append(pool._thread_name_prefix)
        return submit(pool, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", noting_submit)
    with httpx.Client(base_url=asgi_server, timeout=60) as client:
        response, lines = open_stream(client, "/api/t/acme/ask", "What is your return policy?")
        events = sse_events(lines)
        response.close()
    deltas = [json.loads(data)["delta"] for kind, data in events if kind == "delta"]
    done = json.loads(events[-1][1])
    assert events[-1][0] == "done" and done["cache"]["layer"] == "none"
    assert "".join(deltas).split() == ANSWER_WORDS[:12]
    assert lanes == ["ask-front", "ask-blocking", "ask-blocking"]
    wait_for(lambda: AskEvent.objects.filter(tenant=acme, request_id=done["request_id"]).exists(), what="the record")
    wait_for(lambda: inflight.held(acme.pk, "ip:127.0.0.1") == 0, what="the slot's release")


def test_a_finished_ask_leaves_no_cycle_for_the_garbage_collector(asgi_server, acme, standin, settings):
    """Django's ASGI handler and middleware left every request in reference cycles (the disconnect
    listener's exception held the handler's frame; ``request.user``, ``request.htmx`` and the
    messages' storage hold the request), so each request's objects waited for the collector, whose
    passes were the exact hits' longest pauses under load (``serving.AskASGIHandler``). Now an
    ask's request is freed as its response closes: hits and a fresh streamed answer. (A page
    rendered from a template still leaves the template context's own cycle: once a chat.)"""
    import gc

    from django.core.handlers.asgi import ASGIRequest
    from django.http import HttpResponseBase

    standin.tokens = 5
    question = {"question": "What is your return policy?"}
    with httpx.Client(base_url=asgi_server, timeout=60) as client:
        open_stream(client, "/api/t/acme/ask", "How do I reset my password?")[0].close()  # every pool started
        client.post("/api/t/acme/ask", json=question)
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            hits = [client.post("/api/t/acme/ask", json=question) for _ in range(10)]
            response, lines = open_stream(client, "/api/t/acme/ask", "Can I change my delivery address?")
            events = sse_events(list(lines))
            response.close()
            wait_for(lambda: AskEvent.objects.filter(tenant=acme).count() >= 3, what="the records")
            time.sleep(0.3)  # the server's side of the last response is closed
            gc.collect()
            left = [type(o).__module__ + "." + type(o).__qualname__ for o in gc.garbage
                    if isinstance(o, (ASGIRequest, HttpResponseBase, BaseException))]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert all(hit.status_code == 200 for hit in hits) and hits[-1].json()["cache"]["layer"] == "exact"
    assert events[-1][0] == "done"
    assert left == []


# --------------------------------------------------------------------------- in-flight caps

def test_a_client_over_its_in_flight_cap_gets_a_429_while_another_tenant_asks(asgi_server, acme, initech, standin,
                                                                               settings):
    settings.INFLIGHT_CLIENT_MAX = 1
    refused_before = counter(metrics.INFLIGHT_REFUSED, "acme", "client")
    with httpx.Client(base_url=asgi_server, timeout=60) as first, httpx.Client(base_url=asgi_server, timeout=60) as other:
        response, lines = open_stream(first, "/api/t/acme/ask", "What is your return policy?")
        assert response.status_code == 200
        assert next(line for line in lines if line.startswith("event: ")) == "event: delta"  # streaming now

        over = other.post("/api/t/acme/ask", json={"question": "How do I reset my password?"})
        assert over.status_code == 429 and int(over.headers["Retry-After"]) >= 1
        assert over.json()["error"]["code"] == "too_many_in_flight" and over.json()["error"]["scope"] == "client"
        assert counter(metrics.INFLIGHT_REFUSED, "acme", "client") == refused_before + 1

        # the same address at another tenant: its own caps, untouched by acme's
        elsewhere = other.post("/api/t/initech/ask", json={"question": "How do I reset my password?"})
        assert elsewhere.status_code == 200 and elsewhere.json()["status"] == "answered"

        events = sse_events(list(lines))  # the first stream runs to its end
        done = json.loads(events[-1][1])
        assert events[-1][0] == "done" and done["status"] == "answered"
        response.close()
    wait_for(lambda: inflight.held(acme.pk, "ip:127.0.0.1") == 0, what="the slot's release")
    with httpx.Client(base_url=asgi_server, timeout=60) as client:
        assert client.post("/api/t/acme/ask", json={"question": "How do I reset my password?"}).status_code == 200


# --------------------------------------------------------------------------- slow and gone clients

def test_a_disconnect_mid_stream_stops_generation_at_the_model_server(asgi_server, acme, standin):
    client = httpx.Client(base_url=asgi_server, timeout=60)
    response, lines = open_stream(client, "/api/t/acme/ask", "What is your return policy?")
    deltas = 0
    for line in lines:
        deltas += line.startswith("event: delta")
        if deltas == 3:
            break
    response.close()
    client.close()
    gone = time.monotonic()
    wait_for(lambda: standin.streams and standin.streams[-1].ended is not None, what="the upstream stream to end")
    time.sleep(0.5)  # ten more token intervals: a generation still running would show
    upstream = standin.streams[-1]
    assert upstream.client_gone is not None  # the web server closed its stream to the model server
    assert standin.tokens_after_disconnect() == 0  # nothing generated once the web server left
    assert sum(1 for t in upstream.token_times if t > gone) <= 1  # at most the token in flight as the customer left
    assert len(upstream.token_times) < 20  # of the answer's 100
    wait_for(lambda: AskEvent.objects.filter(tenant=acme).exists(), what="the record")
    ask = AskEvent.objects.get(tenant=acme)
    assert ask.status == AskEvent.Status.INTERRUPTED and ask.serving_layer == AskEvent.ServingLayer.NONE
    with httpx.Client(base_url=asgi_server, timeout=60) as again:  # nothing cached: the next one is fresh
        assert again.post("/api/t/acme/ask", json={"question": "What is your return policy?"}).json()["cache"]["layer"] != "exact"
    wait_for(lambda: inflight.held(acme.pk, "ip:127.0.0.1") == 0, what="the slot's release")


def test_a_reader_too_slow_is_cut_off_after_the_write_timeout(asgi_server, acme, standin, settings):
    settings.STREAM_WRITE_TIMEOUT_S = 1.0
    standin.interval_s, standin.tokens, standin.token_bytes = 0.002, 3000, 8192  # 24 MB as fast as it goes
    settings.GENERATION_MAX_TOKENS = 3000
    cut_before = counter(metrics.STREAMS_CUT, "write_timeout")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((HOST, int(asgi_server.rsplit(":", 1)[1])))
    body = json.dumps({"question": "What is your return policy?", "stream": True}).encode()
    sock.sendall(b"POST /api/t/acme/ask HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    started = time.monotonic()
    # never read: the server's buffers fill, a write waits, and the write timeout cuts it
    wait_for(lambda: counter(metrics.STREAMS_CUT, "write_timeout") > cut_before, timeout_s=30,
             what="the write timeout")
    assert time.monotonic() - started < 20
    wait_for(lambda: standin.streams and standin.streams[-1].ended is not None, what="the upstream stream to end")
    assert len(standin.streams[-1].token_times) < 3000  # the generation stopped with the stream
    wait_for(lambda: AskEvent.objects.filter(tenant=acme).exists(), what="the record")
    assert AskEvent.objects.get(tenant=acme).status == AskEvent.Status.INTERRUPTED
    sock.settimeout(10)
    received = 0
    try:
        while chunk := sock.recv(1 << 16):  # what was buffered, then the end: the server closed it
            received += len(chunk)
    except ConnectionResetError:
        pass
    sock.close()
    assert received > 0
