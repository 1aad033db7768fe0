"""The frame every background job shares, recorded as a ``JobRun``.

``job_run`` takes the job's Redis lock (two runs of one job never overlap, on any number of
hosts), records the run with progress while it works, and records the outcome (or the error,
then re-raises so the Celery task can retry). The jobs themselves are ordinary services of
their apps, testable without a worker.
"""
from __future__ import annotations

import contextlib
import time

from django.utils import timezone

from core.locks import LockHeld, job_lock
from core.models import JobRun


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

    def note(self, message: str) -> None:
        """A job that counts no items says where it is in words (``detail["note"]``); keeps its lock alive."""
        self._lock.extend()
        self.run.detail["note"] = message[:500]
        now = time.monotonic()
        if now - self._last_write >= 0.5:
            self._last_write = now
            JobRun.objects.filter(pk=self.run.pk).update(detail=self.run.detail)

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
