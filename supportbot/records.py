"""Writing the records of cache hits off the request path.

A cache hit writes nothing but its record (the Ask and one decision per layer). Written by
the request itself that is four database round trips and a WAL flush, several times the cost
of the hit. So inside a web request with no transaction open, ``hit_records.submit`` queues
the record and returns at once; one thread per process writes whatever has queued up in a
single transaction: the rows go in with ``COPY`` (``copy_insert``), which costs a fraction
of the ORM's multi-row INSERT in this process's CPU, which it shares with the requests.

Everything else is written by the caller, synchronously: fresh answers (their semantic entry
must be written with the record), and any record written inside an open transaction (tests,
management commands, Celery tasks), so a caller that deletes what it asked about afterwards
never races the writer. A record reaches the database a few milliseconds after the answer;
a process that dies loses at most the batch in flight, and the queue is flushed at exit.
"""
from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection, transaction
from django.db.models import JSONField
from django.utils import timezone

log = logging.getLogger(__name__)

_request = threading.local()


def _request_started(**kwargs) -> None:
    _request.active = True


def _request_finished(**kwargs) -> None:
    _request.active = False


request_started.connect(_request_started, dispatch_uid="records.request_started")
request_finished.connect(_request_finished, dispatch_uid="records.request_finished")


def in_web_request() -> bool:
    return getattr(_request, "active", False)


class HitRecordWriter:
    """A queue and the thread that drains it into ``write(batch)`` (one transaction a batch)."""

    def __init__(self, write: Callable[[list], None], *, max_batch: int = 500, max_queued: int = 10_000):
        self._write = write
        self._max_batch = max_batch
        self._queue: queue.Queue = queue.Queue(maxsize=max_queued)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def submit(self, item) -> bool:
        """Queue a hit's record; False when the caller must write it itself."""
        if not in_web_request() or transaction.get_connection().in_atomic_block:
            return False
        self._ensure_running()
        try:
            self._queue.put_nowait(item)
        except queue.Full:  # the database is not keeping up: the request pays, nothing is lost
            return False
        return True

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued record is written (True), or the timeout passes (False)."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks:
            if not self._running():  # no writer here (exiting, or a forked child): write them now
                batch, _ = self._take(block=False)
                self._write_batch(batch)
                continue
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def stop(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, then end the thread (it closes its database connection)."""
        if self._running():
            self._queue.put(_STOP)
            self._thread.join(timeout_s)
        self.flush(timeout_s)

    def _running(self) -> bool:
        return self._pid == os.getpid() and self._thread is not None and self._thread.is_alive()

    def _ensure_running(self) -> None:
        if self._running():
            return
        with self._lock:
            if self._running():
                return
            if self._pid != os.getpid():  # first use in this process (gunicorn forks its workers)
                self._queue = queue.Queue(maxsize=self._queue.maxsize)
                atexit.register(self.stop)
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="hit-record-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            batch, stopping = self._take(block=True)
            self._write_batch(batch)
            if stopping:
                connection.close()
                return

    def _take(self, *, block: bool) -> tuple[list, bool]:
        """What is queued (waiting for the first item if ``block``), up to a batch.

        Once the first item is in, the writer lingers ``RECORDS_LINGER_MS`` for more: a batch
        of many hits costs the process and the database much less than many batches of one."""
        batch: list = []
        linger = settings.RECORDS_LINGER_MS / 1000
        try:
            item = self._queue.get(block=block)
            deadline = time.monotonic() + linger
            while True:
                if item is _STOP:
                    self._queue.task_done()
                    return batch, True
                batch.append(item)
                if len(batch) >= self._max_batch:
                    break
                wait = deadline - time.monotonic() if block else 0
                item = self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait()
        except queue.Empty:
            pass
        return batch, False

    def _write_batch(self, batch: list) -> None:
        if not batch:
            return
        try:
            close_old_connections()
            self._write(batch)
        except Exception:  # noqa: BLE001 - the writer must outlive a bad batch or a database outage
            log.exception("could not record %d cache hits", len(batch))
            connection.close()  # a broken connection is reopened for the next batch
        finally:
            for _ in batch:
                self._queue.task_done()


_STOP = object()


def pks_allocate(counts: list[tuple[type, int]]) -> list[list[int]]:
    """New primary keys from each model's table sequence, ``[(model, how many), ...]``, in one query:
    rows that refer to each other (decisions to their Ask) can then go in with ``copy_insert``."""
    parts, params = [], []
    for model, n in counts:
        parts.append("ARRAY(SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s))")
        params += [model._meta.db_table, model._meta.pk.column, n]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        return [list(pks) for pks in cursor.fetchone()]


def copy_insert(model, rows: list[dict], pks: list[int]) -> None:
    """Insert rows (dicts of field attnames, e.g. ``tenant_id``) under the given primary keys
    (``pks_allocate``) with one ``COPY``.

    Unlike ``bulk_create`` this builds no model instances and no SQL text: a missing field takes
    its default, ``auto_now_add`` the batch's time, and a JSON field is serialised here (COPY's
    text format hands it to PostgreSQL as text). Meant for the plain columns of record tables,
    not for every field type."""
    if not rows:
        return
    statement, fields = _copy_spec(model)
    now = timezone.now()
    dumps = json.dumps
    columns = [(f.attname, f.get_default(), isinstance(f, JSONField),
                bool(getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False))) for f in fields]
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        write = copy.write_row
        for pk, row in zip(pks, rows, strict=True):
            get = row.get
            write([pk, *[now if auto else (dumps(v) if is_json and v is not None else v)
                         for name, default, is_json, auto in columns for v in (get(name, default),)]])


@functools.lru_cache(maxsize=None)
def _copy_spec(model) -> tuple[str, tuple]:
    """A model's COPY statement and its fields in the statement's column order (after the key)."""
    meta, q = model._meta, connection.ops.quote_name
    fields = tuple(f for f in meta.concrete_fields if not f.primary_key)
    names = ", ".join(q(c) for c in [meta.pk.column, *(f.column for f in fields)])
    return f"COPY {q(meta.db_table)} ({names}) FROM STDIN", fields


def _write_hits(states: list) -> None:
    from supportbot.pipeline import record_hits

    with connection.cursor() as cursor:
        if getattr(connection, "_hit_records_async_commit", None) is not connection.connection:
            # Records of hits already answered: a crash may lose the last moments of them, as it
            # may lose this queue, so the writer's commits need not wait for the WAL flush. Set
            # once per connection (this thread's own).
            cursor.execute("SET synchronous_commit = off")
            connection._hit_records_async_commit = connection.connection
    record_hits(states)


hit_records = HitRecordWriter(_write_hits)
