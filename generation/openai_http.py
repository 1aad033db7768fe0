"""The vLLM backend: vLLM's OpenAI-compatible API.

The embedded CPU model server speaks the same protocol, so the embedded backend
is this client pointed at it (see ``embedded.py``).

Two transports, one policy. The sync calls (``complete``, ``stream``: the WSGI server, the
Celery workers, the commands) go through the official ``openai`` client: requests, typed
responses with ``usage``, timeouts, and retries of connection errors, timeouts, 408/409/429 and
5xx with exponential backoff (``Retry-After`` honoured). The async stream (``astream``: every
streamed answer under the async server) goes through ``http_stream``, a lean HTTP/1.1 client of
kept-alive connections, with the same retries done here (``_aopen``): at a thousand open streams
the client's request building and httpx's per-read work were about a third of a web worker. Either
way a stream's events are read here, off the response's bytes (``_EventData``): the client's typed
chunk models cost about 300 µs of CPU a chunk.
What stays here is this backend's own policy:

- the backoff base is ``GENERATION_RETRY_BACKOFF_S`` (at least a 429's
  ``Retry-After``), and no retry starts past the overall deadline
  (``GENERATION_TIMEOUT_S``);
- other 4xx answers are the caller's fault and are never retried;
- a stream that breaks off before its first token is tried again from scratch;
  once the customer has seen text it never is ("interrupted");
- a circuit breaker (``pybreaker``) per backend opens after N consecutive failed
  calls, fails fast ("circuit_open") for ``GENERATION_BREAKER_RESET_S`` seconds,
  then lets a single probe through (half-open): success closes it, failure opens it again.

Per-request prefix-cache accounting comes from
``usage.prompt_tokens_details.cached_tokens`` (vLLM started with
``--enable-prompt-tokens-details``); the fleet view, from the servers' own
``/metrics``, is ``fleet.py``.
"""
from __future__ import annotations

import asyncio
import contextlib
import email.utils
import hashlib
import logging
import json
import random
import ssl
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import httpx2
import openai
import pybreaker
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core import metrics
from generation import http_stream
from generation.base import ChatRequest, GenerationBackend, GenerationError, GenerationResult

logger = logging.getLogger(__name__)

# A router doing session affinity (e.g. vLLM production-stack `--routing-logic session
# --session-key x-session-id`) keeps one tenant's requests, hence its prefix, on one replica.
AFFINITY_HEADER = "X-Session-Id"


