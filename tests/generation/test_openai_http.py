"""The HTTP client's failure policy, against a scripted HTTP server for answers the real model
server cannot be made to give (5xx, 429, garbage), and the Prometheus parsing."""
from __future__ import annotations

import json
import time

import pytest

from generation.base import ChatRequest, GenerationError
from generation.fleet import parse_prefix_cache_metrics
from generation.openai_http import (
    AFFINITY_HEADER,
    OpenAIHTTPBackend,
    affinity_key,
    normalize_base_url,
)

REQUEST = ChatRequest(messages=[{"role": "user", "content": "hi"}],
                      params={"max_tokens": 8, "temperature": 0.0, "seed": 7}, cache_salt="salt-acme")

COMPLETION = json.dumps({
    "id": "chatcmpl-1", "object": "chat.completion", "model": "served-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello [1]."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 4, "total_tokens": 124,
              "prompt_tokens_details": {"cached_tokens": 96}},
}).encode()
JSON = {"Content-Type": "application/json"}


def backend_for(server, **overrides) -> OpenAIHTTPBackend:
    options = dict(base_url=server.url + "/v1", model_id="served-model", model_revision="rev1", api_key="k3y",
                   connect_timeout_s=1.0, timeout_s=10.0, max_retries=2, retry_backoff_s=0.01,
                   breaker_failures=5, breaker_reset_s=30.0)
    options.update(overrides)
    return OpenAIHTTPBackend(**options)


def test_request_body_and_headers(scripted):
    server = scripted([(200, JSON, COMPLETION)])
    result = backend_for(server).complete(REQUEST)
    assert (result.text, result.finish_reason, result.model) == ("Hello [1].", "stop", "served-model")
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (120, 4, 96)
    assert result.ttft_ms is None and result.total_ms > 0
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"] == {"model": "served-model", "messages": REQUEST.messages, "max_tokens": 8,
                            "temperature": 0.0, "seed": 7, "stream": False, "cache_salt": "salt-acme"}
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert headers["authorization"] == "Bearer k3y"
    assert headers[AFFINITY_HEADER.lower()] == affinity_key("salt-acme") != "salt-acme"


def test_5xx_is_retried_then_succeeds(scripted):
    server = scripted([(503, JSON, b'{"error": {"message": "overloaded"}}'), (502, {}, b"bad gateway"),
                       (200, JSON, COMPLETION)])
    assert backend_for(server).complete(REQUEST).text == "Hello [1]."
    assert len(server.requests) == 3


def test_429_honours_retry_after(scripted):
    server = scripted([(429, {"Retry-After": "0.3", **JSON}, b'{"error": {"message": "slow down"}}'),
                       (200, JSON, COMPLETION)])
    started = time.monotonic()
    backend_for(server).complete(REQUEST)
    assert time.monotonic() - started >= 0.3
    assert len(server.requests) == 2


