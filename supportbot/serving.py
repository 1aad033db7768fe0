"""How the Ask path runs under the async server (ASGI: gunicorn with uvicorn workers, docs/serving.md).

A request's blocking steps (the ORM, sync Redis, the embedding model) run in two bounded pools of
threads a process; what waits longest, the model's stream, is a coroutine
(``GenerationBackend.astream``). An open stream therefore holds a few kilobytes and a socket, never
a thread: a process holds thousands of them, while the pool threads serve the short steps of every
request in turn. The two pools are two lanes:

* ``front`` (``WEB_FRONT_THREADS``): every ask's first hop, up to and including the lookups: the
  whole of a cache hit. A hit never queues behind a fresh answer's slower steps.
* ``blocking`` (``WEB_BLOCKING_THREADS``): a fresh answer's later steps (retrieval, the
  answerability check, admission, its record).

Each pool thread may hold one database connection, so a process holds at most the two sizes
together, however many streams are open.

``stream_guard`` wraps every streamed response: a reader that does not accept an event within
``STREAM_WRITE_TIMEOUT_S`` is cut off (its connection closed), and the open streams are counted.
The maximum duration of a stream (``STREAM_MAX_DURATION_S``) is the pipeline's
(``pipeline.ask_events_async``): it ends the answer with the hand-off text.

Under WSGI (the ``threads`` server, ``manage.py runserver``, Django's test client) the same views
run the sync pipeline in the request's own thread (``is_async``).
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections

from core import metrics
from supportbot import records

log = logging.getLogger(__name__)

_lock = threading.Lock()
_pools: dict[str, tuple[ThreadPoolExecutor, int]] = {}  # lane: (the pool, the pid that made it)


def is_async(request) -> bool:
    """Whether the request came through the ASGI handler (the async server, ``AsyncClient``)."""
    return isinstance(request, ASGIRequest)


def executor(lane: str = "blocking") -> ThreadPoolExecutor:
    """The process's pool of a lane (made on first use; again in a forked child)."""
    held = _pools.get(lane)
    if held is None or held[1] != os.getpid():
        with _lock:
            held = _pools.get(lane)
            if held is None or held[1] != os.getpid():
                size = settings.WEB_FRONT_THREADS if lane == "front" else settings.WEB_BLOCKING_THREADS
                held = _pools[lane] = (ThreadPoolExecutor(max_workers=max(1, size), thread_name_prefix=f"ask-{lane}"),
                                       os.getpid())
    return held[0]


def _run_in_request(fn: Callable, args, kwargs):
    # Code of a web request, on a thread of the pool: the hit-record writer takes its records
    # (``records.in_web_request``), and a database connection that broke or aged is replaced, as
    # Django does at the start and end of a request on the request's own thread.
    close_old_connections()
    with records.web_request():
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()


async def blocking(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` on the process's pool for a fresh answer's steps, in the caller's
    context (context variables)."""
    return await _hop("blocking", fn, args, kwargs)


async def front(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)`` on the front lane: an ask's first hop (who asks, the lookups, a hit)."""
    return await _hop("front", fn, args, kwargs)


async def _hop(lane: str, fn: Callable, args, kwargs):
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(executor(lane), functools.partial(context.run, _run_in_request, fn, args, kwargs))


class GuardedStream:
    """A streamed response's content (``stream_guard``). Django calls ``close`` once the response
    is over, from a thread; when the response ended early (its task cancelled inside the server's
    write: a reader cut off) the generators below are still suspended, and ``close`` has them
    closed on the loop at once, which records the Ask and closes the model's stream, rather than
    whenever the garbage collector finds them."""

    def __init__(self, chunks: AsyncIterator[str]):
        self._loop = asyncio.get_running_loop()
        self._chunks = _guarded(chunks)
        self._closing: set[asyncio.Task] = set()

    def __aiter__(self):
        return self._chunks

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._aclose)

    def _aclose(self) -> None:
        task = self._loop.create_task(self._chunks.aclose())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


def stream_guard(chunks: AsyncIterator[str]) -> GuardedStream:
    """Forward ``chunks`` to the server, cutting the connection of a reader that has not taken one
    within ``STREAM_WRITE_TIMEOUT_S``. Django resumes the generator only once the server has
    written the previous chunk, so a timer from each yield to the next resume measures the write;
    when it fires, the response's task is cancelled inside the server's write, the server closes
    the connection, and closing ``chunks`` marks the Ask interrupted and frees its slot."""
    return GuardedStream(chunks)


async def _guarded(chunks: AsyncIterator[str]) -> AsyncIterator[str]:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    cut: list[str] = []

    def too_slow():
        cut.append("write_timeout")
        metrics.STREAMS_CUT.labels("write_timeout").inc()
        log.info("stream reader too slow: no event accepted within %.1fs; cut off", settings.STREAM_WRITE_TIMEOUT_S)
        task.cancel()

    metrics.STREAMS_OPEN.inc()
    completed = False
    try:
        async with contextlib.aclosing(chunks) as events:
            async for chunk in events:
                timer = loop.call_later(settings.STREAM_WRITE_TIMEOUT_S, too_slow)
                try:
                    yield chunk
                finally:
                    timer.cancel()
        completed = True
    finally:
        metrics.STREAMS_OPEN.dec()
        if not completed and not cut:
            metrics.STREAMS_CUT.labels("disconnect").inc()
