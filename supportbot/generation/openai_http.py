"""The vLLM backend: vLLM's OpenAI-compatible HTTP API over httpx.

The embedded CPU model server speaks the same protocol, so the embedded backend
is this client pointed at it (see ``embedded.py``).

Failure policy, in one place:

- connect errors, timeouts and 5xx/429 answers are retried a bounded number of
  times with exponential backoff and jitter (429 ``Retry-After`` honoured), but
  never once a stream has yielded text to the caller, and never past the
  overall deadline (``GENERATION_TIMEOUT_S``);
- other 4xx answers are the caller's fault and are never retried;
- a circuit breaker per backend opens after N consecutive failed calls, fails
  fast ("circuit_open") for ``GENERATION_BREAKER_RESET_S`` seconds, then lets a
  single probe through (half-open): success closes it, failure opens it again.

Per-request prefix-cache accounting comes from
``usage.prompt_tokens_details.cached_tokens`` (vLLM started with
``--enable-prompt-tokens-details``); the fleet view comes from the server's
Prometheus ``/metrics`` (:func:`scrape_prefix_cache_metrics`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from supportbot.generation.base import ChatRequest, GenerationBackend, GenerationError, GenerationResult

logger = logging.getLogger(__name__)

CHAT_PATH = "/v1/chat/completions"
METRICS_PATH = "/metrics"
# A router doing session affinity (e.g. vLLM production-stack `--routing-logic session
# --session-key x-session-id`) keeps one tenant's requests, hence its prefix, on one replica.
AFFINITY_HEADER = "X-Session-Id"
_MAX_BODY_BYTES = 8 * 1024 * 1024
_ERROR_DETAIL_BYTES = 2048


class CircuitBreaker:
    """closed -> (``failures`` consecutive failures) -> open -> (``reset_s``) -> half-open (one probe)."""

    def __init__(self, failures: int, reset_s: float, clock=time.monotonic):
        self.failures = max(1, int(failures))
        self.reset_s = float(reset_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> str:
        with self._lock:
            if self._opened_at is None:
                return "closed"
            if self._probing or self._clock() - self._opened_at < self.reset_s:
                return "open"
            return "half_open"

    def acquire(self) -> None:
        """Let a call through, or raise GenerationError("circuit_open") without touching the network."""
        with self._lock:
            if self._opened_at is None:
                return
            waited = self._clock() - self._opened_at
            if self._probing or waited < self.reset_s:
                retry_in = max(0.0, self.reset_s - waited)
                raise GenerationError("circuit_open", f"model server failing; next probe in {retry_in:.1f}s")
            self._probing = True  # this call is the half-open probe

    def record_success(self) -> None:
        with self._lock:
            if self._opened_at is not None:
                logger.info("generation circuit closed: the model server answers again")
            self._consecutive = 0
            self._opened_at = None
            self._probing = False

    def record_failure(self) -> None:
        with self._lock:
            self._consecutive += 1
            if self._probing or self._consecutive >= self.failures:
                if not self._probing:
                    logger.error("generation circuit opened after %d consecutive failures", self._consecutive)
                self._opened_at = self._clock()
                self._probing = False


class _Retryable(Exception):
    def __init__(self, reason: str, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.reason, self.message, self.retry_after, self.status = reason, message, retry_after, status


@dataclass(frozen=True)
class PrefixCacheMetrics:
    """The fleet view of one server: prefix-cache counters (in tokens) and KV-cache usage (0..1)."""

    prefix_cache_queries: float | None
    prefix_cache_hits: float | None
    kv_cache_usage_perc: float | None

    @property
    def hit_rate(self) -> float | None:
        if not self.prefix_cache_queries or self.prefix_cache_hits is None:
            return None
        return self.prefix_cache_hits / self.prefix_cache_queries


# Current names first; vLLM V0 / early V1 names as fallbacks.
_METRIC_NAMES = {
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}


def parse_prometheus_samples(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {metric name: sum of its samples over all label sets}."""
    sums: dict[str, float] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        brace = line.find("{")
        if brace != -1:
            name = line[:brace]
            close = _closing_brace(line, brace)
            if close == -1:
                continue
            rest = line[close + 1:].split()
        else:
            name, *rest = line.split()
        if not rest:
            continue
        try:
            value = float(rest[0])
        except ValueError:
            continue
        if value != value:  # NaN
            continue
        sums[name] = sums.get(name, 0.0) + value
    return sums