def test_retries_are_bounded(scripted):
    server = scripted([(500, {}, b"boom")] * 5)
    with pytest.raises(GenerationError) as err:
        backend_for(server, max_retries=2).complete(REQUEST)
    assert err.value.reason == "unavailable" and err.value.status == 500
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_other_4xx_are_never_retried(scripted, status):
    server = scripted([(status, JSON, b'{"error": {"message": "nope"}}'), (200, JSON, COMPLETION)])
    with pytest.raises(GenerationError) as err:
        backend_for(server).complete(REQUEST)
    assert err.value.reason == "client_error" and err.value.status == status and "nope" in str(err.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("body", [
    b"<html>not json</html>",
    b'{"choices": []}',
    b'{"choices": [{"message": {"content": 5}, "finish_reason": "stop"}]}',
    b'{"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": -1}}',
    b"[1, 2]",
])
def test_garbage_is_a_bad_response_and_not_retried(scripted, body):
    server = scripted([(200, JSON, body), (200, JSON, COMPLETION)])
    with pytest.raises(GenerationError) as err:
        backend_for(server).complete(REQUEST)
    assert err.value.reason == "bad_response"
    assert len(server.requests) == 1


def test_stream_that_is_not_an_event_stream_is_a_bad_response(scripted):
    server = scripted([(200, JSON, COMPLETION)])
    with pytest.raises(GenerationError) as err:
        list(backend_for(server).stream(REQUEST))
    assert err.value.reason == "bad_response"
    assert server.requests[0]["body"]["stream_options"] == {"include_usage": True}


def test_breaker_opens_after_consecutive_failures_and_fails_fast(scripted):
    server = scripted([(500, {}, b"down")] * 10)
    backend = backend_for(server, max_retries=0, breaker_failures=3, breaker_reset_s=60)
    for _ in range(3):
        with pytest.raises(GenerationError) as err:
            backend.complete(REQUEST)
        assert err.value.reason == "unavailable"
    with pytest.raises(GenerationError) as err:
        backend.complete(REQUEST)
    assert err.value.reason == "circuit_open"
    assert len(server.requests) == 3
    assert backend.breaker_state == "open"


def test_client_errors_do_not_open_the_breaker(scripted):
    server = scripted([(400, JSON, b"{}")] * 4)
    backend = backend_for(server, breaker_failures=2)
    for _ in range(4):
        with pytest.raises(GenerationError):
            backend.complete(REQUEST)
    assert backend.breaker_state == "closed" and len(server.requests) == 4


def test_breaker_half_open_probe_closes_it_or_opens_it_for_another_period(scripted):
    server = scripted([(500, {}, b"down")] * 3 + [(200, JSON, COMPLETION)])
    backend = backend_for(server, max_retries=0, breaker_failures=2, breaker_reset_s=0.3)
    for _ in range(2):
        with pytest.raises(GenerationError):
            backend.complete(REQUEST)
    assert backend.breaker_state == "open"
    with pytest.raises(GenerationError) as err:
        backend.complete(REQUEST)
    assert err.value.reason == "circuit_open" and len(server.requests) == 2
    time.sleep(0.35)
    assert backend.breaker_state == "half_open"
    with pytest.raises(GenerationError) as err:  # the probe fails: open again for a full period
        backend.complete(REQUEST)
    assert err.value.reason == "unavailable" and backend.breaker_state == "open"
    with pytest.raises(GenerationError) as err:
        list(backend.stream(REQUEST))
    assert err.value.reason == "circuit_open" and len(server.requests) == 3
    time.sleep(0.35)
    assert backend.complete(REQUEST).text == "Hello [1]."  # the next probe succeeds
    assert backend.breaker_state == "closed" and len(server.requests) == 4


def test_retry_backoff_grows_from_the_configured_base(scripted, caplog):
    server = scripted([(503, {}, b"busy"), (503, {}, b"busy"), (200, JSON, COMPLETION)])
    started = time.monotonic()
    backend_for(server, max_retries=2, retry_backoff_s=0.2).complete(REQUEST)
    # delays are drawn from [b/2, b] then [b, 2b]: at least 0.1 + 0.2 s, far below the client's own 0.5 s base
    assert 0.3 <= time.monotonic() - started < 1.2
    assert sum("retrying in" in r.getMessage() for r in caplog.records) == 2


def test_no_retry_starts_past_the_deadline(scripted):
    server = scripted([(429, {"Retry-After": "5", **JSON}, b'{"error": {"message": "slow down"}}'),
                       (200, JSON, COMPLETION)])
    started = time.monotonic()
    with pytest.raises(GenerationError) as err:
        backend_for(server, timeout_s=1.0).complete(REQUEST)
    assert err.value.reason == "unavailable" and err.value.status == 429
    assert time.monotonic() - started < 1.0 and len(server.requests) == 1


def test_base_url_forms():
    assert normalize_base_url("http://vllm:8000/v1/") == "http://vllm:8000"
    assert normalize_base_url(" https://gpu.internal ") == "https://gpu.internal"


METRICS = """\
# HELP vllm:prefix_cache_queries_total Prefix cache queries.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
vllm:prefix_cache_queries_total{engine="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 500.0
vllm:prefix_cache_hits_total{engine="0",model_name="odd {name} \\"quoted\\""} 900.0
vllm:prefix_cache_hits_total{engine="1",model_name="x"} 300 1712345678000
vllm:kv_cache_usage_perc{engine="0",model_name="x"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="x"} 0.125
vllm:prefix_cache_queries_created{engine="0"} 1.7e9
"""


def test_metrics_are_summed_over_label_sets():
    metrics = parse_prefix_cache_metrics(METRICS)
    assert metrics.prefix_cache_queries == 1500.0
    assert metrics.prefix_cache_hits == 1200.0
    assert metrics.kv_cache_usage_perc == 0.375
    assert metrics.hit_rate == pytest.approx(0.8)


def test_legacy_metric_names_and_missing_ones():
    metrics = parse_prefix_cache_metrics("vllm:gpu_prefix_cache_queries_total 10\nvllm:gpu_cache_usage_perc 0.5\n")
    assert (metrics.prefix_cache_queries, metrics.prefix_cache_hits, metrics.kv_cache_usage_perc) == (10.0, None, 0.5)
    assert metrics.hit_rate is None


SSE = {"Content-Type": "text/event-stream"}


def sse(*events) -> bytes:
    return b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)


