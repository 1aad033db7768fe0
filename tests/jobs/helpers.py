"""Helpers of the job tests: knowledge-base text no run has embedded before, and cached answers
in all three layers (offered through the normal admission, search results through retrieval)."""
from __future__ import annotations

import json
import uuid

from django.conf import settings

from caching.layers.search import search_key
from caching.models import SemanticEntry
from core.redis_client import get_redis
from ingestion.models import Article, Chunk
from ingestion.parsing import ParsedArticle
from ingestion.services import article_upsert
from retrieval.models import ChunkEmbedding
from retrieval.search import index_version
from retrieval.services import active_generation, active_generation_forget
from supportbot import pipeline
from tests.caching.helpers import offer

# The test Celery workers started and not yet stopped (``conftest.start_worker_process``). Kept here: the
# test modules import conftest's helpers as ``tests.jobs.conftest``, a second copy of the module pytest
# loaded as ``conftest``, so state kept in conftest.py would be two lists.
running_workers: list = []


def sections_body(n: int, token: str | None = None, *, changed: set[int] = frozenset()) -> str:
    """A markdown body of n sections whose text no earlier run has embedded (a fresh token), so the
    embedding cache cannot hide model calls. Sections in ``changed`` get different text."""
    token = token or uuid.uuid4().hex
    parts = []
    for i in range(n):
        extra = f" Revised wording {uuid.uuid4().hex}." if i in changed else ""
        parts.append(f"## Topic {i} of {token}\n\nParagraph about topic {i} ({token}): customers can read how "
                     f"step {i} works, what it costs and how long it takes.{extra}\n")
    return "\n".join(parts)


def kb_article(tenant, external_id: str, body: str) -> Article:
    parsed = ParsedArticle(external_id, external_id.replace("-", " ").title(), "en",
                           f"https://help.example/{tenant.slug}/en/{external_id}", body)
    return article_upsert(tenant, parsed)[0]


def current_chunk_ids(tenant) -> set[int]:
    return set(Chunk.objects.filter(article__tenant=tenant, is_current=True).values_list("pk", flat=True))


def indexed_chunk_ids(tenant, generation=None) -> set[int]:
    generation = generation or active_generation()
    return set(ChunkEmbedding.objects.filter(generation=generation, tenant=tenant).values_list("chunk_id", flat=True))


class CachedEverywhere:
    """One question answered from one article and cached in the exact, semantic and search layers."""

    def __init__(self, tenant, question: str, article: str):
        asker = pipeline.Asker(tenant, "en")
        self.offered = offer(asker, question, article=article)
        assert self.offered.admitted, [(d.layer, d.disposition, d.reason) for d in self.offered.layers]
        self.exact_key = self.offered.key
        self.article_pk = self.offered.citations[0]["article_pk"]
        state = pipeline.start(asker, question, streamed=False)
        pipeline.check_eligibility(state)
        active_generation_forget()  # read the active generation now, not a cached one
        pipeline.retrieve(state)
        self.search_key = search_key(state.normalized, tenant.pk, "en", settings.RETRIEVAL_TOP_K,
                                     active_generation().pk, index_version(tenant.pk))
        raw = get_redis().get(self.search_key)
        assert raw is not None, "retrieval stored no search results"
        self.search_article_pks = {h["article_pk"] for h in json.loads(raw)}

    def in_exact(self) -> bool:
        return bool(get_redis().exists(self.exact_key))

    def in_semantic(self) -> bool:
        return SemanticEntry.objects.filter(exact_key=self.exact_key, status=SemanticEntry.Status.ACTIVE).exists()

    def in_search(self) -> bool:
        return bool(get_redis().exists(self.search_key))

    def layers(self) -> dict[str, bool]:
        return {"exact": self.in_exact(), "semantic": self.in_semantic(), "search": self.in_search()}
