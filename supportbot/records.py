"""Writing the records of cache hits off the request path.

A cache hit writes nothing but its record (the Ask and one decision per layer). Written by
the request itself that is four database round trips and a WAL flush, several times the cost
of the hit. So inside a web request with no transaction open, ``pipeline.hit_records.submit`` queues
the record and returns at once; one thread per process writes whatever has queued up in a
single transaction: the rows go in with ``COPY`` (``copy_insert``), which costs a fraction
of the ORM's multi-row INSERT in this process's CPU, which it shares with the requests.

A fresh answer that was neither admitted nor left a near miss writes only its record too, and
goes the same way. Everything else is written by the caller, synchronously: admitted answers (their
cache entries must be written with the record, or not at all), and any record written inside an open transaction (tests,
management commands, Celery tasks), so a caller that deletes what it asked about afterwards
never races the writer. A record reaches the database a few milliseconds after the answer;
a process that dies loses at most the batch in flight, and the queue is flushed at exit.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection, transaction
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


@contextlib.contextmanager
def web_request():
    """A web request's code on a thread that is not the request's own (the async server's pool,
    ``supportbot.serving``): its hit records go to the writer as the request thread's would."""
    before = getattr(_request, "active", False)
    _request.active = True
    try:
        yield
    finally:
        _request.active = before


