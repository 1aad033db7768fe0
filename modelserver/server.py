"""An OpenAI-compatible server over one ``llama_cpp.Llama``, with vLLM's prefix-cache accounting.

One model, one KV state, one lock: requests are served one at a time (the
others wait, counted in ``vllm:num_requests_waiting``). llama.cpp reuses the KV
state of the longest token prefix shared with the previous request; this server

- reuses it only when the request carries the same ``cache_salt`` as the one
  that built the state (another salt resets it: no reuse across tenants);
- reports the reuse it actually got (the KV position the first evaluation
  started from) as ``usage.prompt_tokens_details.cached_tokens``;
- exposes ``vllm:prefix_cache_queries_total`` / ``vllm:prefix_cache_hits_total``
  (in tokens), ``vllm:kv_cache_usage_perc`` and request counters on ``/metrics``.
"""
from __future__ import annotations

import codecs
import json
import logging
import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import llama_cpp
from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

logger = logging.getLogger("modelserver")

MAX_REQUEST_BYTES = 4 * 1024 * 1024
SOCKET_TIMEOUT_S = 60  # a stalled client cannot hold the model lock for longer than this per write
ROLES = ("system", "user", "assistant")
GET_PATHS = ("/health", "/v1/models", "/metrics")
POST_PATHS = ("/v1/chat/completions", "/tokenize")


class BadRequest(Exception):
    """A client error, answered with an OpenAI-style error body."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None, status: int = 400,
                 kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.param, self.code, self.status, self.kind = message, param, code, status, kind

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


# --------------------------------------------------------------------------- request parsing

@dataclass
class SamplingParams:
    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0: disabled
    min_p: float = 0.0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0


@dataclass
class ChatCall:
    messages: list[dict]
    params: SamplingParams
    stream: bool
    include_usage: bool
    cache_salt: str | None


def _number(body: dict, name: str, default, low: float, high: float, *, integer: bool = False):
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise BadRequest(f"'{name}' must be {'an integer' if integer else 'a number'}", param=name)
    if not low <= value <= high:
        raise BadRequest(f"'{name}' must be between {low} and {high}, got {value}", param=name)
    return value


def _messages(raw) -> list[dict]:
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'messages' must be a non-empty list", param="messages")
    messages = []
    for i, message in enumerate(raw):
        if not isinstance(message, dict):
            raise BadRequest(f"messages[{i}] must be an object", param="messages")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise BadRequest(f"messages[{i}].role must be one of {', '.join(ROLES)}", param="messages")
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            if not all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                       for p in content):
                raise BadRequest(f"messages[{i}].content parts must be text parts", param="messages")
            content = "".join(p["text"] for p in content)
        if not isinstance(content, str):
            raise BadRequest(f"messages[{i}].content must be a string", param="messages")
        messages.append({"role": role, "content": content})
    return messages


def parse_chat_call(body, served_name: str) -> ChatCall:
    """Validate a /v1/chat/completions body; raise BadRequest with the parameter at fault."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != served_name:
        raise BadRequest(f"The model `{model}` does not exist.", param="model", code="model_not_found", status=404)
    if body.get("n", 1) != 1:
        raise BadRequest("only n=1 is supported", param="n")
    for unsupported in ("tools", "functions", "logprobs"):
        if body.get(unsupported):
            raise BadRequest(f"'{unsupported}' is not supported by this server", param=unsupported)

    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("'stream' must be a boolean", param="stream")
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not stream:
            raise BadRequest("'stream_options' is only allowed when 'stream' is true", param="stream_options")
        if not isinstance(options, dict) or not isinstance(options.get("include_usage", False), bool):
            raise BadRequest("'stream_options.include_usage' must be a boolean", param="stream_options")
        include_usage = options.get("include_usage", False)

    salt = body.get("cache_salt")
    if salt is not None and (not isinstance(salt, str) or not salt):
        raise BadRequest("'cache_salt' must be a non-empty string if provided", param="cache_salt")

    stop = body.get("stop")
    if stop is None:
        stop = []
    elif isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise BadRequest("'stop' must be a string or a list of non-empty strings", param="stop")

    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise BadRequest("'max_tokens' must be a positive integer", param="max_tokens")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest("'seed' must be an integer", param="seed")

    top_k = _number(body, "top_k", -1, -1, 1_000_000, integer=True)
    params = SamplingParams(
        max_tokens=max_tokens,
        temperature=float(_number(body, "temperature", 1.0, 0.0, 2.0)),
        top_p=float(_number(body, "top_p", 1.0, 1e-9, 1.0)),
        top_k=max(0, top_k),
        min_p=float(_number(body, "min_p", 0.0, 0.0, 1.0)),
        seed=seed,
        stop=stop,
        repetition_penalty=float(_number(body, "repetition_penalty", 1.0, 1e-3, 10.0)),
        frequency_penalty=float(_number(body, "frequency_penalty", 0.0, -2.0, 2.0)),
        presence_penalty=float(_number(body, "presence_penalty", 0.0, -2.0, 2.0)),
    )
    return ChatCall(messages=_messages(body.get("messages")), params=params, stream=stream,
                    include_usage=include_usage, cache_salt=salt)


