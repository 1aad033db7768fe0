"""Embedding-model upgrades: build a new index generation beside the active one, switch atomically.

A generation holds the vectors of exactly one model + version, and search reads only
the active one, so vectors of two models are never compared. An upgrade:

1. ``generation_build``: the new model's generation is created with status *building*
   and filled in the background (through the embedding cache, whose keys carry model
   and version, so no old vector can be reused). Queries keep using the active one.
2. ``generation_switch``: a last catch-up sync (articles edited during the build), then
   one transaction flips old active -> retired and new -> active; the partial unique
   index guarantees there is never a moment with two active generations.
3. ``generation_drop``: the retired generation's vectors are deleted a grace period
   later (web processes re-read the active generation every few seconds).

A query vector must come from the model of the generation it searches: ``embedder_for``
returns that model, or refuses.
"""
from __future__ import annotations

import logging
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from core.jobs import job_run
from core.models import JobRun
from ingestion.models import Chunk
from retrieval.embeddings import Embedder, get_embedder
from retrieval.models import ChunkEmbedding, IndexGeneration
from retrieval.services import SyncReport, active_generation, active_generation_cached, generation_for, index_sync
from retrieval.signals import generation_switched

log = logging.getLogger(__name__)

_embedders: dict[tuple[str, str], Embedder] = {}


class GenerationMismatch(RuntimeError):
    """No embedder of this process matches the generation's model and version."""


class GenerationIncomplete(RuntimeError):
    """The building generation still lacks vectors for some current chunks."""


def embedder_register(embedder: Embedder) -> Embedder:
    _embedders[(embedder.name, embedder.version)] = embedder
    return embedder


def embedder_load(model_dir: str | Path, name: str) -> Embedder:
    """An embedder for another model directory (an upgrade's target), registered for ``embedder_for``."""
    embedder = Embedder(Path(model_dir), name)
    return _embedders.setdefault((embedder.name, embedder.version), embedder)


def embedder_for(generation: IndexGeneration) -> Embedder:
    """The embedder whose vectors are comparable with this generation's; never another model's."""
    default = get_embedder()
    wanted = (generation.model_name, generation.model_version)
    if (default.name, default.version) == wanted:
        return default
    try:
        return _embedders[wanted]
    except KeyError:
        raise GenerationMismatch(
            f"generation {generation.pk} is {wanted[0]}@{wanted[1]}; this process embeds with "
            f"{default.name}@{default.version}") from None


def query_embedder(*, cached: bool = False) -> Embedder:
    """The embedder for query vectors: the active generation's model, never another one
    (``cached``: the generation as the request path sees it, re-read every few seconds)."""
    generation = active_generation_cached() if cached else active_generation()
    return embedder_for(generation) if generation is not None else get_embedder()


def generation_build(embedder: Embedder, *, progress=None) -> tuple[IndexGeneration, SyncReport]:
    """Create (or resume) the embedder's generation and fill it; it stays *building* while another is active."""
    generation = generation_for(embedder, create_status=IndexGeneration.Status.BUILDING)
    report = index_sync(generation, embedder, progress=progress)
    log.info("generation %s built: embedded=%d cache_hits=%d", generation, report.embedded, report.cache_hits)
    return generation, report


def generation_switch(generation: IndexGeneration, embedder: Embedder) -> IndexGeneration | None:
    """Make a built generation the active one in one transaction; returns the generation it replaced.

    A catch-up sync first embeds what changed during the build; the switch refuses if
    anything is still missing (a concurrent edit: the caller retries)."""
    index_sync(generation, embedder)
    with transaction.atomic():
        generations = {g.pk: g for g in IndexGeneration.objects.select_for_update()
                       .filter(status__in=[IndexGeneration.Status.ACTIVE, IndexGeneration.Status.BUILDING])}
        target = generations.get(generation.pk)
        if target is None:
            raise ValueError(f"generation {generation.pk} is retired")
        if target.status == IndexGeneration.Status.ACTIVE:
            return None
        missing = Chunk.objects.filter(is_current=True).exclude(embeddings__generation=target).count()
        if missing:
            raise GenerationIncomplete(f"generation {target.pk} lacks {missing} current chunks")
        previous = next((g for g in generations.values() if g.status == IndexGeneration.Status.ACTIVE), None)
        if previous is not None:
            previous.status = IndexGeneration.Status.RETIRED
            previous.save(update_fields=["status"])
        target.status, target.activated_at = IndexGeneration.Status.ACTIVE, timezone.now()
        target.save(update_fields=["status", "activated_at"])
    generation.refresh_from_db()
    log.info("generation switch: %s -> %s", previous, target)
    return previous


def generation_drop(generation_id: int) -> int:
    """Delete a retired generation's vectors (and the row); refuses the active or a building one."""
    generation = IndexGeneration.objects.filter(pk=generation_id).first()
    if generation is None:
        return 0
    if generation.status != IndexGeneration.Status.RETIRED:
        raise ValueError(f"generation {generation_id} is {generation.status}; only retired ones are dropped")
    removed, _ = ChunkEmbedding.objects.filter(generation=generation).delete()
    generation.delete()
    return removed


def generation_upgrade(embedder: Embedder, *, task_id: str = "", attempt: int = 1) -> JobRun:
    """The whole upgrade as one recorded job: build, switch, and announce the switch
    (``generation_switched``: the semantic cache retires the old model's entries). The task that ran
    it drops the old vectors after the grace period (``detail["previous_generation_id"]``)."""
    embedder_register(embedder)
    with job_run("generation_upgrade", task_id=task_id, attempt=attempt) as ctx:
        generation, report = generation_build(embedder, progress=ctx.progress)
        ctx.record(scanned=report.scanned, changed=report.changed, embedded=report.embedded,
                   cache_hits=report.cache_hits, removed=report.removed)
        previous = generation_switch(generation, embedder)
        responses = generation_switched.send(
            sender=IndexGeneration, generation_id=generation.pk, model=embedder.name,
            model_version=embedder.version, previous_generation_id=previous.pk if previous else None)
        ctx.run.detail.update({"generation_id": generation.pk, "model": embedder.name,
                               "model_version": embedder.version,
                               "previous_generation_id": previous.pk if previous else None,
                               # what the receivers retired (each returns a count)
                               "semantic_entries_retired": sum(r for _, r in responses if isinstance(r, int))})
    return ctx.run
