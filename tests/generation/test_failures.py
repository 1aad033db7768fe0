"""Failure behaviour against real processes: refused connections, a breaker that recovers,
a server killed mid-stream, a customer who goes away mid-stream."""
from __future__ import annotations

import logging
import time

import httpx
import pytest

from generation.base import ChatRequest, GenerationError, GenerationResult
from tests.generation.conftest import dedicated_model_server, free_port, make_backend

pytestmark = pytest.mark.slow

LONG_ANSWER = ChatRequest(
    messages=[{"role": "system", "content": "You are a helpful assistant."},
              {"role": "user", "content": "Count from 1 to 300, separated by commas."}],
    params={"max_tokens": 400, "temperature": 0.0, "seed": 7}, cache_salt="tenant-a",
)
SHORT = ChatRequest(messages=[{"role": "user", "content": "Say hello."}],
                    params={"max_tokens": 3, "temperature": 0.0, "seed": 7}, cache_salt="tenant-a")


def retry_warnings(caplog) -> int:
    return sum("retrying in" in r.getMessage() for r in caplog.records if r.name.endswith("openai_http"))


def test_refused_connections_are_retried_then_the_breaker_opens_and_recovers(caplog):
    caplog.set_level(logging.WARNING)
    port = free_port()  # nothing listens here yet
    backend = make_backend(port, max_retries=2, retry_backoff_s=0.05, breaker_failures=2, breaker_reset_s=1.0)
    attempts = []
    send = backend._client.send
    backend._client.send = lambda *args, **kwargs: attempts.append(1) or send(*args, **kwargs)

    for call in (1, 2):
        with pytest.raises(GenerationError) as err:
            backend.complete(SHORT)
        assert err.value.reason == "unavailable"
        assert len(attempts) == 3 * call  # every call: one attempt and two retries
        assert retry_warnings(caplog) == 2 * call
    assert backend.breaker_state == "open"

    started = time.monotonic()
    with pytest.raises(GenerationError) as err:
        list(backend.stream(SHORT))
    assert err.value.reason == "circuit_open"
    assert len(attempts) == 6  # failed fast: no connection was even tried

    with dedicated_model_server(port):
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))  # model load usually takes longer anyway
        assert backend.breaker_state == "half_open"
        assert backend.complete(SHORT).completion_tokens >= 1  # the probe goes through
        assert backend.breaker_state == "closed"


def test_server_killed_mid_stream_raises_interrupted():
    with dedicated_model_server() as (proc, port):
        backend = make_backend(port, max_retries=2, retry_backoff_s=0.05)
        stream = backend.stream(LONG_ANSWER)
        first = next(stream)
        assert isinstance(first, str) and first
        proc.kill()
        proc.wait(timeout=10)
        received = [first]
        with pytest.raises(GenerationError) as err:
            for item in stream:
                assert not isinstance(item, GenerationResult), "a cut-off stream must not end with a result"
                received.append(item)
        assert err.value.reason == "interrupted"
        assert backend.breaker_state == "closed"  # one failure is not yet a dead server
        with pytest.raises(GenerationError) as err:  # and the next call finds nothing listening
            backend.complete(SHORT)
        assert err.value.reason == "unavailable"


def server_counter(port: int, name: str, labels: str = "") -> float:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(name + "{") and labels in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_abandoned_stream_stops_generating(backend):
    aborted = server_counter(backend.port, "vllm:request_success_total", 'finished_reason="abort"')
    generated = server_counter(backend.port, "vllm:generation_tokens_total")
    stream = backend.stream(LONG_ANSWER)
    assert isinstance(next(stream), str)
    stream.close()  # the customer closed the page
    result = backend.complete(SHORT)  # served once the model is free again
    assert result.completion_tokens >= 1
    assert server_counter(backend.port, "vllm:request_success_total", 'finished_reason="abort"') == aborted + 1
    # The abandoned answer stopped within a few tokens instead of running to its 400-token limit.
    spent = server_counter(backend.port, "vllm:generation_tokens_total") - generated - result.completion_tokens
    assert 1 <= spent < 100
    assert backend.breaker_state == "closed"