def _closing_brace(line: str, start: int) -> int:
    quoted = escaped = False
    for i in range(start + 1, len(line)):
        c = line[i]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == '"':
            quoted = not quoted
        elif c == "}" and not quoted:
            return i
    return -1


def parse_prefix_cache_metrics(text: str) -> PrefixCacheMetrics:
    samples = parse_prometheus_samples(text)
    found = {}
    for field_name, names in _METRIC_NAMES.items():
        found[field_name] = next((samples[n] for n in names if n in samples), None)
    return PrefixCacheMetrics(**found)


def scrape_prefix_cache_metrics(base_url: str, *, api_key: str = "", timeout_s: float | None = None) -> PrefixCacheMetrics:
    """GET ``{base_url}/metrics`` and return the prefix-cache counters summed over label sets."""
    timeout = timeout_s if timeout_s is not None else settings.GENERATION_CONNECT_TIMEOUT_S * 2
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(normalize_base_url(base_url) + METRICS_PATH, headers=headers, timeout=timeout)
    except httpx.TimeoutException as exc:
        raise GenerationError("timeout", f"metrics scrape: {exc}") from exc
    except httpx.TransportError as exc:
        raise GenerationError("unavailable", f"metrics scrape: {exc}") from exc
    if response.status_code != 200:
        raise GenerationError("bad_response", f"metrics scrape: HTTP {response.status_code}", status=response.status_code)
    return parse_prefix_cache_metrics(response.text)


def metrics_targets() -> list[str]:
    """The model servers whose /metrics make up the fleet view.

    ``VLLM_METRICS_URLS`` lists the replicas behind a router (a router's own
    /metrics are not vLLM's); otherwise the one server the app talks to.
    """
    if settings.VLLM_BASE_URL:
        urls = settings.VLLM_METRICS_URLS or [settings.VLLM_BASE_URL]
    else:
        urls = [f"http://{settings.EMBEDDED_MODEL_HOST}:{settings.EMBEDDED_MODEL_PORT}"]
    return [normalize_base_url(u) for u in urls]


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


