"""Keeping the vector index in step with the knowledge base.

The index holds one ``ChunkEmbedding`` per current chunk in the active generation.
``index_sync`` is the whole change detection: current chunks without a vector in
the generation are embedded (through the embedding cache, so unchanged text never
reaches the model), and vectors of chunks that are no longer current are removed.
(Full-text vectors live on the chunks themselves, written with them by ingestion; a
sync re-writes those built with another text-search configuration than the settings name.)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.localcache import LocalCache
from ingestion.models import Chunk
from ingestion.textsearch import search_vectors_refresh
from retrieval.embeddings import EmbedStats, Embedder, embed_texts, get_embedder
from retrieval.models import ChunkEmbedding, IndexGeneration
from retrieval.search import index_version_bump

BATCH = 256


def chunk_embedding_text(chunk: Chunk) -> str:
    """What gets embedded for a chunk: its heading path gives the passage its topic."""
    return f"{chunk.heading}\n{chunk.text}"


@dataclass
class SyncReport:
    generation_id: int = 0
    scanned: int = 0
    changed: int = 0
    embedded: int = 0  # texts that went through the model
    cache_hits: int = 0
    removed: int = 0
    duration_s: float = 0.0
    extra: dict = field(default_factory=dict)


def generation_for(embedder: Embedder, *, create_status: str = IndexGeneration.Status.ACTIVE) -> IndexGeneration:
    """The generation of this embedder's model + version; the first one becomes active."""
    gen = (IndexGeneration.objects.filter(model_name=embedder.name, model_version=embedder.version)
           .exclude(status=IndexGeneration.Status.RETIRED).order_by("-pk").first())
    if gen is not None:
        return gen
    with transaction.atomic():
        has_active = IndexGeneration.objects.select_for_update().filter(status=IndexGeneration.Status.ACTIVE).exists()
        status = IndexGeneration.Status.BUILDING if has_active else create_status
        return IndexGeneration.objects.create(
            model_name=embedder.name, model_version=embedder.version, dimensions=embedder.dimensions,
            status=status, activated_at=timezone.now() if status == IndexGeneration.Status.ACTIVE else None,
        )


def active_generation() -> IndexGeneration | None:
    return IndexGeneration.objects.filter(status=IndexGeneration.Status.ACTIVE).first()


_generation: LocalCache[IndexGeneration | None] = LocalCache("active generation", ttl_s=5.0, max_entries=1)


def active_generation_cached() -> IndexGeneration | None:
    """The active index generation, re-read at most every few seconds (the request path; a job
    reads ``active_generation``)."""
    return _generation.get("active", active_generation)


def active_generation_forget() -> None:
    """The next ``active_generation_cached`` reads the database (tests that switch generations)."""
    _generation.forget()


def index_sync(generation: IndexGeneration | None = None, embedder: Embedder | None = None,
               tenant_id: int | None = None, progress=None) -> SyncReport:
    """Embed current chunks missing from the generation; drop vectors of stale chunks."""
    started = time.monotonic()
    embedder = embedder or get_embedder()
    generation = generation or generation_for(embedder)
    if (generation.model_name, generation.model_version) != (embedder.name, embedder.version):
        raise ValueError(f"generation {generation.pk} is {generation.model_name}@{generation.model_version}, "
                         f"embedder is {embedder.name}@{embedder.version}")
    report = SyncReport(generation_id=generation.pk)
    # full-text vectors built with another text-search configuration than their locale's now (a settings change)
    report.extra["search_vectors_rewritten"] = search_vectors_refresh()
    current = Chunk.objects.filter(is_current=True)
    if tenant_id is not None:
        current = current.filter(article__tenant_id=tenant_id)
    report.scanned = current.count()
    stale = ChunkEmbedding.objects.filter(generation=generation).exclude(chunk__is_current=True)
    if tenant_id is not None:
        stale = stale.filter(tenant_id=tenant_id)
    touched = set(stale.values_list("tenant_id", flat=True).distinct())
    report.removed, _ = stale.delete()
    todo = (current.exclude(embeddings__generation=generation)
            .select_related("article").order_by("pk"))
    pending_ids = list(todo.values_list("pk", flat=True))
    report.changed = len(pending_ids)
    stats = EmbedStats()
    try:
        _embed_pending(pending_ids, generation, embedder, stats, touched, progress)
    finally:
        if touched and generation.status == IndexGeneration.Status.ACTIVE:
            index_version_bump(touched)
    report.embedded, report.cache_hits = stats.model_calls, stats.cache_hits
    report.duration_s = time.monotonic() - started
    return report


def _embed_pending(pending_ids, generation, embedder, stats, touched, progress) -> None:
    for start in range(0, len(pending_ids), BATCH):
        chunks = list(Chunk.objects.filter(pk__in=pending_ids[start:start + BATCH]).select_related("article"))
        vectors = embed_texts([chunk_embedding_text(c) for c in chunks], embedder=embedder, stats=stats)
        touched |= {c.article.tenant_id for c in chunks}
        rows = [ChunkEmbedding(generation=generation, chunk=c, article_id=c.article_id, tenant_id=c.article.tenant_id,
                               locale=c.article.locale, content_hash=c.content_hash, embedding=v)
                for c, v in zip(chunks, vectors)]
        try:
            with transaction.atomic():
                ChunkEmbedding.objects.bulk_create(rows, ignore_conflicts=True)
        except IntegrityError:
            # an article deleted while its chunks were embedded (a tenant erased, an article withdrawn): its vectors
            # are not wanted; the batch's others are stored (two benchmark runs sharing a database crashed here)
            alive = set(Chunk.objects.filter(pk__in=[r.chunk_id for r in rows]).values_list("pk", flat=True))
            with transaction.atomic():
                ChunkEmbedding.objects.bulk_create([r for r in rows if r.chunk_id in alive], ignore_conflicts=True)
        if progress:
            progress(min(start + BATCH, len(pending_ids)), len(pending_ids))