# --------------------------------------------------------------------------- the engine

class _CountingLlama(Llama):
    """Records the KV position the next evaluation starts from: the prefix llama.cpp really reused."""

    measure_next_eval = False
    reused_tokens = 0

    def eval(self, tokens):
        if self.measure_next_eval:
            self.reused_tokens = self.n_tokens
            self.measure_next_eval = False
        super().eval(tokens)


class _StopMatcher:
    """Streams text while holding back a tail that could still become a stop string."""

    def __init__(self, stops: list[str]):
        self.stops = stops
        self.pending = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """Return (text safe to emit, whether a stop string was hit)."""
        self.pending += text
        hits = [i for i in (self.pending.find(s) for s in self.stops) if i != -1]
        if hits:
            out, self.pending = self.pending[: min(hits)], ""
            return out, True
        keep = 0
        for s in self.stops:
            for n in range(min(len(s) - 1, len(self.pending)), 0, -1):
                if self.pending.endswith(s[:n]):
                    keep = max(keep, n)
                    break
        cut = len(self.pending) - keep
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return out, False

    def flush(self) -> str:
        out, self.pending = self.pending, ""
        return out


@dataclass
class Outcome:
    finish_reason: str = "abort"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


class Stats:
    """Counters behind /metrics (tokens, requests) and the queue gauges."""

    def __init__(self):
        self.lock = threading.Lock()
        self.prefix_cache_queries = 0
        self.prefix_cache_hits = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.finished = Counter()
        self.http = Counter()
        self.running = 0
        self.waiting = 0
        self.kv_tokens = 0

    def add(self, **deltas):
        with self.lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)


