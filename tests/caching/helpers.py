"""Helpers shared by the answer-cache tests: a real article to cite, an answer offered through
the normal admission (``pipeline.offer_answer``) and a lookup exactly as the views do it."""
from __future__ import annotations

from caching.models import CacheDecision
from ingestion.models import Article, Chunk
from supportbot import pipeline
from supportbot.generation.base import Passage
from supportbot.models import AskEvent


def cited_passage(tenant, external_id: str = "return-policy", locale: str = "en") -> tuple[Passage, int]:
    """Passage [1] built from the current first chunk of one of the tenant's articles, and the article pk."""
    article = Article.objects.get(tenant=tenant, locale=locale, external_id=external_id,
                                  status=Article.Status.ACTIVE)
    chunk = Chunk.objects.filter(article=article, is_current=True).order_by("ordinal").first()
    return Passage(1, chunk.pk, article.external_id, article.title, article.url, article.version, chunk.text,
                   1.0), article.pk


def offer(asker: pipeline.Asker, question: str, answer: str | None = None, *, article: str = "return-policy",
          **kwargs) -> pipeline.AskState:
    """Offer a synthetic complete answer citing ``article`` to the normal admission."""
    passage, article_pk = cited_passage(asker.tenant, article, asker.locale)
    text = answer if answer is not None else f"Synthetic verified answer to: {question} [1]"
    return pipeline.offer_answer(asker, question, text, [passage], {passage.chunk_id: article_pk}, **kwargs)


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