def normalize_base_url(url: str) -> str:
    """Accept ``http://host:8000``, ``http://host:8000/`` and ``http://host:8000/v1``."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    if not url.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"model server URL must start with http:// or https://, got {url!r}")
    return url


def affinity_key(cache_salt: str) -> str:
    """A stable routing key per tenant that does not reveal the salt itself."""
    return hashlib.sha256(b"affinity\x00" + cache_salt.encode("utf-8")).hexdigest()[:32]


# --------------------------------------------------------------------------- the circuit breaker

def _is_healthy_outcome(exc: BaseException) -> bool:
    """Outcomes that say nothing against the server: it rejected a wrong request, or the caller
    went away mid-stream."""
    return isinstance(exc, (GeneratorExit, asyncio.CancelledError)) or (
        isinstance(exc, GenerationError) and exc.reason == "client_error")


class _BreakerEvents(pybreaker.CircuitBreakerListener):
    def __init__(self, backend: str):
        self.backend = backend

    def state_change(self, cb, old_state, new_state):
        metrics.CIRCUIT_OPEN.labels(self.backend).set(1 if new_state.name == pybreaker.STATE_OPEN else 0)
        if new_state.name == pybreaker.STATE_OPEN and old_state is not None and old_state.name == pybreaker.STATE_CLOSED:
            logger.error("generation circuit opened after %d consecutive failures", cb.fail_counter)
        elif new_state.name == pybreaker.STATE_CLOSED and old_state is not None:
            logger.info("generation circuit closed: the model server answers again")


def circuit_breaker(failures: int, reset_s: float, backend: str, storage) -> pybreaker.CircuitBreaker:
    """closed -> (``failures`` consecutive failures) -> open -> (``reset_s``) -> half-open -> a success
    closes it, a failure opens it again for a full period."""
    return pybreaker.CircuitBreaker(
        fail_max=max(1, int(failures)), reset_timeout=float(reset_s), exclude=[_is_healthy_outcome],
        throw_new_error_on_trip=False, state_storage=storage,
        listeners=[_BreakerEvents(backend)], name=backend,
    )


# --------------------------------------------------------------------------- the client

class _NoTimeLeft(Exception):
    pass


def _backoff_s(base_s: float, attempt: int, retry_after: float | None) -> float:
    """The wait before retry ``attempt``: ``base_s * 2**(attempt-1)`` with jitter (from half of it to
    all of it), at least a 429's ``Retry-After``."""
    delay = base_s * (2 ** (attempt - 1))
    delay = delay / 2 + random.uniform(0, delay / 2)
    if retry_after is not None and 0 < retry_after < float("inf"):
        delay = max(delay, retry_after)
    return delay


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    """A ``Retry-After-Ms`` or ``Retry-After`` header (seconds or an HTTP date) in seconds."""
    try:
        if "retry-after-ms" in headers:
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            return (email.utils.parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
    except (TypeError, ValueError):
        return None


def _body_detail(text: bytes) -> str:
    """What an error answer's body says: its ``error.message`` when it is the API's JSON, else its start."""
    try:
        body = json.loads(text)
        error = body.get("error", body) if isinstance(body, dict) else None
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    except ValueError:
        pass
    return text[:500].decode("utf-8", "replace").strip()


def _retry_delay(client, remaining_retries, options, response_headers, deadline: float, backend: str) -> float:
    """``backoff_s * 2**n`` with jitter, at least a 429's ``Retry-After``, never past ``deadline``."""
    max_retries = options.get_max_retries(client.max_retries)
    attempt = max_retries - remaining_retries + 1
    delay = _backoff_s(client.backoff_s, attempt, client._parse_retry_after_header(response_headers))
    failed = sys.exc_info()[1]  # called while handling the failed attempt
    if time.monotonic() + delay >= deadline:
        raise _NoTimeLeft(f"no time left to retry after attempt {attempt}")
    metrics.MODEL_RETRIES.labels(backend).inc()
    logger.warning("generation attempt %d/%d to %s failed (%s); retrying in %.2fs", attempt, max_retries + 1,
                   client.backend_url, _transport_failure(failed)[1], delay)
    return delay


class _Client(openai.OpenAI):
    """The openai client with this backend's retry delay (``_retry_delay``), its deadline per thread
    (``call.deadline``)."""

    def __init__(self, *, backoff_s: float, backend_url: str, **kwargs):
        super().__init__(**kwargs)
        self.backoff_s = backoff_s
        self.backend_url = backend_url
        self.call = threading.local()

    # The SDK's retry-delay hook (openai 3.51: called once before every retry).
    def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None) -> float:
        return _retry_delay(self, remaining_retries, options, response_headers,
                            getattr(self.call, "deadline", float("inf")), getattr(self.call, "backend", "model"))


