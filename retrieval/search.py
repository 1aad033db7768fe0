"""Filtered nearest-neighbour search over the active index generation."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from pgvector.django import CosineDistance

from retrieval.models import ChunkEmbedding, IndexGeneration


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
