"""The generation backend interface: one small contract, one file a backend.

A backend turns a :class:`ChatRequest` (OpenAI chat messages, the generation
parameters exactly as sent, and the tenant's cache salt) into text, either at
once (:meth:`GenerationBackend.complete`) or as a stream of text deltas
(:meth:`GenerationBackend.stream`). Every failure surfaces as a
:class:`GenerationError` whose ``reason`` says what went wrong, so the Ask
pipeline can tell the customer, record why, and cache nothing.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk as the model sees it: numbered [1], [2] ... in the prompt."""

    number: int  # 1-based number shown to the model as [1], [2] ...
    chunk_id: int
    article_id: str  # the article's external id (front-matter id)
    title: str
    url: str
    version: int  # article version number
    text: str
    similarity: float
    heading: str = ""  # the chunk's section ("Shipping times and costs — United Kingdom")


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict]  # OpenAI chat messages
    params: dict  # {"max_tokens", "temperature", "seed", ...} exactly as sent
    cache_salt: str  # per tenant, computed server side (see generation.salt)


@dataclass
class GenerationResult:
    text: str
    finish_reason: str  # "stop", "length", ...
    model: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None  # usage.prompt_tokens_details.cached_tokens; None when the server does not say
    ttft_ms: float | None  # time to first token; streams only
    total_ms: float


class GenerationError(Exception):
    """The model could not produce an answer.

    ``reason`` is one of :attr:`REASONS`:

    - ``timeout``: no complete answer within the configured time;
    - ``unavailable``: connection refused/reset, 5xx or 429 after the retries;
    - ``circuit_open``: recent calls failed, so this one failed fast without a request;
    - ``bad_response``: the server answered with something that is not a valid completion;
    - ``client_error``: the server rejected the request (4xx other than 429); never retried;
    - ``interrupted``: the stream broke off after it had started (server died mid-answer).
    """

    REASONS = ("timeout", "unavailable", "circuit_open", "bad_response", "client_error", "interrupted")

    def __init__(self, reason: str, message: str = "", *, status: int | None = None):
        if reason not in self.REASONS:
            raise ValueError(f"unknown generation error reason {reason!r}")
        self.reason = reason
        self.status = status
        super().__init__(f"{reason}: {message}" if message else reason)


class GenerationBackend(ABC):
    """Talks to one model server. Instances are shared per process (see ``get_backend``)."""

    name: str  # "vllm" | "embedded"
    model_id: str  # model name sent in requests
    model_revision: str  # pinned weights: VLLM_MODEL_REVISION, or a sha256 prefix of the GGUF file

    @abstractmethod
    def complete(self, request: ChatRequest) -> GenerationResult:
        """Return the whole answer; raise :class:`GenerationError` on failure."""

    @abstractmethod
    def stream(self, request: ChatRequest) -> Iterator[str | GenerationResult]:
        """Yield text deltas as they arrive, then exactly one GenerationResult last.

        Raises GenerationError (reason "interrupted") if the server dies mid-stream.
        Closing the iterator early (the customer went away) aborts the request.
        """

    async def astream(self, request: ChatRequest) -> AsyncIterator[str | GenerationResult]:
        """``stream`` for the event loop (the async server): the same items and errors, and closing
        it or cancelling its task aborts the request. A backend without an async client cannot
        offer it; the pipeline then runs ``stream`` in a thread."""
        raise NotImplementedError
        yield  # an async generator