def chunk(content=None, finish=None) -> dict:
    delta = {} if content is None else {"content": content}
    return {"model": "served-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


FULL_STREAM = sse(chunk(""), chunk("Hel"), chunk("lo"), chunk(None, "stop"),
                  {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2,
                                            "prompt_tokens_details": {"cached_tokens": 4}}}, b"[DONE]")


def test_stream_parses_deltas_and_usage(scripted):
    server = scripted([(200, SSE, FULL_STREAM)])
    items = list(backend_for(server).stream(REQUEST))
    assert items[:-1] == ["Hel", "lo"]
    result = items[-1]
    assert (result.text, result.finish_reason, result.prompt_tokens, result.cached_tokens) == ("Hello", "stop", 9, 4)


def test_stream_cut_before_any_text_is_retried(scripted):
    server = scripted([(200, SSE, sse(chunk(""))), (503, {}, b"busy"), (200, SSE, FULL_STREAM)])
    items = list(backend_for(server).stream(REQUEST))
    assert "".join(i for i in items if isinstance(i, str)) == "Hello"
    assert len(server.requests) == 3


def test_stream_cut_after_text_is_interrupted_and_not_retried(scripted):
    server = scripted([(200, SSE, sse(chunk("Hel"))), (200, SSE, FULL_STREAM)])
    stream = backend_for(server).stream(REQUEST)
    assert next(stream) == "Hel"
    with pytest.raises(GenerationError) as err:
        next(stream)
    assert err.value.reason == "interrupted"
    assert len(server.requests) == 1


def test_garbage_in_a_stream_is_a_bad_response(scripted):
    server = scripted([(200, SSE, sse(b"{not json"))])
    with pytest.raises(GenerationError) as err:
        list(backend_for(server).stream(REQUEST))
    assert err.value.reason == "bad_response"


def test_an_error_event_in_a_stream_is_a_bad_response_before_text_and_interrupted_after(scripted):
    error = {"error": {"message": "the engine died", "code": 500}}
    server = scripted([(200, SSE, sse(error)), (200, SSE, sse(chunk("Hel"), error))])
    backend = backend_for(server, max_retries=0)
    with pytest.raises(GenerationError) as err:
        list(backend.stream(REQUEST))
    assert err.value.reason == "bad_response" and "the engine died" in str(err.value)
    stream = backend.stream(REQUEST)
    assert next(stream) == "Hel"
    with pytest.raises(GenerationError) as err:
        next(stream)
    assert err.value.reason == "interrupted"


def test_the_async_stream_parses_the_same_deltas_and_usage(scripted):
    import asyncio

    server = scripted([(200, SSE, FULL_STREAM)])

    async def read():
        return [item async for item in backend_for(server).astream(REQUEST)]

    items = asyncio.run(read())
    assert items[:-1] == ["Hel", "lo"]
    assert (items[-1].text, items[-1].prompt_tokens, items[-1].completion_tokens, items[-1].cached_tokens) == (
        "Hello", 9, 2, 4)