class OpenAIHTTPBackend(GenerationBackend):
    """A client of one OpenAI-compatible ``/v1/chat/completions`` endpoint (vLLM, or a router in front of many)."""

    name = "vllm"

    def __init__(self, *, base_url: str, model_id: str, model_revision: str, api_key: str = "",
                 connect_timeout_s: float = 2.0, timeout_s: float = 120.0, max_retries: int = 2,
                 retry_backoff_s: float = 0.25, breaker_failures: int = 5, breaker_reset_s: float = 30.0):
        self.base_url = normalize_base_url(base_url)
        self.model_id = model_id
        self.model_revision = model_revision
        self.api_key = api_key
        self.connect_timeout_s = connect_timeout_s
        self.timeout_s = timeout_s
        self.max_retries = max(0, int(max_retries))
        self.retry_backoff_s = max(0.0, retry_backoff_s)
        self.breaker = CircuitBreaker(breaker_failures, breaker_reset_s)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=self.base_url, headers=headers, follow_redirects=False,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
        )

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
        self._client.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.base_url} model={self.model_id}>"

    # ------------------------------------------------------------------ the calls

    def complete(self, request: ChatRequest) -> GenerationResult:
        started = time.monotonic()
        deadline = started + self.timeout_s
        body = self._body(request, stream=False)
        self.breaker.acquire()
        healthy = False
        try:
            data = self._with_retries(lambda: self._complete_once(body, deadline, request), deadline)
            result = _parse_completion(data)
            healthy = True
        except GenerationError as exc:
            healthy = exc.reason == "client_error"  # the server answered; the request was wrong
            raise
        finally:
            self._record(healthy)
        result.total_ms = (time.monotonic() - started) * 1000
        return result

    def stream(self, request: ChatRequest) -> Iterator[str | GenerationResult]:
        started = time.monotonic()
        deadline = started + self.timeout_s
        body = self._body(request, stream=True)
        self.breaker.acquire()
        healthy = False
        try:
            attempt = 0
            while True:
                state = _StreamState()  # nothing was yielded yet, so a retry starts from scratch
                try:
                    yield from self._stream_once(body, deadline, request, state, started)
                    break
                except (_Retryable, httpx.TransportError) as exc:
                    if state.yielded:  # never retried: the customer has seen part of this answer
                        reason = "timeout" if isinstance(exc, httpx.TimeoutException) else "interrupted"
                        raise GenerationError(reason, f"stream broke off: {_describe(exc)}") from exc
                    attempt = self._before_retry(_as_retryable(exc), attempt, deadline)
            healthy = True
            yield GenerationResult(
                text=state.text(), finish_reason=state.finish_reason, model=state.model or self.model_id,
                prompt_tokens=state.prompt_tokens, completion_tokens=state.completion_tokens,
                cached_tokens=state.cached_tokens, ttft_ms=state.ttft_ms,
                total_ms=(time.monotonic() - started) * 1000,
            )
        except GeneratorExit:
            healthy = True  # the caller went away; the server was streaming fine
            raise
        except GenerationError as exc:
            healthy = exc.reason == "client_error"
            raise
        finally:
            self._record(healthy)

    def metrics(self) -> PrefixCacheMetrics:
        """This server's prefix-cache counters (not counted by the circuit breaker)."""
        return scrape_prefix_cache_metrics(self.base_url, api_key=self.api_key)

    # ------------------------------------------------------------------ internals

    def _record(self, healthy: bool) -> None:
        if healthy:
            self.breaker.record_success()
        else:
            self.breaker.record_failure()

    def _body(self, request: ChatRequest, *, stream: bool) -> bytes:
        body = dict(request.params)
        body.update(model=self.model_id, messages=request.messages, stream=stream)
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.cache_salt:
            body["cache_salt"] = request.cache_salt
        return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def _headers(self, request: ChatRequest, *, stream: bool) -> dict:
        headers = {}
        if request.cache_salt:
            headers[AFFINITY_HEADER] = affinity_key(request.cache_salt)
        if stream:
            headers["Accept"] = "text/event-stream"
        return headers

    def _timeout(self, deadline: float) -> httpx.Timeout:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GenerationError("timeout", f"no answer within {self.timeout_s:.0f}s")
        return httpx.Timeout(connect=min(self.connect_timeout_s, remaining), read=min(self.timeout_s, remaining),
                             write=min(self.timeout_s, remaining), pool=min(self.connect_timeout_s, remaining))

    def _open(self, body: bytes, deadline: float, request: ChatRequest, *, stream: bool) -> httpx.Response:
        """One attempt: a 2xx response with its body unread, or an exception that says whether to retry."""
        http_request = self._client.build_request(
            "POST", CHAT_PATH, content=body, headers=self._headers(request, stream=stream),
            timeout=self._timeout(deadline),
        )
        try:
            response = self._client.send(http_request, stream=True)
        except httpx.TransportError as exc:
            raise _as_retryable(exc) from exc
        except httpx.HTTPError as exc:
            raise GenerationError("bad_response", _describe(exc)) from exc
        if 200 <= response.status_code < 300:
            return response
        try:
            detail = _error_detail(response)
        finally:
            response.close()
        status = response.status_code
        if status == 429 or status >= 500:
            raise _Retryable("unavailable", f"HTTP {status}: {detail}", _retry_after(response), status)
        if 400 <= status < 500:
            raise GenerationError("client_error", f"HTTP {status}: {detail}", status=status)
        raise GenerationError("bad_response", f"unexpected HTTP {status}: {detail}", status=status)

    def _complete_once(self, body: bytes, deadline: float, request: ChatRequest) -> dict:
        response = self._open(body, deadline, request, stream=False)
        try:
            chunks, size = [], 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > _MAX_BODY_BYTES:
                    raise GenerationError("bad_response", "response body too large")
                if time.monotonic() > deadline:
                    raise GenerationError("timeout", f"no answer within {self.timeout_s:.0f}s")
                chunks.append(chunk)
        except httpx.TransportError as exc:
            raise _as_retryable(exc) from exc
        except httpx.HTTPError as exc:
            raise GenerationError("bad_response", _describe(exc)) from exc
        finally:
            response.close()
        try:
            data = json.loads(b"".join(chunks))
        except ValueError as exc:
            raise GenerationError("bad_response", f"invalid JSON from the model server: {exc}") from exc
        if not isinstance(data, dict):
            raise GenerationError("bad_response", "completion is not a JSON object")
        return data

    def _with_retries(self, attempt_fn, deadline: float):
        attempt = 0
        while True:
            try:
                return attempt_fn()
            except _Retryable as exc:
                attempt = self._before_retry(exc, attempt, deadline)

    def _before_retry(self, exc: _Retryable, attempt: int, deadline: float) -> int:
        """Sleep before the next attempt, or raise the final GenerationError. Returns the attempt count."""
        attempt += 1
        if attempt > self.max_retries:
            raise GenerationError(exc.reason, f"{exc.message} (gave up after {attempt} attempts)", status=exc.status)
        delay = self.retry_backoff_s * (2 ** (attempt - 1))
        delay = delay / 2 + random.uniform(0, delay / 2)
        if exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        if time.monotonic() + delay >= deadline:
            raise GenerationError(exc.reason, f"{exc.message} (no time left to retry)", status=exc.status)
        logger.warning("generation attempt %d/%d to %s failed (%s: %s); retrying in %.2fs",
                       attempt, self.max_retries + 1, self.base_url, exc.reason, exc.message, delay)
        time.sleep(delay)
        return attempt

    def _stream_once(self, body: bytes, deadline: float, request: ChatRequest, state: _StreamState,
                     started: float) -> Iterator[str]:
        response = self._open(body, deadline, request, stream=True)
        try:
            content_type = response.headers.get("content-type", "")
            if "text/event-stream" not in content_type:
                raise GenerationError("bad_response", f"expected an event stream, got {content_type or 'nothing'}")
            for data in _sse_data(response.iter_lines()):
                if time.monotonic() > deadline:
                    raise GenerationError("timeout", f"no complete answer within {self.timeout_s:.0f}s")
                if data == "[DONE]":
                    state.done = True
                    break
                delta = state.apply(_json_event(data))
                if delta:
                    if state.ttft_ms is None:
                        state.ttft_ms = (time.monotonic() - started) * 1000
                    state.yielded = True
                    yield delta
        except httpx.TransportError:
            raise  # retried, or "interrupted" once text was yielded
        except httpx.HTTPError as exc:
            raise GenerationError("interrupted" if state.yielded else "bad_response", _describe(exc)) from exc
        finally:
            response.close()
        if not state.done:
            raise _Retryable("interrupted", "stream ended without [DONE]")
        if state.finish_reason is None:
            raise GenerationError("bad_response", "stream ended without a finish_reason")


