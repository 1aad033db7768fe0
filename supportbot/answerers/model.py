"""The generative answerer: the static-first prompt, the generation backend (vLLM, or the
embedded CPU model) and the citations read back from the model's text."""
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

from caching.answer_checks import Evidence, Refusal
from generation import prompt, salt
from generation.base import ChatRequest, GenerationBackend, GenerationError, GenerationResult
from generation.citations import parse_answer
from generation.client import get_backend
from supportbot.answerers.base import Answer, AnswerRequest, Answerer, AnswererSpec


class ModelAnswerer(Answerer):
    name = "model"

    def spec(self) -> AnswererSpec:
        backend = get_backend()
        return AnswererSpec(model=backend.model_id, model_revision=backend.model_revision,
                            prompt_version=prompt.PROMPT_VERSION, params=prompt.generation_params())

    def chat_request(self, request: AnswerRequest) -> ChatRequest:
        return prompt.build_chat_request(request.tenant_slug, request.tenant_prompt, request.passages,
                                         request.question, assist_answer=request.assist_answer,
                                         history=request.history)

    def stream(self, request: AnswerRequest) -> Iterator[str | Answer]:
        result = None
        for item in get_backend().stream(self.chat_request(request)):
            if isinstance(item, GenerationResult):
                result = item
            elif item:
                yield item
        yield self.answer(result, request)

    async def astream(self, request: AnswerRequest) -> AsyncIterator[str | Answer]:
        """The model's stream as a coroutine (``GenerationBackend.astream``): a waiting answer holds
        no thread, and closing this iterator closes the HTTP stream to the model server."""
        backend = get_backend()
        if type(backend).astream is GenerationBackend.astream:  # no async client: the sync stream in a thread
            async for item in super().astream(request):
                yield item
            return
        result = None
        async with contextlib.aclosing(backend.astream(self.chat_request(request))) as items:
            async for item in items:
                if isinstance(item, GenerationResult):
                    result = item
                elif item:
                    yield item
        yield self.answer(result, request)

    def answer(self, result: GenerationResult, request: AnswerRequest) -> Answer:
        """The model's whole text as an Answer: its citations, or not covered."""
        parsed = parse_answer(result.text, request.passages)
        if parsed.not_covered:
            return Answer(text="", result=result, not_covered=True, reason="the model found no answer in the passages")
        if not parsed.citations:  # nothing in the answer comes from a passage: it is not ours to give
            return Answer(text="", result=result, not_covered=True, reason="the answer cites no passage")
        return Answer(text=parsed.text, citations=parsed.citations, result=result,
                      cited_explicitly=parsed.cited_explicitly)

    def verify(self, evidence: Evidence) -> Refusal | None:
        """Admission's model check (``ADMISSION_MODEL_CHECK``): the model reads the cited passages
        and the answer and says whether every statement is supported. Meant for a capable model
        (vLLM); a failed call refuses admission, it never admits."""
        request = ChatRequest(
            messages=[{"role": "system", "content": VERIFY_PROMPT},
                      {"role": "user", "content": f"Passages:\n{evidence.passages_text}\n\nQuestion: "
                                                  f"{evidence.question}\n\nAnswer: {evidence.answer}"}],
            params={**prompt.generation_params(), "max_tokens": 4, "temperature": 0.0},
            cache_salt=salt.cache_salt(evidence.tenant_slug) if evidence.tenant_slug else "",
        )
        try:
            verdict = get_backend().complete(request).text.strip().upper()
        except GenerationError as exc:
            return Refusal("model_check", f"the check failed: {exc.reason}")
        if verdict.startswith("SUPPORTED"):
            return None
        return Refusal("model_check", f"the model says {verdict[:20] or 'nothing'}")


VERIFY_PROMPT = ("You check answers of a help-centre assistant. Reply with exactly one word: SUPPORTED if the "
                 "passages state every fact in the answer and the answer answers the question, else UNSUPPORTED.")
