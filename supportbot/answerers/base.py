"""The answerer interface: one small contract, one file a backend.

An answerer gets the question and the retrieved passages (:class:`AnswerRequest`) and
streams the answer: text deltas as they are written, then exactly one :class:`Answer`
last, which says which passages the text cites, or that the passages do not cover the
question. Everything that shapes its answers is in its :class:`AnswererSpec`, which the
pipeline puts in the answer spec, so answers of different answerers (or of one answerer
under different settings) never share a cache entry. A failure of the model behind an
answerer surfaces as ``GenerationError``, as from a generation backend.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from generation.base import GenerationResult, Passage
from generation.prompt import TenantPrompt
from supportbot.serving import blocking

ANSWERERS = ("extractive", "model")


@dataclass(frozen=True)
class AnswererSpec:
    """What the answer spec records of an answerer: who writes the text and under which rules."""

    model: str  # model name (the generative path), or "extractive"
    model_revision: str
    prompt_version: str  # the prompt templates' hash, or the extraction rules' version
    params: dict  # generation parameters exactly as sent, or the extraction's budget and floors


@dataclass(frozen=True)
class AnswerRequest:
    tenant_slug: str
    tenant_prompt: TenantPrompt
    passages: list[Passage]  # numbered 1..n in retrieval order
    question: str
    question_vector: np.ndarray | None = None  # the question's embedding, when the pipeline has it
    embed: Callable[[list[str]], np.ndarray] | None = None  # the query embedder (through the embedding cache)
    assist_answer: str | None = None  # a near semantic hit given as context (assist mode)
    history: tuple = ()  # earlier turns of the conversation, (role, content) pairs, oldest first


@dataclass
class Answer:
    text: str
    citations: list[Passage] = field(default_factory=list)  # passages the text comes from, in order of first use
    result: GenerationResult | None = None
    not_covered: bool = False
    reason: str = ""  # why not covered
    cited_explicitly: bool = False  # the text carries its own [n] markers


class Answerer(ABC):
    """Turns passages into an answer. Instances are shared per process (see ``get_answerer``)."""

    name: str  # "extractive" | "model"

    @abstractmethod
    def spec(self) -> AnswererSpec:
        """Everything that shapes this answerer's answers (hashed into the cache keys)."""

    @abstractmethod
    def stream(self, request: AnswerRequest) -> Iterator[str | Answer]:
        """Yield text deltas, then exactly one :class:`Answer` last."""

    async def astream(self, request: AnswerRequest) -> AsyncIterator[str | Answer]:
        """``stream`` for the event loop (the async server). By default the sync stream runs in the
        pool of blocking steps (``supportbot.serving``): an answerer that writes from memory, as the
        extractive one does, is done in milliseconds. One that waits on a model overrides it."""
        for item in await blocking(lambda: list(self.stream(request))):
            yield item


def answerer_name() -> str:
    """``ASK_ANSWERER``, or by default ``model`` with a vLLM server configured and ``extractive`` without."""
    return settings.ASK_ANSWERER or ("model" if settings.VLLM_BASE_URL else "extractive")