class _StreamState:
    def __init__(self):
        self.parts: list[str] = []
        self.yielded = False
        self.done = False
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens: int | None = None
        self.ttft_ms: float | None = None

    def text(self) -> str:
        return "".join(self.parts)

    def apply(self, event: dict) -> str:
        """Fold one chunk into the state; return its text delta."""
        if "error" in event:
            error = event["error"] if isinstance(event["error"], dict) else {"message": event["error"]}
            raise GenerationError("interrupted" if self.yielded else "bad_response",
                                  f"server error in stream: {error.get('message')}")
        try:
            if isinstance(event.get("model"), str):
                self.model = event["model"]
            if event.get("usage"):
                self.prompt_tokens, self.completion_tokens, self.cached_tokens = _usage(event["usage"])
            delta_text = ""
            for choice in event.get("choices") or []:
                if choice.get("index", 0) != 0:
                    continue
                content = (choice.get("delta") or {}).get("content")
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


def _sse_data(lines: Iterator[str]) -> Iterator[str]:
    """The ``data`` payloads of a server-sent event stream (multi-line data joined with newlines)."""
    pending: list[str] = []
    for line in lines:
        if not line:
            if pending:
                yield "\n".join(pending)
                pending = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            pending.append(value[1:] if value.startswith(" ") else value)
    if pending:
        yield "\n".join(pending)


