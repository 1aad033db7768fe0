"""The judge's build as a background job (docs/first-run.md): ``modelbuild.services.judge_build`` recorded
as a JobRun under its lock, the status the banner and the dashboard show, and the Celery task on a real
worker serving the ``modelbuild`` queue."""
from __future__ import annotations

import shutil

import pytest

from caching import guards
from core.locks import LockHeld, job_lock
from core.models import JobRun
from modelbuild import services
from modelbuild.services import JUDGE_BUILD_JOB
from modelbuild.tasks import judge_build
from supportbot import run
from tests.jobs.conftest import wait_until


@pytest.mark.django_db
def test_a_built_judge_is_ready_and_its_build_is_a_job_run_that_builds_nothing(judge_built, settings):
    assert not services.judge_build_needed()
    run_ = services.judge_build()
    assert run_.status == JobRun.Status.SUCCEEDED and run_.job == JUDGE_BUILD_JOB
    meta = guards.LearnedJudge(judge_built).meta
    assert run_.detail["version"] == judge_built.name and run_.detail["built"] is False
    assert run_.detail["recipe"] == settings.SEMANTIC_JUDGE_RECIPE
    assert (run_.detail["model"], run_.detail["threshold"]) == (meta["model"], meta["threshold"])
    (status,) = services.builds_status()
    assert status.state == "ready" and status.since is not None and judge_built.name in status.detail


@pytest.mark.django_db
def test_a_missing_judge_says_missing_building_or_failed(empty_root, judge_built):
    version = judge_built.name
    assert services.judge_build_needed()
    assert services.builds_status()[0].state == "missing"
    building = JobRun.objects.create(job=JUDGE_BUILD_JOB, detail={"version": version, "note": "cross-encoder step 100/1146"})
    status = services.builds_status()[0]
    assert status.state == "building" and "cross-encoder step 100/1146" in status.detail
    assert not services.judge_build_needed()  # one build at a time
    building.status, building.error = JobRun.Status.FAILED, "MemoryError: out of memory"
    building.save()
    status = services.builds_status()[0]
    assert status.state == "failed" and "MemoryError" in status.detail and services.judge_build_needed()
    shutil.copytree(judge_built, empty_root / version)
    assert services.builds_status()[0].state == "ready" and not services.judge_build_needed()


@pytest.mark.django_db
def test_two_builds_never_overlap():
    with job_lock(JUDGE_BUILD_JOB):
        with pytest.raises(LockHeld):
            services.judge_build()
    assert JobRun.objects.filter(job=JUDGE_BUILD_JOB, status=JobRun.Status.SKIPPED).count() == 1


@pytest.mark.django_db
def test_the_make_run_banner_queues_a_missing_judge_and_says_so(empty_root, settings, monkeypatch):
    queued = []
    monkeypatch.setattr(judge_build, "delay", lambda: queued.append(1))
    banner = run.builds_banner(settings, "extractive")
    assert queued == [1] and "Semantic judge: queued now, builds in the background" in banner
    settings.JUDGE_BUILD_ON_START = False
    assert "Semantic judge: missing" in run.builds_banner(settings, "extractive") and queued == [1]


@pytest.mark.django_db
def test_the_make_run_banner_says_when_the_judge_became_ready(settings, monkeypatch):
    monkeypatch.setattr(judge_build, "delay", lambda: pytest.fail("a built judge is not built again"))
    assert "Semantic judge: ready since " in run.builds_banner(settings, "extractive")
    assert run.builds_became_ready({"semantic judge"}) == set()


@pytest.mark.django_db(transaction=True)
def test_the_build_task_runs_on_a_worker_serving_the_modelbuild_queue(demo, celery_worker, judge_built):
    judge_build.delay()
    done = wait_until(lambda: JobRun.objects.filter(job=JUDGE_BUILD_JOB, status=JobRun.Status.SUCCEEDED).first(),
                      timeout=120)
    assert done.task_id and done.detail["version"] == judge_built.name and done.detail["built"] is False
