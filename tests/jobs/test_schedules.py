"""Beat schedules in the database (what staff see in the admin) and the hourly prefix-cache scrape."""
from __future__ import annotations

import json
import socket

import pytest
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from supportbot.celery import app
from supportbot.models import PrefixCacheSample
from supportbot.prefix_samples import prefix_cache_samples_record
from supportbot.schedules import DEFAULT_SCHEDULES, Schedule, schedules_setup

pytestmark = pytest.mark.django_db


def test_every_default_schedule_names_a_registered_task_routed_to_a_served_queue(settings):
    app.loader.import_default_modules()  # what a worker does at start: autodiscover every app's tasks
    for s in DEFAULT_SCHEDULES:
        assert s.task in app.tasks, s.task
        queue = app.amqp.router.route({}, s.task)["queue"].name
        assert queue in settings.CELERY_WORKER_QUEUES, (s.task, queue)
    assert app.amqp.router.route({}, "caching.tasks.purge_article")["queue"].name == "purge"
    assert app.amqp.router.route({}, "ingestion.tasks.reembed_changed")["queue"].name == "embedding"


def test_setup_creates_the_defaults_once_and_never_overwrites_staff_edits(capsys):
    PeriodicTask.objects.filter(name__in=[s.name for s in DEFAULT_SCHEDULES]).delete()
    call_command("setup_schedules")
    created = {t.name: t for t in PeriodicTask.objects.filter(name__in=[s.name for s in DEFAULT_SCHEDULES])}
    assert set(created) == {s.name for s in DEFAULT_SCHEDULES}  # rollups and retention are installed
    nightly = created["Nightly re-embed of changed chunks"]
    assert (nightly.task, nightly.crontab.hour, nightly.crontab.minute, nightly.enabled) == (
        "ingestion.tasks.reembed_changed", "2", "0", True)

    # staff move the nightly job and switch the scrape off in the admin
    nightly.crontab = type(nightly.crontab).objects.create(minute="15", hour="4")
    nightly.save()
    PeriodicTask.objects.filter(name="Hourly prefix-cache scrape").update(enabled=False)
    capsys.readouterr()
    call_command("setup_schedules")

    assert "kept: Nightly re-embed of changed chunks" in capsys.readouterr().out
    nightly.refresh_from_db()
    assert (nightly.crontab.hour, nightly.crontab.minute) == ("4", "15")
    assert not PeriodicTask.objects.get(name="Hourly prefix-cache scrape").enabled
    assert PeriodicTask.objects.filter(name__in=[s.name for s in DEFAULT_SCHEDULES]).count() == len(DEFAULT_SCHEDULES)


def test_a_schedule_whose_service_is_not_installed_waits_for_it():
    missing = Schedule("Needs a module that is not there", "supportbot.tasks.records_purge", {"minute": "1"},
                       "test", kwargs={"days": 30}, requires="supportbot.no_such_module")
    present = Schedule("Test retention with arguments", "supportbot.tasks.records_purge", {"minute": "1"},
                       "test", kwargs={"days": 30}, requires="supportbot.retention")
    result = schedules_setup((missing, present))
    assert result["unavailable"] == [missing.name] and result["created"] == [present.name]
    assert json.loads(PeriodicTask.objects.get(name=present.name).kwargs) == {"days": 30}


def test_the_prefix_cache_scrape_stores_one_sample_per_model_server(model_server):
    (sample,) = prefix_cache_samples_record()
    assert sample.ok and sample.pk and sample.target == model_server.rstrip("/")
    assert sample.prefix_cache_queries is not None and sample.prefix_cache_hits is not None
    assert PrefixCacheSample.objects.filter(pk=sample.pk).exists()


def test_an_unreachable_model_server_is_recorded_as_a_failed_sample(settings):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.VLLM_BASE_URL, settings.VLLM_METRICS_URLS = f"http://127.0.0.1:{port}", []
    (sample,) = prefix_cache_samples_record()
    assert not sample.ok and sample.error and sample.prefix_cache_queries is None