def test_event_data_is_read_across_any_split_of_the_bytes():
    from generation.openai_http import _EventData

    body = (b": a comment\r\nevent: message\r\ndata: {\"a\": 1}\r\n\r\n"
            b"data: {\"b\":\ndata: 2}\n\n"  # one event's data over two lines
            b"data:{\"c\": 3}\n\ndata: [DONE]\n\ndata: {\"after\": \"done\"}\n\n")
    for size in (1, 2, 3, 7, len(body)):
        events = _EventData()
        parsed = [e for start in range(0, len(body), size) for e in events.feed(body[start:start + size])]
        assert parsed == [{"a": 1}, {"b": 2}, {"c": 3}] and events.done, size


# --------------------------------------------------------------------------- the async stream (http_stream)

def astream_items(backend, request=REQUEST, times=1) -> list:
    """``times`` async streams of ``request`` read to their end on one event loop (one connection pool)."""
    import asyncio

    async def read():
        return [[item async for item in backend.astream(request)] for _ in range(times)]

    runs = asyncio.run(read())
    return runs[0] if times == 1 else runs


def test_the_async_stream_sends_what_the_openai_client_sends(scripted):
    server = scripted([(200, SSE, FULL_STREAM)])
    astream_items(backend_for(server))
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"] == {"model": "served-model", "messages": REQUEST.messages, "stream": True,
                            "stream_options": {"include_usage": True}, "max_tokens": 8, "temperature": 0.0,
                            "seed": 7, "cache_salt": "salt-acme"}
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert headers["authorization"] == "Bearer k3y"
    assert headers[AFFINITY_HEADER.lower()] == affinity_key("salt-acme")


def test_the_async_stream_keeps_its_connection_alive_between_streams(scripted):
    server = scripted([(200, SSE, FULL_STREAM), (200, SSE, FULL_STREAM), (200, SSE, FULL_STREAM)])
    runs = astream_items(backend_for(server), times=3)
    assert all(run[-1].text == "Hello" for run in runs)
    assert len({r["peer"] for r in server.requests}) == 1  # one connection for the three


def test_the_async_stream_retries_5xx_and_honours_retry_after(scripted):
    server = scripted([(503, JSON, b'{"error": {"message": "overloaded"}}'),
                       (429, {"Retry-After": "0.3", **JSON}, b'{"error": {"message": "slow down"}}'),
                       (200, SSE, FULL_STREAM)])
    started = time.monotonic()
    items = astream_items(backend_for(server))
    assert items[-1].text == "Hello" and len(server.requests) == 3
    assert time.monotonic() - started >= 0.3


def test_the_async_stream_gives_up_after_the_retries_and_never_retries_4xx(scripted):
    server = scripted([(500, {}, b"boom")] * 3 + [(422, JSON, b'{"error": {"message": "nope"}}'), (200, SSE, FULL_STREAM)])
    backend = backend_for(server, max_retries=2)
    with pytest.raises(GenerationError) as err:
        astream_items(backend)
    assert err.value.reason == "unavailable" and err.value.status == 500 and len(server.requests) == 3
    with pytest.raises(GenerationError) as err:
        astream_items(backend)
    assert err.value.reason == "client_error" and err.value.status == 422 and "nope" in str(err.value)
    assert len(server.requests) == 4


def test_the_async_stream_starts_no_retry_past_the_deadline(scripted):
    server = scripted([(429, {"Retry-After": "5", **JSON}, b'{"error": {"message": "slow down"}}'),
                       (200, SSE, FULL_STREAM)])
    started = time.monotonic()
    with pytest.raises(GenerationError) as err:
        astream_items(backend_for(server, timeout_s=1.0))
    assert err.value.reason == "unavailable" and err.value.status == 429
    assert time.monotonic() - started < 1.0 and len(server.requests) == 1


