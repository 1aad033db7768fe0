"""The default beat schedules, created in the database (django-celery-beat) where staff
see and change them in the admin: Periodic tasks.

``schedules_setup`` creates the missing ones and never touches an existing row, so a
time, an argument or an "enabled" box that staff changed survives every deploy. An
entry whose service lives in a module that is not installed is skipped until it is.
Times are UTC crontabs, spread so the nightly jobs do not compete for the CPU.
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Schedule:
    name: str  # the PeriodicTask's unique name, what staff see
    task: str
    crontab: dict  # minute, hour, day_of_week, day_of_month, month_of_year
    description: str
    kwargs: dict = field(default_factory=dict)
    requires: str = ""  # a module that must be importable (a service another part of the app provides)


DEFAULT_SCHEDULES = (
    Schedule("Nightly re-embed of changed chunks", "ingestion.tasks.reembed_changed",
             {"minute": "0", "hour": "2"},
             "Embeds new and edited chunks (unchanged text comes from the embedding cache), drops stale vectors. "
             "Each run is a Job run in the Knowledge base section."),
    Schedule("Nightly purge sweep", "caching.tasks.purge_sweep", {"minute": "30", "hour": "2"},
             "Purges cached answers and search results citing article versions that are no longer current "
             "(change events a worker missed). Each purge is a Purge record."),
    Schedule("Nightly semantic cache TTL clean-up", "caching.tasks.semantic_expired_cleanup",
             {"minute": "0", "hour": "3"},
             "Retires expired semantic entries; deletes purged/retired ones older than SEMANTIC_CACHE_RETENTION_DAYS."),
    Schedule("Hourly semantic cache tenant indexes", "caching.tasks.semantic_tenant_indexes", {"minute": "40"},
             "Builds an HNSW index for every tenant with SEMANTIC_TENANT_INDEX_MIN_ROWS active semantic entries "
             "(concurrently: lookups never wait) and drops those of tenants below half of it. Each run is a Job run."),
    Schedule("Hourly metric roll-ups", "caching.tasks.rollup_hourly", {"minute": "5"},
             "Rolls up the cache decisions of every complete hour for the staff dashboard.",
             requires="caching.rollups"),
    Schedule("Hourly prefix-cache scrape", "supportbot.tasks.prefix_cache_scrape", {"minute": "0"},
             "Samples each model server's /metrics prefix-cache counters into Prefix cache samples."),
    Schedule("Semantic layer fallback check", "caching.tasks.semantic_fallback_check", {"minute": "*"},
             "Every minute: a tenant in serve whose labelled wrong semantic hits or customers' No pass the "
             "SEMANTIC_FALLBACK_* bounds goes back to shadow (a Semantic mode change, an alert).",
             requires="caching.modes"),
    Schedule("Cache warm-up after a version bump", "supportbot.tasks.cache_warmup", {"minute": "*/5"},
             "Every five minutes: tenants whose model, prompt or policy version changed get their most-asked "
             "questions answered again, rate-limited (a Job run cache_warmup).", requires="supportbot.cache_warmup"),
    Schedule("Hourly model-server prefix-cache check", "supportbot.tasks.prefix_cache_probe", {"minute": "10"},
             "Sends a probe prompt twice: the second must report cached tokens, else the dashboard and the log say "
             "prefix caching is off.", requires="supportbot.prefix_probe"),
    Schedule("Nightly retention purge of Ask records", "supportbot.tasks.records_purge",
             {"minute": "30", "hour": "3"},
             "Deletes Ask and decision records older than RECORD_RETENTION_DAYS (or the days argument).",
             requires="supportbot.retention"),
    Schedule("Hourly clean-up of expired sessions", "supportbot.tasks.sessions_clear", {"minute": "20"},
             "Deletes expired sessions (Django's clearsessions): the chat page's threads and pending questions.",
             requires="supportbot.retention"),
    Schedule("Nightly judge recalibration per tenant", "modelbuild.tasks.judge_recalibrate_tenants",
             {"minute": "45", "hour": "3"},
             "Recalibrates the learned judge's threshold of every tenant with JUDGE_RECALIBRATE_MIN_LABELS staff "
             "labels for CALIBRATION_TARGET_PRECISION (a new Judge threshold version when it changes).",
             requires="modelbuild.judge_calibration"),
)


def _available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def schedules_setup(schedules=DEFAULT_SCHEDULES) -> dict[str, list[str]]:
    """Create the periodic tasks that do not exist yet; returns names by outcome."""
    from django.conf import settings
    from django_celery_beat.models import CrontabSchedule, PeriodicTask

    out: dict[str, list[str]] = {"created": [], "kept": [], "unavailable": []}
    for s in schedules:
        if PeriodicTask.objects.filter(name=s.name).exists():
            out["kept"].append(s.name)  # staff may have changed it: never overwrite
            continue
        if s.requires and not _available(s.requires):
            out["unavailable"].append(s.name)
            continue
        fields = {"minute": "*", "hour": "*", "day_of_week": "*", "day_of_month": "*", "month_of_year": "*"}
        fields.update(s.crontab)
        crontab = CrontabSchedule.objects.filter(timezone=settings.CELERY_TIMEZONE, **fields).first()
        if crontab is None:
            crontab = CrontabSchedule.objects.create(timezone=settings.CELERY_TIMEZONE, **fields)
        PeriodicTask.objects.create(name=s.name, task=s.task, crontab=crontab, kwargs=json.dumps(s.kwargs),
                                    description=s.description)
        out["created"].append(s.name)
    return out
