"""Fixtures of the background-job tests: the test Redis, a broker database of their own and a
real Celery worker (a subprocess) pointed at the test database."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from django.conf import settings
from kombu import pools

from tests.jobs.helpers import running_workers

TEST_REDIS_URL = os.environ["REDIS_TEST_URL"]
# The broker gets a Redis database of its own: the per-test clean-up of the test database must
# not delete a queue's bindings under a running worker. It lives on the broker's Redis (the
# embedded one is a separate noeviction instance) when there is one, else on the test Redis.
BROKER_URL = (os.environ.get("CELERY_BROKER_URL") or TEST_REDIS_URL).rsplit("/", 1)[0] + "/14"
WORKER_LOG = Path(settings.BASE_DIR) / "var" / "log" / "jobs-test-worker.log"


def _point_celery_at(url: str) -> None:
    from supportbot.celery import app

    # Celery reads the CELERY_BROKER_URL environment variable before its configuration (and the
    # embedded setup sets it for the broker's Redis): without this the tests would still publish
    # and ping on the app's broker while their worker listens on this one.
    os.environ["CELERY_BROKER_URL"] = os.environ["CELERY_RESULT_BACKEND"] = url
    settings.CELERY_BROKER_URL = settings.CELERY_RESULT_BACKEND = url
    app.conf.broker_url = app.conf.result_backend = url
    # Pools made before this point still point elsewhere. kombu keeps its pools in process-wide
    # registries keyed by broker URL: closing one but leaving it registered hands that closed pool
    # back ("Acquire on closed pool") to the next publish to that URL. Close and forget them all.
    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture(scope="session", autouse=True)
def _jobs_redis():
    """Settings are read before tests/conftest.py sets REDIS_URL to the test database, so these
    tests set it again (and their broker) to keep clear of a running app's caches and queues."""
    from core.redis_client import reset_redis_state

    settings.REDIS_URL = TEST_REDIS_URL
    _point_celery_at(BROKER_URL)
    reset_redis_state()
    yield


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.05, why=None):
    """Poll until predicate() is truthy; returns its value or fails the test (with ``why()``, the
    state worth reading, in the message)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            seen = f": {why()!r}" if why is not None else ""
            pytest.fail(f"timed out after {timeout}s waiting for {getattr(predicate, '__name__', predicate)}{seen}")
        time.sleep(interval)


def wait_until_idle(timeout: float = 120.0) -> None:
    """Wait until the worker has nothing queued or running (every queue empty, nothing unacked), for
    a test that must not meet the tail of work an earlier test (or the demo load) queued."""
    broker = redis.Redis.from_url(BROKER_URL)

    def idle():
        return not any(broker.llen(q) for q in settings.CELERY_WORKER_QUEUES) and not broker.hlen("unacked")

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if idle():
            time.sleep(0.5)
            if idle():
                return
        time.sleep(0.1)
    pytest.fail(f"the worker was still busy after {timeout}s")


def worker_database_url() -> str:
    """DATABASE_URL with the database name pytest-django created (test_ask)."""
    from django.db import connection

    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path="/" + connection.settings_dict["NAME"]))


class WorkerProcess:
    def __init__(self, proc: subprocess.Popen, nodename: str):
        self.proc, self.nodename = proc, nodename

    def log(self) -> str:
        return WORKER_LOG.read_text(errors="replace")


def start_worker_process(extra_env: dict | None = None) -> WorkerProcess:
    """``celery -A supportbot worker`` on every queue, against the test database and test Redis."""
    from supportbot.celery import app

    redis.Redis.from_url(BROKER_URL).flushdb()
    nodename = f"jobstest-{uuid.uuid4().hex[:8]}@localhost"
    env = dict(os.environ, DATABASE_URL=worker_database_url(), REDIS_URL=TEST_REDIS_URL,
               CELERY_BROKER_URL=BROKER_URL, CELERY_RESULT_BACKEND=BROKER_URL,
               DJANGO_SETTINGS_MODULE="supportbot.settings", **(extra_env or {}))
    WORKER_LOG.parent.mkdir(parents=True, exist_ok=True)
    log = open(WORKER_LOG, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "supportbot", "worker", "--loglevel", "INFO",
         "-Q", ",".join(settings.CELERY_WORKER_QUEUES), "--pool", "threads", "--concurrency", "3",
         "--hostname", nodename, "--without-gossip", "--without-mingle", "--without-heartbeat"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=settings.BASE_DIR, start_new_session=True,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}:\n{WORKER_LOG.read_text()[-3000:]}")
        if app.control.ping(destination=[nodename], timeout=0.5):
            worker = WorkerProcess(proc, nodename)
            running_workers.append(worker)
            return worker
    proc.kill()
    raise RuntimeError(f"celery worker did not answer a ping:\n{WORKER_LOG.read_text()[-3000:]}")


def stop_worker_process(worker: WorkerProcess) -> None:
    if worker in running_workers:
        running_workers.remove(worker)
    if worker.proc.poll() is None:
        worker.proc.terminate()  # warm shutdown: running tasks finish
        try:
            worker.proc.wait(30)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            worker.proc.wait()


@pytest.fixture
def demo(demo):
    """The demo tenants, and, while a worker runs, the work their reload queued done. A transactional
    test's flush empties the database, so the next test's demo load ingests every article again, and
    each new article queues a re-index of its tenant (``index_refresh``), whose ``purge_retrieving``
    retires the cached answers whose question retrieves one of them. On a running worker that tail
    takes seconds (longer under load), and an answer a test cached meanwhile would be purged under it:
    a test starts once it is over (``wait_until_idle``)."""
    if any(worker.proc.poll() is None for worker in running_workers):
        wait_until_idle()
    return demo


@pytest.fixture(scope="module")
def celery_worker(django_db_setup, django_db_blocker):
    worker = start_worker_process()
    yield worker
    stop_worker_process(worker)