def test_the_async_stream_reports_a_refused_connection_as_unavailable():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once closed
    backend = OpenAIHTTPBackend(base_url=f"http://127.0.0.1:{port}", model_id="m", model_revision="r",
                                max_retries=1, retry_backoff_s=0.01)
    with pytest.raises(GenerationError) as err:
        astream_items(backend)
    assert err.value.reason == "unavailable" and "connect" in str(err.value)


def test_the_async_stream_fails_as_the_sync_one_does(scripted):
    error = {"error": {"message": "the engine died", "code": 500}}
    server = scripted([(200, JSON, COMPLETION),  # not an event stream
                       (200, SSE, sse(b"{not json")),
                       (200, SSE, sse(chunk(""))), (503, {}, b"busy"), (200, SSE, FULL_STREAM),  # cut before text
                       (200, SSE, sse(chunk("Hel"), error))])
    backend = backend_for(server)
    for reason in ("bad_response", "bad_response"):
        with pytest.raises(GenerationError) as err:
            astream_items(backend)
        assert err.value.reason == reason
    assert astream_items(backend)[-1].text == "Hello"  # retried from scratch
    assert len(server.requests) == 5
    with pytest.raises(GenerationError) as err:
        astream_items(backend)
    assert err.value.reason == "interrupted" and "the engine died" in str(err.value)


def test_a_cancelled_async_stream_closes_its_connection_at_once():
    """The customer left: the reader's task is cancelled mid-stream, the socket is closed, and the
    stand-in model server (which stops generating for a client gone, as vLLM does) generates no more."""
    import asyncio

    from modelserver.standin import StandInModel

    model = StandInModel(interval_s=0.05, tokens=200)
    port = model.start_in_thread()
    try:
        backend = OpenAIHTTPBackend(base_url=f"http://127.0.0.1:{port}", model_id="standin-model",
                                    model_revision="r")

        async def read_three():
            deltas = []
            async def reader():
                async for item in backend.astream(REQUEST):
                    deltas.append(item)
            task = asyncio.create_task(reader())
            while len(deltas) < 3:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(read_three())
        deadline = time.monotonic() + 5
        while model.streams[0].client_gone is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        assert model.streams[0].client_gone is not None
        assert model.tokens_after_disconnect(slack_s=0.06) == 0
        assert len(model.streams[0].token_times) < 10
    finally:
        model.stop()


def _standin_deltas(flush_s: float, *, interval_s: float, tokens: int) -> tuple[list[str], object]:
    """The async stream's items from the stand-in model server, read with ``stream_flush_s=flush_s``."""
    import asyncio

    from modelserver.standin import StandInModel

    model = StandInModel(interval_s=interval_s, tokens=tokens)
    port = model.start_in_thread()
    try:
        backend = OpenAIHTTPBackend(base_url=f"http://127.0.0.1:{port}", model_id="standin-model",
                                    model_revision="r", stream_flush_s=flush_s)

        request = ChatRequest(messages=REQUEST.messages, params={**REQUEST.params, "max_tokens": tokens},
                              cache_salt=REQUEST.cache_salt)

        async def read():
            return [item async for item in backend.astream(request)]

        items = asyncio.run(read())
    finally:
        model.stop()
    return items[:-1], items[-1]


def test_the_async_stream_coalesces_deltas_keeping_every_token_in_order_and_the_first_at_once():
    """A model streaming a token every 10 ms, read with deltas flushed at most every 150 ms: the
    first token goes on alone, at once; the rest in a few larger deltas that put together are
    exactly the model's text, in order."""
    deltas, result = _standin_deltas(0.15, interval_s=0.01, tokens=40)
    words = result.text.split()
    assert len(words) == 40 and "".join(deltas) == result.text  # every token, in order, nothing twice
    assert deltas[0].split() == words[:1]  # the first token was not held back for the next ones
    assert 2 <= len(deltas) <= 10  # 0.4 s of tokens in pieces at most every 0.15 s (not 40 events)
    assert max(len(d.split()) for d in deltas) >= 5


def test_without_a_flush_interval_the_async_stream_passes_on_every_delta():
    deltas, result = _standin_deltas(0.0, interval_s=0.005, tokens=20)
    assert len(deltas) == 20 and "".join(deltas) == result.text
