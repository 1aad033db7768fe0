"""Helpers shared by the answer-cache tests: a real article to cite, an answer offered through
the normal admission (``pipeline.offer_answer``) and a lookup exactly as the views do it."""
from __future__ import annotations

import contextlib
import json

from django.test import override_settings

from caching.models import AskEvent, CacheDecision
from generation.base import Passage
from ingestion.models import Article, Chunk
from supportbot import pipeline


def cited_passage(tenant, external_id: str = "return-policy", locale: str = "en",
                  containing: str = "") -> tuple[Passage, int]:
    """Passage [1] built from the first current chunk (containing the text) of one of the tenant's
    articles, and the article pk."""
    article = Article.objects.get(tenant=tenant, locale=locale, external_id=external_id,
                                  status=Article.Status.ACTIVE)
    chunk = (Chunk.objects.filter(article=article, is_current=True, text__contains=containing)
             .order_by("ordinal").first())
    return Passage(1, chunk.pk, article.external_id, article.title, article.url, article.version, chunk.text,
                   1.0), article.pk


def offer(asker: pipeline.Asker, question: str, answer: str | None = None, *, article: str = "return-policy",
          containing: str = "", checks: bool = False, **kwargs) -> pipeline.AskState:
    """Offer a synthetic complete answer citing ``article`` to the normal admission (its content
    checks only with ``checks=True``: elsewhere the text is a placeholder, not an answer)."""
    passage, article_pk = cited_passage(asker.tenant, article, asker.locale, containing)
    text = answer if answer is not None else f"Synthetic verified answer to: {question} [1]"
    return pipeline.offer_answer(asker, question, text, [passage], {passage.chunk_id: article_pk}, checks=checks,
                                 **kwargs)


def cached_lookup(asker: pipeline.Asker, question: str) -> tuple[pipeline.AskState, object]:
    """Guards, exact and semantic cache for ``question``, recorded as the views record it."""
    state = pipeline.start(asker, question, streamed=False)
    served = pipeline.lookup(state)
    if served is not None:
        pipeline.serve_cached(state, served)
    pipeline.record(state)
    return state, served


def decision(state: pipeline.AskState, layer: str) -> CacheDecision:
    """The recorded decision of one layer for an Ask (exactly one)."""
    event = AskEvent.objects.get(request_id=state.request_id)
    return event.decisions.get(layer=layer)


def decided(state: pipeline.AskState, layer: str):
    """The in-memory decision of one layer (the last one if the layer decided twice)."""
    found = [d for d in state.layers if d.layer == layer]
    assert found, f"no {layer} decision in {[(d.layer, d.disposition) for d in state.layers]}"
    return found[-1]


# --------------------------------------------------------------------------- a vLLM server that answers on cue
# The real CPU model takes 10-40 s an answer and cannot be told to time out, truncate or fail on cue; a
# vLLM server cannot run here. This one speaks the same wire protocol (OpenAI chat completions, SSE
# stream) with scripted answers, and keeps the request bodies it got so a test can read the prompt.

SSE = {"Content-Type": "text/event-stream"}


def sse_answer(text: str, finish_reason: str = "stop", *, prompt_tokens: int = 900, completion_tokens: int = 40) -> bytes:
    events = [
        {"model": "scripted-model", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"model": "scripted-model", "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]},
        {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                  "prompt_tokens_details": {"cached_tokens": 0}}},
    ]
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


@contextlib.contextmanager
def scripted_model(*responses):
    """Point the generation backend at a scripted vLLM server for the block.

    Each response is an answer text (streamed, finish reason ``stop``), a ``(text, finish_reason)``
    pair, or a raw ``(status, headers, body)`` triple."""
    from tests.generation.conftest import ScriptedServer

    script = []
    for r in responses:
        if isinstance(r, str):
            script.append((200, SSE, sse_answer(r)))
        elif len(r) == 2:
            script.append((200, SSE, sse_answer(*r)))
        else:
            script.append(r)
    server = ScriptedServer(script)
    try:
        with override_settings(VLLM_BASE_URL=server.url, VLLM_MODEL="scripted-model", VLLM_MODEL_REVISION="r1",
                               GENERATION_MAX_RETRIES=0):
            yield server
    finally:
        server.close()


def prompt_of(server, n: int = -1) -> str:
    """The user message of the n-th request the scripted server got."""
    messages = server.requests[n]["body"]["messages"]
    return next(m["content"] for m in messages if m["role"] == "user")


# --------------------------------------------------------------------------- the learned judge's contract
# The judge is built on another branch (issue 12, i12a). Until it lands this stands in for its
# contract only: the real semantic lookup runs, then its best candidate carries the judge's
# probability and version, as ``LayerResult`` declares them.

JUDGE = "judge-test"


def stand_in_judge(monkeypatch, abstain_locales=()) -> dict[str, float]:
    """Returns {new question: judge probability} for the test to fill; in ``abstain_locales`` the
    judge abstains (no probability, a miss)."""
    from caching.thresholds import invalidate_judge_thresholds

    scores: dict[str, float] = {}
    real = pipeline.semantic_layer.lookup

    def lookup(scope, question, vector, mode, **kwargs):
        result = real(scope, question, vector, mode, **kwargs)
        if result.candidate and scope.locale in abstain_locales:
            result.disposition, result.value, result.judge_version = "miss", None, JUDGE
            result.reason = f"judge abstains: trained on English questions, locale {scope.locale}"
        elif result.candidate and question in scores:
            result.judge_probability, result.judge_version = scores[question], JUDGE
        return result

    monkeypatch.setattr(pipeline.semantic_layer, "lookup", lookup)
    invalidate_judge_thresholds()
    return scores