class HitRecordWriter:
    """A queue and the thread that drains it into ``write(batch)`` (one transaction a batch).

    Submitting a record appends it to a deque and wakes nobody, except the first of a batch:
    the writer sleeps through the linger, then takes everything queued. (A ``queue.Queue``
    woke the writer on every record, a thread switch and a hand-over of the interpreter lock
    for each request the process served.)"""

    def __init__(self, write: Callable[[list], None], *, max_batch: int = 500, max_queued: int = 10_000):
        self._write = write
        self._max_batch = max_batch
        self._max_queued = max_queued
        self._lock = threading.Lock()
        self._reset()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def _reset(self) -> None:
        self._items: collections.deque = collections.deque()
        self._queued = threading.Event()  # set when records wait and the writer may be asleep
        self._hurry = threading.Event()  # cuts the linger short (flush, stop)
        self._busy = False  # the writer holds a batch it has not finished writing
        self._stopping = False

    def submit(self, item) -> bool:
        """Queue a hit's record; False when the caller must write it itself."""
        if not in_web_request() or transaction.get_connection().in_atomic_block:
            return False
        self._ensure_running()
        if len(self._items) >= self._max_queued:  # the database is not keeping up: the request pays
            return False
        self._items.append(item)
        if not self._queued.is_set():
            self._queued.set()
        return True

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every queued record is written (True), or the timeout passes (False)."""
        deadline = time.monotonic() + timeout_s
        while self._items or self._busy:
            if not self._running():  # no writer here (exiting, or a forked child): write them now
                self._write_batch(self._take())
                continue
            self._hurry.set()
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    def stop(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, then end the thread (it closes its database connection)."""
        if self._running():
            self._stopping = True
            self._hurry.set()
            self._queued.set()
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
                self._reset()
                atexit.register(self.stop)
            self._stopping = False
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, name="hit-record-writer", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        """Wait for a first record, linger ``RECORDS_LINGER_MS`` for more, write them all, repeat:
        a batch of many hits costs the process and the database much less than many batches of one."""
        while True:
            self._queued.wait()
            # a hurry left over from the last flush would cut this linger short; a flush waiting
            # now sets it again within milliseconds
            self._hurry.clear()
            if not self._stopping and len(self._items) < self._max_batch:  # no backlog: let a batch gather
                self._hurry.wait(settings.RECORDS_LINGER_MS / 1000)
            self._queued.clear()  # before taking: a record queued after this wakes the next round
            self._write_batch(self._take())
            if self._items:  # more than a batch was waiting
                self._queued.set()
            elif self._stopping:
                connection.close()
                return

    def _take(self) -> list:
        """Up to a batch of the queued records, oldest first; the writer is busy until it wrote them."""
        self._busy = True
        batch, items = [], self._items
        try:
            while items and len(batch) < self._max_batch:
                batch.append(items.popleft())
        except IndexError:  # another taker emptied it first (flush in a process without a writer)
            pass
        return batch

    def _write_batch(self, batch: list) -> None:
        try:
            if batch:
                close_old_connections()
                self._write(batch)
        except Exception:  # noqa: BLE001 - the writer must outlive a bad batch or a database outage
            log.exception("could not record %d cache hits", len(batch))
            connection.close()  # a broken connection is reopened for the next batch
        finally:
            self._busy = False


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

    Unlike ``bulk_create`` this builds no model instances and no SQL text, and the rows are
    written in COPY's text format here, one converter a column, chosen once per model: a
    missing field takes its default, ``auto_now_add`` the batch's time, a JSON field is
    serialised. Meant for the plain columns of record tables: a model with a field of any other
    type is refused."""
    if not rows:
        return
    statement, columns = _copy_spec(model)
    now = _copy_datetime(timezone.now())
    lines = []
    for pk, row in zip(pks, rows, strict=True):
        values = [str(int(pk))]
        append = values.append
        for name, default, convert, auto, default_text in columns:
            if auto:
                append(now)
                continue
            v = row.get(name, _ABSENT)
            if v is _ABSENT:
                if default_text is not None:
                    append(default_text)
                    continue
                v = default() if callable(default) else default
            if v is None:
                append(_COPY_NULL)
            elif convert is _copy_text and type(v) is str:  # most values: text with nothing to escape
                append(v.translate(_COPY_ESCAPES) if _COPY_SPECIAL.search(v) else v)
            else:
                append(convert(v))
        lines.append("\t".join(values))
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        copy.write("\n".join(lines) + "\n")


_ABSENT = object()
_COPY_NULL = "\\N"
_COPY_SPECIAL = re.compile(r"[\\\t\n\r]")
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(value) -> str:
    text = value if type(value) is str else str(value)
    # most text has nothing to escape; translate() with a table costs a lookup a character
    return text.translate(_COPY_ESCAPES) if _COPY_SPECIAL.search(text) else text


def _copy_json(value) -> str:
    if not value and type(value) in (dict, list):  # the usual empty filters, citations, differences
        return "{}" if type(value) is dict else "[]"
    return _copy_text(json.dumps(value))


def _copy_datetime(value) -> str:
    if timezone.is_naive(value):
        raise ValueError("a record's time must be timezone-aware")
    return value.isoformat()


_COPY_CONVERTERS: dict[str, Callable] = {
    **dict.fromkeys(("CharField", "TextField", "UUIDField", "SlugField", "URLField"), _copy_text),
    **dict.fromkeys(("IntegerField", "PositiveIntegerField", "PositiveSmallIntegerField", "SmallIntegerField",
                     "BigIntegerField", "PositiveBigIntegerField", "ForeignKey", "OneToOneField"),
                    lambda v: str(int(v))),
    "FloatField": lambda v: repr(float(v)),
    "BooleanField": lambda v: "t" if v else "f",
    "DateTimeField": _copy_datetime,
    "JSONField": _copy_json,
}


@functools.lru_cache(maxsize=None)
def _copy_spec(model) -> tuple[str, tuple]:
    """A model's COPY statement and, in its column order after the key, each column's
    (attname, default, converter, set to the batch's time, the default's text when it never changes)."""
    meta, q = model._meta, connection.ops.quote_name
    fields = tuple(f for f in meta.concrete_fields if not f.primary_key)
    columns = []
    for f in fields:
        kind = f.get_internal_type()
        if kind not in _COPY_CONVERTERS:
            raise TypeError(f"copy_insert cannot write {model.__name__}.{f.name} ({kind})")
        default = f.default if f.has_default() else (None if f.null else f.get_default())
        convert = _COPY_CONVERTERS[kind]
        # a default that is the same every time is written once here (an empty JSON object or list too)
        if default is dict or default is list:
            default_text = convert(default())
        elif callable(default):
            default_text = None
        else:
            default_text = _COPY_NULL if default is None else convert(default)
        columns.append((f.attname, default, convert,
                        bool(getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False)), default_text))
    names = ", ".join(q(c) for c in [meta.pk.column, *(f.column for f in fields)])
    return f"COPY {q(meta.db_table)} ({names}) FROM STDIN", tuple(columns)


def commit_asynchronously() -> None:
    """Records of hits already answered: a crash may lose the last moments of them, as it may lose
    the writer's queue, so the writer's commits need not wait for the WAL flush. Set once per
    connection (the writer thread's own)."""
    with connection.cursor() as cursor:
        if getattr(connection, "_hit_records_async_commit", None) is not connection.connection:
            cursor.execute("SET synchronous_commit = off")
            connection._hit_records_async_commit = connection.connection
