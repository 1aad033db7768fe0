"""The one Celery app, configured from Django settings (``CELERY_`` namespace)."""
import os

from celery import Celery, signals

from core import metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")

app = Celery("supportbot")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# Task runs and failures in the metrics (core.metrics); a prefork child that exits stops
# counting in the live gauges.
@signals.task_success.connect
def _task_succeeded(sender=None, **kwargs):
    metrics.TASKS.labels(getattr(sender, "name", "unknown"), "success").inc()


@signals.task_failure.connect
def _task_failed(sender=None, **kwargs):
    metrics.TASKS.labels(getattr(sender, "name", "unknown"), "failure").inc()


@signals.task_retry.connect
def _task_retried(sender=None, **kwargs):
    metrics.TASKS.labels(getattr(sender, "name", "unknown"), "retry").inc()


@signals.worker_process_shutdown.connect
def _worker_process_exited(pid=None, **kwargs):
    metrics.process_dead(pid or os.getpid())


@signals.worker_ready.connect
def _check_prefix_cache_at_start(sender=None, **kwargs):
    """At start: does the model server cache prompt prefixes? (supportbot.prefix_probe; queued, so a slow
    model server never delays the worker.)"""
    try:
        app.send_task("supportbot.tasks.prefix_cache_probe")
    except Exception:  # noqa: BLE001 - the hourly check catches up
        pass