class ModelEngine:
    def __init__(self, model_path: Path, *, n_ctx: int, n_threads: int, served_name: str, revision: str):
        self.served_name = served_name
        self.revision = revision
        self.model_path = Path(model_path)
        self.llm = _CountingLlama(model_path=str(model_path), n_ctx=n_ctx, n_threads=n_threads,
                                  n_threads_batch=n_threads, verbose=False)
        self.n_ctx = self.llm.n_ctx()
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise RuntimeError(f"{model_path} has no chat template")
        eos = self.llm.detokenize([self.llm.token_eos()], special=True).decode("utf-8", "replace")
        bos = self.llm.detokenize([self.llm.token_bos()], special=True).decode("utf-8", "replace")
        self._formatters = {
            flag: Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, add_generation_prompt=flag)
            for flag in (True, False)
        }
        self._vocab = self.llm._model.vocab
        self.lock = threading.Lock()
        self.kv_salt: str | None = None  # the salt of the request that built the current KV state
        self.stats = Stats()
        self.created = int(time.time())

    def tokenize_chat(self, messages: list[dict], add_generation_prompt: bool = True) -> list[int]:
        try:
            prompt = self._formatters[add_generation_prompt](messages=messages).prompt
        except Exception as exc:  # the template's raise_exception() or a Jinja error
            raise BadRequest(f"cannot apply the chat template: {exc}", param="messages") from exc
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def tokenize_text(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def check_length(self, n_prompt: int, max_tokens: int | None) -> int:
        """The completion budget for this prompt, or a 400 like vLLM's when it does not fit."""
        budget = self.n_ctx - n_prompt
        if budget < 1 or (max_tokens is not None and max_tokens > budget):
            raise BadRequest(
                f"This model's maximum context length is {self.n_ctx} tokens. However, you requested "
                f"{n_prompt + (max_tokens or 1)} tokens ({n_prompt} in the messages, {max_tokens or 1} in the "
                f"completion). Please reduce the length of the messages or completion.",
                param="messages", code="context_length_exceeded",
            )
        return max_tokens or budget

    def generate(self, tokens: list[int], salt: str | None, params: SamplingParams, outcome: Outcome):
        """Yield text pieces; fill ``outcome``. Holds the model lock from the first ``next`` until closed."""
        self.stats.add(waiting=1)
        with self.lock:
            self.stats.add(waiting=-1, running=1)
            try:
                yield from self._generate_locked(tokens, salt, params, outcome)
            except GeneratorExit:
                raise  # the client went away between tokens: the KV state is consistent, keep it
            except BaseException:
                # A failure inside llama.cpp may leave the KV state half-written: start clean next time.
                self.llm.reset()
                self.kv_salt = None
                raise
            finally:
                self.stats.add(running=-1)
                with self.stats.lock:
                    self.stats.kv_tokens = self.llm.n_tokens
                    self.stats.finished[outcome.finish_reason] += 1
                    self.stats.generation_tokens += outcome.completion_tokens

    def _generate_locked(self, tokens, salt, params: SamplingParams, outcome: Outcome):
        llm = self.llm
        if salt != self.kv_salt:
            llm.reset()  # another tenant's KV state is never reused, whatever the tokens
            self.kv_salt = salt
        budget = self.check_length(len(tokens), params.max_tokens)
        seed = params.seed if params.seed is not None else random.randint(0, 2**31 - 1)
        llm.set_seed(seed & 0xFFFFFFFF)
        llm.reused_tokens = 0
        llm.measure_next_eval = True
        outcome.prompt_tokens = len(tokens)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        stops = _StopMatcher(params.stop)
        counted = False
        stopped_by_string = False
        generator = llm.generate(
            tokens, top_k=params.top_k, top_p=params.top_p, min_p=params.min_p, typical_p=1.0,
            temp=params.temperature, repeat_penalty=params.repetition_penalty,
            frequency_penalty=params.frequency_penalty, presence_penalty=params.presence_penalty,
        )
        try:
            for token in generator:
                if not counted:
                    counted = True
                    self._count_prompt(outcome, llm.reused_tokens)
                if llama_cpp.llama_vocab_is_eog(self._vocab, token) or llama_cpp.llama_vocab_is_control(self._vocab, token):
                    outcome.finish_reason = "stop"
                    break
                outcome.completion_tokens += 1
                text, stopped_by_string = stops.feed(decoder.decode(llm.detokenize([token])))
                if text:
                    yield text
                if stopped_by_string:
                    outcome.finish_reason = "stop"
                    break
                if outcome.completion_tokens >= budget:
                    outcome.finish_reason = "length"
                    break
        finally:
            generator.close()
            if not counted and not llm.measure_next_eval:
                self._count_prompt(outcome, llm.reused_tokens)
        if not stopped_by_string:
            tail, stopped_by_string = stops.feed(decoder.decode(b"", final=True))
            tail = tail if stopped_by_string else tail + stops.flush()
            if tail:
                yield tail

    def _count_prompt(self, outcome: Outcome, reused: int) -> None:
        outcome.cached_tokens = min(reused, outcome.prompt_tokens)
        self.stats.add(prefix_cache_queries=outcome.prompt_tokens, prefix_cache_hits=outcome.cached_tokens,
                       prompt_tokens=outcome.prompt_tokens)

    def metrics_text(self) -> str:
        label = f'model_name="{_label(self.served_name)}"'
        s = self.stats
        with s.lock:
            samples = [
                ("vllm:num_requests_running", "gauge", "Number of requests being generated.", [(label, s.running)]),
                ("vllm:num_requests_waiting", "gauge", "Number of requests waiting for the model.", [(label, s.waiting)]),
                ("vllm:kv_cache_usage_perc", "gauge", "Share of the context window holding KV state, reusable prefix included. 1 means 100 percent.",
                 [(label, s.kv_tokens / self.n_ctx)]),
                ("vllm:prefix_cache_queries_total", "counter",
                 "Prefix cache queries, in terms of number of queried tokens.", [(label, s.prefix_cache_queries)]),
                ("vllm:prefix_cache_hits_total", "counter",
                 "Prefix cache hits, in terms of number of cached tokens.", [(label, s.prefix_cache_hits)]),
                ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
                 [(label, s.prompt_tokens)]),
                ("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
                 [(label, s.generation_tokens)]),
                ("vllm:request_success_total", "counter", "Count of finished requests by finish reason.",
                 [(f'finished_reason="{_label(reason)}",{label}', n) for reason, n in sorted(s.finished.items())]),
                ("modelserver_http_requests_total", "counter", "HTTP requests by path and status code.",
                 [(f'code="{code}",path="{_label(path)}"', n) for (path, code), n in sorted(s.http.items())]),
            ]
        lines = []
        for name, kind, help_text, values in samples:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            lines += [f"{name}{{{labels}}} {float(value)!r}" for labels, value in values]
        return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# --------------------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    server_version = "supportbot-modelserver/1"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S
    server: ModelHTTPServer

    @property
    def engine(self) -> ModelEngine:
        return self.server.engine

    # -------------------------------------------------------------- routing

    def do_GET(self):
        path = self._path()
        if path == "/health":
            self._send_json(200, {"status": "ok"})
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{
                "id": self.engine.served_name, "object": "model", "created": self.engine.created,
                "owned_by": "supportbot", "root": str(self.engine.model_path),
                "max_model_len": self.engine.n_ctx, "revision": self.engine.revision,
            }]})
        elif path == "/metrics":
            self._send(200, self.engine.metrics_text().encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path in POST_PATHS:
            self._send_error(BadRequest("method not allowed", status=405))
        else:
            self._send_error(BadRequest(f"no route for {path}", status=404, code="not_found"))

    def do_POST(self):
        path = self._path()
        try:
            if path == "/v1/chat/completions":
                self._chat()
            elif path == "/tokenize":
                self._tokenize()
            elif path in GET_PATHS:
                raise BadRequest("method not allowed", status=405)
            else:
                raise BadRequest(f"no route for {path}", status=404, code="not_found")
        except BadRequest as exc:
            self._send_error(exc)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:
            logger.exception("internal error on %s", path)
            self._send_error(BadRequest("internal server error", status=500, kind="internal_error"))

    def _path(self) -> str:
        return urlsplit(self.path).path.rstrip("/") or "/"

    # -------------------------------------------------------------- endpoints

    def _chat(self):
        call = parse_chat_call(self._read_json(), self.engine.served_name)
        tokens = self.engine.tokenize_chat(call.messages)
        self.engine.check_length(len(tokens), call.params.max_tokens)
        request_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        outcome = Outcome()
        pieces = self.engine.generate(tokens, call.cache_salt, call.params, outcome)
        if call.stream:
            self._chat_stream(pieces, outcome, call, request_id, created)
            return
        try:
            text = "".join(pieces)
        finally:
            pieces.close()
        self._send_json(200, {
            "id": request_id, "object": "chat.completion", "created": created, "model": self.engine.served_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "logprobs": None, "finish_reason": outcome.finish_reason}],
            "usage": _usage(outcome),
        })

    def _chat_stream(self, pieces, outcome: Outcome, call: ChatCall, request_id: str, created: int):
        base = {"id": request_id, "object": "chat.completion.chunk", "created": created,
                "model": self.engine.served_name}

        def chunk(delta: dict, finish_reason=None) -> dict:
            return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish_reason}]}

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._sse(chunk({"role": "assistant", "content": ""}))
            for text in pieces:
                self._sse(chunk({"content": text}))
            self._sse(chunk({}, outcome.finish_reason))
            if call.include_usage:
                self._sse({**base, "choices": [], "usage": _usage(outcome)})
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True  # the client went away: stop generating, free the model
        except Exception as exc:
            logger.exception("stream failed")
            self.close_connection = True
            try:
                self._sse({"error": {"message": f"generation failed: {exc}", "type": "internal_error",
                                     "param": None, "code": 500}})
            except OSError:
                pass
        finally:
            pieces.close()

    def _tokenize(self):
        body = self._read_json()
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        if "messages" in body:
            flag = body.get("add_generation_prompt", True)
            if not isinstance(flag, bool):
                raise BadRequest("'add_generation_prompt' must be a boolean", param="add_generation_prompt")
            tokens = self.engine.tokenize_chat(_messages(body["messages"]), add_generation_prompt=flag)
        elif isinstance(body.get("prompt"), str):
            tokens = self.engine.tokenize_text(body["prompt"])
        else:
            raise BadRequest("give 'messages' or a string 'prompt'", param="prompt")
        self._send_json(200, {"count": len(tokens), "max_model_len": self.engine.n_ctx, "tokens": tokens})

    # -------------------------------------------------------------- I/O

    def _read_json(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise BadRequest("chunked request bodies are not supported; send Content-Length", status=411)
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            raise BadRequest("Content-Length is required", status=411) from None
        if length < 0:
            raise BadRequest("invalid Content-Length")
        if length > MAX_REQUEST_BYTES:
            self.close_connection = True  # the unread body makes the connection unusable
            raise BadRequest(f"request body larger than {MAX_REQUEST_BYTES} bytes", status=413)
        raw = self.rfile.read(length)
        if len(raw) != length:
            self.close_connection = True
            raise BadRequest("request body shorter than Content-Length")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadRequest(f"invalid JSON: {exc}") from exc

    def send_response(self, code, message=None):
        path = self._path() if hasattr(self, "path") else "other"
        label = path if path in GET_PATHS + POST_PATHS else "other"
        with self.engine.stats.lock:
            self.engine.stats.http[(label, int(code))] += 1
        super().send_response(code, message)

    def _send(self, status: int, payload: bytes, content_type: str):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, status: int, data: dict):
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json")

    def _send_error(self, exc: BadRequest):
        try:
            self._send_json(exc.status, exc.body())
        except OSError:
            self.close_connection = True

    def _write_chunk(self, data: bytes):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _sse(self, event: dict):
        self._write_chunk(b"data: " + json.dumps(event, ensure_ascii=False).encode("utf-8") + b"\n\n")

    def log_message(self, format, *args):
        quiet = hasattr(self, "path") and self._path() in ("/health", "/metrics")
        level = logging.DEBUG if quiet else logging.INFO
        logger.log(level, "%s %s", self.address_string(), format % args)


def _usage(outcome: Outcome) -> dict:
    return {
        "prompt_tokens": outcome.prompt_tokens,
        "completion_tokens": outcome.completion_tokens,
        "total_tokens": outcome.prompt_tokens + outcome.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": outcome.cached_tokens},
    }


class ModelHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], engine: ModelEngine):
        self.engine = engine
        super().__init__(address, Handler)
