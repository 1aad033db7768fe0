"""Filtered nearest-neighbour search over the active index generation."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from pgvector.django import CosineDistance

from retrieval.models import ChunkEmbedding, IndexGeneration
from supportbot.redis_client import RedisUnavailable, get_redis, redis_available, redis_failed


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    article_pk: int
    article_id: str  # external id
    title: str
    url: str
    version: int
    heading: str
    text: str
    similarity: float

    def to_dict(self) -> dict:
        return asdict(self)


def search_chunks(generation: IndexGeneration, tenant_id: int, locale: str, vector: np.ndarray, k: int) -> list[SearchHit]:
    """Top-k chunks of one tenant and locale by cosine similarity.

    The HNSW index is shared by all tenants; pgvector 0.8's iterative scan
    (``hnsw.iterative_scan``, set on every connection in settings) keeps scanning
    until k rows pass the tenant/locale filter."""
    rows = (ChunkEmbedding.objects
            .filter(generation=generation, tenant_id=tenant_id, locale=locale)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")
            .select_related("chunk__article_version", "article")[:k])
    return [
        SearchHit(
            chunk_id=r.chunk_id, article_pk=r.article_id, article_id=r.article.external_id,
            title=r.chunk.article_version.title, url=r.chunk.article_version.url,
            version=r.chunk.article_version.version, heading=r.chunk.heading, text=r.chunk.text,
            similarity=float(1.0 - r.distance),
        )
        for r in rows
    ]


def index_version(tenant_id: int) -> int:
    """Bumped whenever a tenant's vectors change, so results cached before a re-index
    (e.g. between a purge and the re-embedding of an edited article) are never read again."""
    if not redis_available():
        return 0
    try:
        return int(get_redis().get(f"idxv:{tenant_id}") or 0)
    except RedisUnavailable as exc:
        redis_failed(exc)
        return 0


def index_version_bump(tenant_ids) -> None:
    try:
        pipe = get_redis().pipeline(transaction=False)
        for tenant_id in set(tenant_ids):
            pipe.incr(f"idxv:{tenant_id}")
        pipe.execute()
    except RedisUnavailable as exc:
        redis_failed(exc)  # the search cache TTL bounds what a missed bump can cost