def _json_event(data: str) -> dict:
    try:
        event = json.loads(data)
    except ValueError as exc:
        raise GenerationError("bad_response", f"invalid JSON in stream: {data[:80]!r}") from exc
    if not isinstance(event, dict):
        raise GenerationError("bad_response", "stream chunk is not a JSON object")
    return event


def _usage(usage: dict) -> tuple[int, int, int | None]:
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    return (
        _count(usage.get("prompt_tokens", 0)),
        _count(usage.get("completion_tokens", 0)),
        None if cached is None else _count(cached),
    )


def _count(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"token count {value!r} is not a non-negative integer")
    return value


def _parse_completion(data: dict) -> GenerationResult:
    if "error" in data:
        raise GenerationError("bad_response", f"server error: {data['error']}")
    try:
        choice = data["choices"][0]
        content = choice["message"].get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("message.content is not a string")
        finish_reason = choice["finish_reason"]
        if not isinstance(finish_reason, str) or not finish_reason:
            raise ValueError("missing finish_reason")
        prompt_tokens, completion_tokens, cached_tokens = _usage(data.get("usage") or {})
        model = data.get("model")
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise GenerationError("bad_response", f"malformed completion: {exc}") from exc
    return GenerationResult(
        text=content or "", finish_reason=finish_reason, model=model if isinstance(model, str) else "",
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, cached_tokens=cached_tokens,
        ttft_ms=None, total_ms=0.0,
    )


def _as_retryable(exc: Exception) -> _Retryable:
    if isinstance(exc, _Retryable):
        return exc
    if isinstance(exc, httpx.TimeoutException):
        return _Retryable("timeout", _describe(exc))
    return _Retryable("unavailable", _describe(exc))


def _describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _error_detail(response: httpx.Response) -> str:
    raw = b""
    try:
        for chunk in response.iter_bytes():
            raw += chunk
            if len(raw) >= _ERROR_DETAIL_BYTES:
                break
    except httpx.HTTPError:
        pass
    text = raw[:_ERROR_DETAIL_BYTES].decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
    except (ValueError, AttributeError):
        pass
    return text[:500] or response.reason_phrase


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def timeouts_from_settings() -> dict:
    """The transport policy shared by every backend built from settings."""
    return dict(
        connect_timeout_s=settings.GENERATION_CONNECT_TIMEOUT_S,
        timeout_s=settings.GENERATION_TIMEOUT_S,
        max_retries=settings.GENERATION_MAX_RETRIES,
        retry_backoff_s=settings.GENERATION_RETRY_BACKOFF_S,
        breaker_failures=settings.GENERATION_BREAKER_FAILURES,
        breaker_reset_s=settings.GENERATION_BREAKER_RESET_S,
    )
