"""Keeping the search index in step with the knowledge base: the nightly re-embed and the re-index
right after a change, each run in ``core.jobs.job_run`` (lock + ``JobRun`` record). When articles
become searchable in their new form, ``index_refreshed`` tells the layers above."""
from __future__ import annotations

import logging

from core.jobs import JobContext, job_run, last_success
from core.models import JobRun
from core.redis_client import get_redis
from ingestion.models import ArticleVersion
from retrieval.embeddings import Embedder, get_embedder
from retrieval.generations import embedder_for
from retrieval.models import IndexGeneration
from retrieval.services import SyncReport, active_generation, generation_for, index_sync
from retrieval.signals import index_refreshed

log = logging.getLogger(__name__)

REEMBED_JOB = "reembed_changed"


def _sync_target(embedder: Embedder | None) -> tuple[IndexGeneration, Embedder]:
    """The generation to keep in step and the embedder to fill it with: the active generation and
    its own model (refusing, rather than mixing, when this process lacks that model), or the
    given embedder's generation."""
    if embedder is not None:
        return generation_for(embedder), embedder
    generation = active_generation()
    if generation is None:
        embedder = get_embedder()
        return generation_for(embedder), embedder
    return generation, embedder_for(generation)


def _record_sync(ctx: JobContext, report: SyncReport) -> None:
    ctx.record(scanned=report.scanned, changed=report.changed, embedded=report.embedded,
               cache_hits=report.cache_hits, removed=report.removed)
    ctx.run.detail["generation_id"] = report.generation_id


def reembed_changed(*, tenant_id: int | None = None, embedder: Embedder | None = None, task_id: str = "",
                    attempt: int = 1) -> JobRun:
    """The nightly re-embed: vectors for new and edited chunks, none for unchanged ones, stale ones removed.

    Change detection is by content: a current chunk without a vector in the generation is
    new or edited (edits create new chunk rows), a vector whose chunk is no longer current
    is stale. New chunk texts go through the embedding cache, so a chunk whose text did not
    change (an article edited elsewhere) never reaches the model. Batches commit one at a
    time, so a run that fails halfway leaves every stored vector valid and the next attempt
    only does what is left.
    """
    lock_name = REEMBED_JOB if tenant_id is None else f"{REEMBED_JOB}:tenant:{tenant_id}"
    with job_run(REEMBED_JOB, task_id=task_id, attempt=attempt, lock_name=lock_name) as ctx:
        generation, embedder = _sync_target(embedder)
        since = last_success(REEMBED_JOB)
        versions = ArticleVersion.objects.all()
        if since is not None:
            versions = versions.filter(created_at__gte=since.started_at)
        if tenant_id is not None:
            versions = versions.filter(article__tenant_id=tenant_id)
        ctx.run.detail.update({"tenant_id": tenant_id, "article_versions_since_last_success": versions.count(),
                               "last_success_id": since.pk if since else None, "model": embedder.name,
                               "model_version": embedder.version})
        report = index_sync(generation, embedder, tenant_id=tenant_id, progress=ctx.progress)
        _record_sync(ctx, report)
        # the first run ever builds the index: no answer can have been cached from it before
        changed_articles = [] if since is None else list(
            versions.filter(article__status="active").values_list("article_id", flat=True).distinct())
        log.info("reembed_changed: scanned=%d changed=%d embedded=%d cache_hits=%d removed=%d",
                 report.scanned, report.changed, report.embedded, report.cache_hits, report.removed)
    _announce_indexed(changed_articles, "reembed")
    return ctx.run


# --------------------------------------------------------------------------- re-index right after a change

INDEX_REFRESH_JOB = "index_refresh"


def _pending_key(tenant_id: int) -> str:
    return f"jobs:index_refresh:pending:{tenant_id}"


def index_refresh_mark(tenant_id: int, article_pk: int) -> bool:
    """Note a changed article; True when it is the tenant's first pending change (queue a refresh).
    Later changes ride along with the queued refresh, so an import of many articles costs one run."""
    pipe = get_redis().pipeline(transaction=True)
    pipe.sadd(_pending_key(tenant_id), article_pk)
    pipe.scard(_pending_key(tenant_id))
    pipe.expire(_pending_key(tenant_id), 86400)
    return pipe.execute()[1] == 1


def index_refresh_unmark(tenant_id: int) -> None:
    """The refresh could not be queued: forget the marker so the next change tries again."""
    get_redis().delete(_pending_key(tenant_id))


def index_refresh(tenant_id: int, *, task_id: str = "", attempt: int = 1) -> JobRun:
    """Bring one tenant's vectors in step right after a change (the nightly job is the safety net),
    then announce the changed articles (``index_refreshed``) while still holding the run: the caches
    above drop what they hold of the articles' old form, and a failure there puts the articles back
    in the pending set for the retry."""
    r = get_redis()
    # A refresh of the tenant already running: the task retries shortly (no skipped run recorded).
    with job_run(INDEX_REFRESH_JOB, task_id=task_id, attempt=attempt,
                 lock_name=f"{INDEX_REFRESH_JOB}:tenant:{tenant_id}", record_skip=False) as ctx:
        # Taken before the sync: a change from now on queues a new refresh.
        article_pks = sorted(int(pk) for pk in r.spop(_pending_key(tenant_id), 100000) or [])
        try:
            generation, embedder = _sync_target(None)
            report = index_sync(generation, embedder, tenant_id=tenant_id, progress=ctx.progress)
            _record_sync(ctx, report)
            ctx.run.detail.update({"tenant_id": tenant_id, "articles": article_pks[:200]})
            _announce_indexed(article_pks, "reindex")
        except BaseException:
            if article_pks:
                r.sadd(_pending_key(tenant_id), *article_pks)
            raise
    return ctx.run


def _announce_indexed(article_pks, trigger: str) -> None:
    """Tell the layers above that these articles are searchable in their new form (receivers run here,
    synchronously: an error in one fails the job, which retries)."""
    if article_pks:
        index_refreshed.send(sender=JobRun, article_pks=sorted(set(article_pks)), trigger=trigger)
