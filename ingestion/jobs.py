"""Background jobs over the knowledge base, each recorded as a ``JobRun``.

``job_run`` is the frame every job shares: it takes the job's Redis lock (two runs
of one job never overlap, on any number of hosts), records the run with progress
while it works, and records the outcome (or the error, then re-raises so the
Celery task can retry). The jobs themselves are ordinary services, testable
without a worker.
"""
from __future__ import annotations

import contextlib
import logging
import time

from django.utils import timezone

from ingestion.models import ArticleVersion, JobRun
from ingestion.signals import index_refreshed
from retrieval.embeddings import Embedder, get_embedder
from retrieval.generations import embedder_for
from retrieval.models import IndexGeneration
from retrieval.services import SyncReport, active_generation, generation_for, index_sync
from supportbot.locks import LockHeld, job_lock
from supportbot.redis_client import get_redis

log = logging.getLogger(__name__)

REEMBED_JOB = "reembed_changed"


class JobContext:
    """What a running job sees: its row, and a progress callback that also keeps its lock alive."""

    def __init__(self, run: JobRun, lock):
        self.run = run
        self._lock = lock
        self._last_write = 0.0

    def progress(self, done: int, total: int) -> None:
        self._lock.extend()
        now = time.monotonic()
        if now - self._last_write >= 0.5 or done >= total:  # the admin refreshes by hand; no need for more
            self._last_write = now
            JobRun.objects.filter(pk=self.run.pk).update(progress_done=done, progress_total=total)
            self.run.progress_done, self.run.progress_total = done, total

    def record(self, **fields) -> None:
        for name, value in fields.items():
            setattr(self.run, name, value)


@contextlib.contextmanager
def job_run(job: str, *, task_id: str = "", attempt: int = 1, lock_name: str | None = None,
            record_skip: bool = True):
    """Run a job under its lock and record it; yields a ``JobContext`` or raises ``LockHeld``
    (after recording a skipped run, unless the caller will simply try again) when another run
    is in progress."""
    started = time.monotonic()
    lock_name = lock_name or job
    with contextlib.ExitStack() as stack:
        try:
            lock = stack.enter_context(job_lock(lock_name))
        except LockHeld as exc:
            if record_skip:
                JobRun.objects.create(job=job, task_id=task_id, attempt=attempt, status=JobRun.Status.SKIPPED,
                                      finished_at=timezone.now(), error=str(exc))
            raise
        # Holding the lock proves no other run under it is alive: a run still marked "running"
        # died with its worker (killed, host lost) and never recorded its end.
        JobRun.objects.filter(job=job, status=JobRun.Status.RUNNING, detail__lock=lock_name).update(
            status=JobRun.Status.FAILED, finished_at=timezone.now(), error="worker lost: the run never finished")
        run = JobRun.objects.create(job=job, task_id=task_id, attempt=attempt, detail={"lock": lock_name})
        ctx = JobContext(run, lock)
        try:
            yield ctx
        except BaseException as exc:
            run.status, run.error = JobRun.Status.FAILED, f"{type(exc).__name__}: {exc}"[:5000]
            raise
        else:
            run.status = JobRun.Status.SUCCEEDED
        finally:
            run.finished_at = timezone.now()
            run.duration_s = time.monotonic() - started
            run.save()


def last_success(job: str) -> JobRun | None:
    return JobRun.objects.filter(job=job, status=JobRun.Status.SUCCEEDED).order_by("-started_at").first()


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
    then drop search results cached meanwhile that may hold the changed articles' old chunks."""
    from caching.models import PurgeRecord
    from caching.purge import purge_citing

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
            for pk in article_pks:
                purge_citing(pk, None, PurgeRecord.Trigger.REINDEX, layers=("search",))
        except BaseException:
            if article_pks:
                r.sadd(_pending_key(tenant_id), *article_pks)
            raise
        ctx.run.detail.update({"tenant_id": tenant_id, "articles": article_pks[:200]})
    _announce_indexed(article_pks, "reindex")
    return ctx.run


def _announce_indexed(article_pks, trigger: str) -> None:
    """Tell the layers above that these articles are searchable in their new form."""
    if article_pks:
        index_refreshed.send(sender=JobRun, article_pks=sorted(set(article_pks)), trigger=trigger)
