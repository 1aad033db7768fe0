"""Building the learned models as background jobs, each run recorded as a ``JobRun``.

``judge_build`` builds the judge this deployment serves (``SEMANTIC_JUDGE_RECIPE``) unless it is built:
``make run`` queues it when the app starts without one, so the chat page answers first and the
judge comes later. Until it is built the judge abstains and only a strict match serves; every
process picks the new artefact up by itself (``caching.guards.judge.learned_judge`` looks again
every ``SEMANTIC_JUDGE_RECHECK_S`` seconds). ``builds_status`` is what the ``make run`` banner and
the staff dashboard say about it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone as dt_timezone

from django.conf import settings

from caching.guards import judge_recipe
from caching.guards.judge import artefact_version, judge_root
from core.jobs import job_run
from core.models import JobRun
from modelbuild import judge_train

JUDGE_BUILD_JOB = "judge_build"


def judge_build(*, recipe: str = "", force: bool = False, task_id: str = "", attempt: int = 1) -> JobRun:
    """Build the judge of ``recipe`` (default: the one served) under ``SEMANTIC_JUDGE_DIR`` unless it is
    there; raises ``LockHeld`` when another build runs. About 20 minutes on 2 cores for the full recipe."""
    name = recipe or settings.SEMANTIC_JUDGE_RECIPE
    with job_run(JUDGE_BUILD_JOB, task_id=task_id, attempt=attempt) as ctx:
        version = artefact_version(name)
        path = judge_root() / version
        built_before = (path / "judge.json").exists() and not force
        ctx.run.detail.update({"recipe": name, "version": version, "built": not built_before})
        judge_train.ensure_artefact(judge_root(), recipe=judge_recipe.RECIPES[name], force=force, progress=ctx.note)
        meta = json.loads((path / "judge.json").read_text())
        ctx.run.detail.update({"model": meta["model"], "threshold": meta["threshold"],
                               "min_similarity": meta.get("min_similarity"), "note": "built"})
        ctx.record(scanned=int(meta.get("training_pairs", 0)))
    return ctx.run


def judge_build_needed() -> bool:
    """Whether to queue ``judge_build`` (``modelbuild.tasks.judge_build``): the served judge is not built
    and no build is running."""
    if (judge_root() / artefact_version() / "judge.json").exists():
        return False
    return not JobRun.objects.filter(job=JUDGE_BUILD_JOB, status=JobRun.Status.RUNNING).exists()


@dataclass(frozen=True)
class BuildStatus:
    """One thing the app builds after it starts: ``state`` is ready, building, failed or missing."""

    name: str
    state: str
    since: datetime | None  # ready: when it was built; building: when the build started; failed: when it stopped
    detail: str


def _judge_status() -> BuildStatus:
    version = artefact_version()
    path = judge_root() / version / "judge.json"
    runs = JobRun.objects.filter(job=JUDGE_BUILD_JOB, detail__version=version)
    if path.exists():
        built = datetime.fromtimestamp(path.stat().st_mtime, tz=dt_timezone.utc)
        return BuildStatus("semantic judge", "ready", built, f"{version}: the judge decides near matches")
    running = runs.filter(status=JobRun.Status.RUNNING).order_by("-started_at").first()
    if running is not None:
        return BuildStatus("semantic judge", "building", running.started_at,
                           f"{version}: {running.detail.get('note') or 'starting'}; until then only strict matches serve")
    failed = runs.filter(status=JobRun.Status.FAILED).order_by("-started_at").first()
    if failed is not None:
        return BuildStatus("semantic judge", "failed", failed.finished_at,
                           f"{version}: {failed.error[:200]}; only strict matches serve (manage.py train_judge)")
    return BuildStatus("semantic judge", "missing", None,
                       f"{version} is not built: only strict matches serve until it is (make run queues its build; "
                       "manage.py train_judge builds it by hand)")


def builds_status() -> list[BuildStatus]:
    """What the app builds after it starts, and where each stands."""
    return [_judge_status()]