class OpenAIHTTPBackend(GenerationBackend):
    """A client of one OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, or a router in front of many)."""

    name = "vllm"

    def __init__(self, *, base_url: str, model_id: str, model_revision: str, api_key: str = "",
                 connect_timeout_s: float = 2.0, timeout_s: float = 120.0, max_retries: int = 2,
                 retry_backoff_s: float = 0.25, breaker_failures: int = 5, breaker_reset_s: float = 30.0,
                 keepalive_max: int = 256, keepalive_idle_s: float = 4.0, stream_flush_s: float = 0.0):
        self.base_url = normalize_base_url(base_url)
        self.model_id = model_id
        self.model_revision = model_revision
        self.api_key = api_key
        self.connect_timeout_s = connect_timeout_s
        self.timeout_s = timeout_s
        self.max_retries = max(0, int(max_retries))
        self._breaker_storage = pybreaker.CircuitMemoryStorage(pybreaker.STATE_CLOSED)
        self.breaker = circuit_breaker(breaker_failures, breaker_reset_s, self.name, self._breaker_storage)
        self._client = httpx2.Client(follow_redirects=False,
                                     limits=httpx2.Limits(max_connections=64, max_keepalive_connections=16))
        self._openai = _Client(
            base_url=self.base_url + "/v1", api_key=api_key or "none", max_retries=self.max_retries,
            timeout=httpx2.Timeout(timeout_s, connect=connect_timeout_s), http_client=self._client,
            backoff_s=max(0.0, retry_backoff_s), backend_url=self.base_url,
        )
        self.retry_backoff_s = max(0.0, retry_backoff_s)
        self.keepalive_max, self.keepalive_idle_s = keepalive_max, keepalive_idle_s
        self.stream_flush_s = max(0.0, stream_flush_s)
        url = urlsplit(self.base_url)
        self._host, self._path = url.netloc.rsplit("@", 1)[-1], url.path.rstrip("/")
        self._async: tuple[asyncio.AbstractEventLoop, http_stream.ConnectionPool] | None = None

    @classmethod
    def from_settings(cls) -> OpenAIHTTPBackend:
        if not settings.VLLM_MODEL or not settings.VLLM_MODEL_REVISION:
            raise ImproperlyConfigured(
                "VLLM_BASE_URL is set, so VLLM_MODEL (the served model name) and VLLM_MODEL_REVISION "
                "(the pinned weights, e.g. the Hugging Face commit) must be set too: cached answers are keyed by them"
            )
        return cls(base_url=settings.VLLM_BASE_URL, model_id=settings.VLLM_MODEL,
                   model_revision=settings.VLLM_MODEL_REVISION, api_key=settings.VLLM_API_KEY,
                   **timeouts_from_settings())

    def close(self) -> None:
        self._openai.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.base_url} model={self.model_id}>"

    @property
    def breaker_state(self) -> str:
        """closed | open | half_open (open, and the next call will be the probe)."""
        state = self.breaker.current_state
        if state == pybreaker.STATE_OPEN:
            opened_at = self._breaker_storage.opened_at
            if opened_at is None or datetime.now(UTC) >= opened_at + timedelta(seconds=self.breaker.reset_timeout):
                return "half_open"
            return "open"
        return "half_open" if state == pybreaker.STATE_HALF_OPEN else "closed"

    # ------------------------------------------------------------------ the calls

    def complete(self, request: ChatRequest) -> GenerationResult:
        def once():
            yield self._complete(request)
        return self._guarded(once)[0]

    def stream(self, request: ChatRequest) -> Iterator[str | GenerationResult]:
        try:
            guarded = self.breaker.call(self._stream, request)
        except pybreaker.CircuitBreakerError as exc:
            self._count("circuit_open")
            raise GenerationError("circuit_open", f"model server failing; {exc}") from exc
        yield from guarded

    async def astream(self, request: ChatRequest) -> AsyncIterator[str | GenerationResult]:
        """``stream`` on the event loop: the same deltas, result, errors, retries and breaker, over
        the lean HTTP client (``http_stream``), so a waiting stream holds a coroutine, not a thread.
        Closing the iterator (``aclose``) or cancelling its task (the customer left) aborts the
        connection at once, which is what stops vLLM (or the embedded server) generating."""
        started = time.monotonic()
        deadline = started + self.timeout_s
        outcome = "interrupted"
        head, body = self._stream_request(request)
        try:
            with self.breaker.calling():
                attempt = 0
                while True:
                    state = _StreamState()  # nothing was yielded yet, so a retry starts from scratch
                    conn = await self._aopen(head, body, deadline)
                    try:
                        events = _EventData()
                        flushed = -1.0  # the loop's time of the last delta: none yet, the first goes at once
                        while True:
                            try:
                                raw = await conn.read(flushed + self.stream_flush_s if flushed >= 0 else 0.0)
                            except http_stream.Timeout as exc:
                                raise GenerationError("timeout", f"no complete answer within {self.timeout_s:.0f}s") from exc
                            except OSError as exc:  # the connection failed mid-stream
                                if state.yielded:
                                    raise GenerationError("interrupted", f"stream broke off: {exc}") from exc
                                raise _BrokeOffEarly(str(exc)) from exc
                            if not raw:
                                break
                            # with ``stream_flush_s``, a read waits until that long after the last
                            # delta went on, and the deltas it brings go on as one: fewer events
                            # written, each a turn through every layer up to the socket, and the
                            # first at once. An error event raises after the deltas before it.
                            deltas, failure = [], None
                            try:
                                with _event_errors(state):
                                    for chunk in events.feed(raw):
                                        delta = state.take(chunk, deadline, self.timeout_s, started)
                                        if delta:
                                            deltas.append(delta)
                            except GenerationError as exc:
                                failure = exc
                            if deltas:
                                flushed = conn.loop.time()
                                if self.stream_flush_s:
                                    yield deltas[0] if len(deltas) == 1 else "".join(deltas)
                                else:  # no coalescing: every delta as the server sent it
                                    for delta in deltas:
                                        yield delta
                            if failure is not None:
                                raise failure
                        state.check_ended()
                        break
                    except _BrokeOffEarly as exc:
                        attempt += 1
                        self._retry_or_give_up(exc, attempt, deadline)
                    finally:
                        conn.close()  # kept alive when read to its end, else aborted at once
            outcome = "ok"
            yield state.result(self.model_id, started)
        except pybreaker.CircuitBreakerError as exc:
            outcome = "circuit_open"
            raise GenerationError("circuit_open", f"model server failing; {exc}") from exc
        except (GeneratorExit, asyncio.CancelledError):
            outcome = "abandoned"  # the caller went away; the server was streaming fine
            raise
        except GenerationError as exc:
            outcome = exc.reason
            raise
        finally:
            self._count(outcome)

    def _pool(self) -> http_stream.ConnectionPool:
        """The kept-alive connections of the running event loop (a connection belongs to its loop):
        one pool a process under the async server, a new one for a test's new loop."""
        loop = asyncio.get_running_loop()
        held = self._async
        if held is None or held[0] is not loop:
            held = self._async = (loop, http_stream.ConnectionPool(
                self.base_url, keepalive_max=self.keepalive_max, keepalive_idle_s=self.keepalive_idle_s))
        return held[1]

    def _stream_request(self, request: ChatRequest) -> tuple[bytes, bytes]:
        """The streamed chat completion's request (head, body), as the openai client would send it:
        the backend's model, the messages, the generation parameters and the tenant's cache salt in
        the body; the key and the affinity header in the head."""
        payload = {"model": self.model_id, "messages": request.messages, "stream": True,
                   "stream_options": {"include_usage": True}, **request.params}
        lines = [f"POST {self._path}/v1/chat/completions HTTP/1.1", f"Host: {self._host}",
                 "Content-Type: application/json", "Accept: text/event-stream", "User-Agent: ask-supportbot",
                 f"Authorization: Bearer {self.api_key or 'none'}"]
        if request.cache_salt:
            payload["cache_salt"] = request.cache_salt
            lines.append(f"{AFFINITY_HEADER}: {affinity_key(request.cache_salt)}")
        body = json.dumps(payload, separators=(",", ":")).encode()
        lines.append(f"Content-Length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return head, body

    async def _aopen(self, head: bytes, body: bytes, deadline: float) -> http_stream.Connection:
        """Send the request until an event stream answers: connection failures, 408/409/429 and 5xx
        tried again (``max_retries``, the backoff, never past ``deadline``), other answers raised."""
        pool = self._pool()
        attempt = 0
        while True:
            attempt += 1
            status = retry_after = None
            try:
                conn = await pool.request(head, body, deadline=deadline, connect_timeout_s=self.connect_timeout_s)
            except http_stream.Timeout as exc:
                raise GenerationError("timeout", f"no answer within {self.timeout_s:.0f}s") from exc
            except OSError as exc:  # refused, unreachable, the connect timed out, closed before answering
                reason, detail = "unavailable", f"{type(exc).__name__}: {exc}"
            else:
                status = conn.status
                if status == 200:
                    content_type = conn.headers.get("content-type", "")
                    if "text/event-stream" not in content_type:
                        conn.close()
                        raise GenerationError("bad_response", f"expected an event stream, got {content_type or 'nothing'}")
                    return conn
                retry_after = _retry_after_s(conn.headers)
                try:
                    text = await conn.read_body()
                except (OSError, http_stream.Timeout):
                    text = b""
                finally:
                    conn.close()  # its headers go with it when it is kept for the next request
                detail = f"HTTP {status}: {_body_detail(text) or 'no detail'}"
                if status not in (408, 409, 429) and status < 500:
                    raise GenerationError("client_error" if status >= 400 else "bad_response", detail, status=status)
                reason = "unavailable" if status == 429 or status >= 500 else "client_error"
            if attempt > self.max_retries:
                raise GenerationError(reason, detail, status=status)
            delay = _backoff_s(self.retry_backoff_s, attempt, retry_after)
            if time.monotonic() + delay >= deadline:
                raise GenerationError(reason, f"{detail} (no time left to retry after attempt {attempt})", status=status)
            metrics.MODEL_RETRIES.labels(self.name).inc()
            logger.warning("generation attempt %d/%d to %s failed (%s); retrying in %.2fs", attempt,
                           self.max_retries + 1, self.base_url, detail, delay)
            await asyncio.sleep(delay)

    # ------------------------------------------------------------------ internals

    def _guarded(self, generator_fn) -> list:
        """Run a call through the breaker. pybreaker holds its lock for the whole of a plain call but
        only for the start of a generator, so every call goes through as a generator."""
        try:
            return list(self.breaker.call(generator_fn))
        except pybreaker.CircuitBreakerError as exc:
            self._count("circuit_open")
            raise GenerationError("circuit_open", f"model server failing; {exc}") from exc

    def _retry_or_give_up(self, exc: _BrokeOffEarly, attempt: int, deadline: float) -> None:
        """After a stream's ``attempt`` broke off before any text: another try, or "interrupted"."""
        if attempt > self.max_retries or time.monotonic() >= deadline:
            raise GenerationError("interrupted", f"{exc} (gave up after {attempt} attempts)") from exc
        logger.warning("generation stream from %s broke off before any text (%s); trying again", self.base_url, exc)

    def _count(self, outcome: str) -> None:
        metrics.MODEL_CALLS.labels(self.name, outcome).inc()

    def _create(self, request: ChatRequest, *, stream: bool, deadline: float):
        """One call of the client (its own retries included), errors as GenerationError."""
        body = dict(request.params)
        if request.cache_salt:
            body["cache_salt"] = request.cache_salt
        headers = {AFFINITY_HEADER: affinity_key(request.cache_salt)} if request.cache_salt else {}
        extra = {"stream_options": {"include_usage": True}} if stream else {}
        self._openai.call.deadline, self._openai.call.backend = deadline, self.name
        try:
            return self._openai.chat.completions.create(
                model=self.model_id, messages=request.messages, stream=stream, extra_body=body, extra_headers=headers,
                timeout=self._timeout(deadline), **extra)
        except _NoTimeLeft as exc:
            reason, detail, status = _transport_failure(exc.__context__)
            raise GenerationError(reason, f"{detail} ({exc})", status=status) from exc
        except (openai.APIError, ValueError) as exc:
            raise _as_generation_error(exc) from exc

    def _timeout(self, deadline: float) -> httpx2.Timeout:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GenerationError("timeout", f"no answer within {self.timeout_s:.0f}s")
        return httpx2.Timeout(min(self.timeout_s, remaining), connect=min(self.connect_timeout_s, remaining))

    def _complete(self, request: ChatRequest) -> GenerationResult:
        started = time.monotonic()
        try:
            completion = self._create(request, stream=False, deadline=started + self.timeout_s)
            result = _parse_completion(completion)
        except GenerationError as exc:
            self._count(exc.reason)
            raise
        self._count("ok")
        result.total_ms = (time.monotonic() - started) * 1000
        return result

    def _stream(self, request: ChatRequest) -> Iterator[str | GenerationResult]:
        started = time.monotonic()
        deadline = started + self.timeout_s
        outcome = "interrupted"
        try:
            attempt = 0
            while True:
                state = _StreamState()  # nothing was yielded yet, so a retry starts from scratch
                try:
                    yield from self._stream_once(request, deadline, state, started)
                    break
                except _BrokeOffEarly as exc:  # before any text: the client never retries a stream, we do
                    attempt += 1
                    self._retry_or_give_up(exc, attempt, deadline)
            outcome = "ok"
            yield state.result(self.model_id, started)
        except GeneratorExit:
            outcome = "abandoned"  # the caller went away; the server was streaming fine
            raise
        except GenerationError as exc:
            outcome = exc.reason
            raise
        finally:
            self._count(outcome)

    def _stream_once(self, request: ChatRequest, deadline: float, state: _StreamState,
                     started: float) -> Iterator[str]:
        stream = self._create(request, stream=True, deadline=deadline)
        try:
            with _stream_errors(state, stream.response.request):
                _expect_event_stream(stream)
                events = _EventData()
                for raw in stream.response.iter_bytes():
                    for chunk in events.feed(raw):
                        delta = state.take(chunk, deadline, self.timeout_s, started)
                        if delta:
                            yield delta
        finally:
            stream.close()
        state.check_ended()


class _BrokeOffEarly(Exception):
    pass


def _expect_event_stream(stream) -> None:
    content_type = stream.response.headers.get("content-type", "")
    if "text/event-stream" not in content_type:
        raise GenerationError("bad_response", f"expected an event stream, got {content_type or 'nothing'}")


class _ErrorEvent(Exception):
    """The server sent an error object in the stream instead of a chunk."""


class _EventData:
    """The events of a server-sent event stream, fed its bytes as they arrive: each event's
    ``data`` parsed as JSON, until ``[DONE]`` (what follows it is read and ignored). Fields other
    than ``data`` (``event``, ``id``, comments) carry nothing here."""

    def __init__(self):
        self._rest = b""
        self._data: list[bytes] = []
        self.done = False

    def feed(self, raw: bytes) -> Iterator[dict]:
        """The events ``raw`` completes, one at a time (an error event raises only after those before it)."""
        *lines, self._rest = (self._rest + raw).split(b"\n")
        for line in lines:
            line = line.rstrip(b"\r")
            if line.startswith(b"data:"):
                self._data.append(line[6:] if line[5:6] == b" " else line[5:])
            elif not line and self._data:  # a blank line ends an event
                data, self._data = b"\n".join(self._data), []
                if self.done:
                    continue
                if data.startswith(b"[DONE]"):
                    self.done = True
                    continue
                event = json.loads(data)  # ValueError: not JSON
                if isinstance(event, dict) and event.get("error"):
                    error = event["error"]
                    message = error.get("message") if isinstance(error, dict) else None
                    raise _ErrorEvent(str(message or "an error occurred during streaming")[:500])
                yield event


@contextlib.contextmanager
def _stream_errors(state: _StreamState, request: httpx2.Request):
    """What reading a stream's chunks may raise, as the sync and async streams report it."""
    try:
        yield
    except httpx2.TimeoutException as exc:
        raise _stream_failure(openai.APITimeoutError(request=request), state) from exc
    except (httpx2.RequestError, ssl.SSLError) as exc:  # the connection failed mid-stream
        raise _stream_failure(openai.APIConnectionError(request=request), state) from exc
    except openai.APIError as exc:
        raise _stream_failure(exc, state) from exc
    except _ErrorEvent as exc:
        raise GenerationError("interrupted" if state.yielded else "bad_response",
                              f"server error in stream: {exc}") from exc
    except ValueError as exc:  # a data line that is not JSON
        raise GenerationError("interrupted" if state.yielded else "bad_response",
                              f"invalid JSON in stream: {exc}") from exc


@contextlib.contextmanager
def _event_errors(state: _StreamState):
    """What reading a stream's events may raise (an error event, a data line that is not JSON)."""
    try:
        yield
    except _ErrorEvent as exc:
        raise GenerationError("interrupted" if state.yielded else "bad_response",
                              f"server error in stream: {exc}") from exc
    except ValueError as exc:
        raise GenerationError("interrupted" if state.yielded else "bad_response",
                              f"invalid JSON in stream: {exc}") from exc


def _stream_failure(exc: openai.APIError, state: _StreamState) -> Exception:
    """What a stream's API error becomes: never retried once the customer has seen part of the
    answer; a connection lost before any text is tried again (``_BrokeOffEarly``)."""
    if state.yielded:
        reason = "timeout" if isinstance(exc, openai.APITimeoutError) else "interrupted"
        return GenerationError(reason, f"stream broke off: {_describe(exc)}")
    if isinstance(exc, openai.APIConnectionError):
        return _BrokeOffEarly(_describe(exc))
    return GenerationError("bad_response", f"server error in stream: {_describe(exc)}")


class _StreamState:
    def __init__(self):
        self.parts: list[str] = []
        self.yielded = False
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens: int | None = None
        self.ttft_ms: float | None = None

    def text(self) -> str:
        return "".join(self.parts)

    def result(self, model_id: str, started: float) -> GenerationResult:
        """The stream's result, once it ended with its last chunk."""
        return GenerationResult(
            text=self.text(), finish_reason=self.finish_reason, model=self.model or model_id,
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
            cached_tokens=self.cached_tokens, ttft_ms=self.ttft_ms, total_ms=(time.monotonic() - started) * 1000,
        )

    def take(self, chunk, deadline: float, timeout_s: float, started: float) -> str:
        """One chunk of a stream that must end by ``deadline``: its text delta, the first one timed."""
        if time.monotonic() > deadline:
            raise GenerationError("timeout", f"no complete answer within {timeout_s:.0f}s")
        delta = self.apply(chunk)
        if delta:
            if self.ttft_ms is None:
                self.ttft_ms = (time.monotonic() - started) * 1000
            self.yielded = True
        return delta

    def check_ended(self) -> None:
        """A stream that ended without a last chunk: the server went away (retried if nothing was shown)."""
        if self.finish_reason is None:
            if self.yielded:
                raise GenerationError("interrupted", "stream ended without a finish_reason")
            raise _BrokeOffEarly("stream ended before any text")

    def apply(self, chunk: dict) -> str:
        """Fold one chunk (a ``chat.completion.chunk`` object, parsed JSON) into the state; return its text delta."""
        try:
            model = chunk.get("model")
            if isinstance(model, str) and model:
                self.model = model
            if chunk.get("usage"):
                self.prompt_tokens, self.completion_tokens, self.cached_tokens = _usage(chunk["usage"])
            delta_text = ""
            for choice in chunk.get("choices") or []:
                if (choice.get("index") or 0) != 0:
                    continue
                delta = choice.get("delta")
                content = delta.get("content") if delta is not None else None
                if content is not None and not isinstance(content, str):
                    raise TypeError("delta.content is not a string")
                delta_text += content or ""
                if choice.get("finish_reason"):
                    self.finish_reason = str(choice["finish_reason"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise GenerationError("bad_response", f"malformed stream chunk: {exc}") from exc
        if delta_text:
            self.parts.append(delta_text)
        return delta_text


def _usage(usage: Mapping) -> tuple[int, int, int | None]:
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if details is not None else None
    return _count(usage.get("prompt_tokens") or 0), _count(usage.get("completion_tokens") or 0), \
        None if cached is None else _count(cached)


def _count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"token count {value!r} is not a non-negative integer")
    return value


def _parse_completion(completion) -> GenerationResult:
    try:
        choice = completion.choices[0]
        content = choice.message.content
        if content is not None and not isinstance(content, str):
            raise TypeError("message.content is not a string")
        finish_reason = choice.finish_reason
        if not isinstance(finish_reason, str) or not finish_reason:
            raise ValueError("missing finish_reason")
        prompt_tokens, completion_tokens, cached_tokens = _usage(completion.usage.model_dump()) if completion.usage else (0, 0, None)
        model = completion.model
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise GenerationError("bad_response", f"malformed completion: {exc}") from exc
    return GenerationResult(
        text=content or "", finish_reason=finish_reason, model=model if isinstance(model, str) else "",
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_tokens=cached_tokens,
        ttft_ms=None, total_ms=0.0,
    )


def _as_generation_error(exc: BaseException, note: str = "") -> GenerationError:
    """The client's exception as the backend's failure reason."""
    suffix = f" {note}" if note else ""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        reason = "unavailable" if status == 429 or status >= 500 else "client_error" if status >= 400 else "bad_response"
        return GenerationError(reason, f"HTTP {status}: {_error_detail(exc)}{suffix}", status=status)
    if isinstance(exc, openai.APITimeoutError):
        return GenerationError("timeout", _describe(exc) + suffix)
    if isinstance(exc, openai.APIConnectionError):
        return GenerationError("unavailable", _describe(exc) + suffix)
    if isinstance(exc, GenerationError):
        return exc
    return GenerationError("bad_response", f"invalid response from the model server: {_describe(exc)}{suffix}")


def _transport_failure(exc: BaseException | None) -> tuple[str, str, int | None]:
    """A failed attempt as the client's transport saw it: (reason, detail, HTTP status)."""
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        return "unavailable", f"HTTP {status}", status
    if isinstance(exc, httpx2.TimeoutException):
        return "timeout", _describe(exc), None
    return "unavailable", _describe(exc) if exc is not None else "unknown failure", None


def _error_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    try:
        return exc.response.text[:500] or exc.response.reason_phrase
    except Exception:  # noqa: BLE001 - a detail is best effort
        return exc.message[:500]


def _describe(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return f"{text} ({type(cause).__name__})" if cause is not None and not isinstance(exc, GenerationError) else text


def timeouts_from_settings() -> dict:
    """The transport policy shared by every backend built from settings."""
    return dict(
        connect_timeout_s=settings.GENERATION_CONNECT_TIMEOUT_S,
        timeout_s=settings.GENERATION_TIMEOUT_S,
        max_retries=settings.GENERATION_MAX_RETRIES,
        retry_backoff_s=settings.GENERATION_RETRY_BACKOFF_S,
        breaker_failures=settings.GENERATION_BREAKER_FAILURES,
        breaker_reset_s=settings.GENERATION_BREAKER_RESET_S,
        keepalive_max=settings.GENERATION_KEEPALIVE_CONNECTIONS,
        keepalive_idle_s=settings.GENERATION_KEEPALIVE_IDLE_S,
        stream_flush_s=settings.STREAM_FLUSH_MS / 1000,
    )
