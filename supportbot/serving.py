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
The writes waiting are swept by one timer a loop (``_WriteSweep``), not one timer an event: a
thousand streams of ten events a second would otherwise set and cancel ten thousand timers a second.
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
import itertools
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, iscoroutinefunction
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler, ASGIRequest
from django.urls import Resolver404, get_resolver
from django.db import close_old_connections, connections

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


HEALTH_CHECK_IDLE_S = 5.0  # a pool thread's connection unused this long is health-checked before its next hop

_thread = threading.local()


def _run_in_request(fn: Callable, args, kwargs):
    # Code of a web request, on a thread of the pool: the hit-record writer takes its records
    # (``records.in_web_request``), and a database connection that broke or aged is replaced, as
    # Django does at the start and end of a request on the request's own thread.
    _connections_refresh()
    with records.web_request():
        try:
            return fn(*args, **kwargs)
        finally:
            _connections_refresh(ending=True)


def _connections_refresh(ending: bool = False) -> None:
    """Django's ``close_old_connections`` for a hop: a connection that failed, aged past
    ``CONN_MAX_AGE`` or was left outside autocommit is closed. Django also marks each connection
    for a health check (a ``SELECT 1`` round trip before its next query); a fresh ask makes
    several hops, so that is done only for a thread whose last hop ended ``HEALTH_CHECK_IDLE_S``
    ago (an idle connection is what the server or a proxy drops), not for every hop of a busy one."""
    now = time.monotonic()
    if not ending and now - getattr(_thread, "last_hop", float("-inf")) >= HEALTH_CHECK_IDLE_S:
        close_old_connections()
    else:
        for conn in connections.all(initialized_only=True):
            if conn.connection is not None and (
                    conn.errors_occurred or (conn.close_at is not None and now >= conn.close_at)
                    or conn.get_autocommit() != conn.settings_dict["AUTOCOMMIT"]):
                conn.close_if_unusable_or_obsolete()
    if ending:
        _thread.last_hop = now


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
    written the previous chunk, so the time from each yield to the next resume measures the write;
    when the sweep finds it too long, the response's task is cancelled inside the server's write, the server closes
    the connection, and closing ``chunks`` marks the Ask interrupted and frees its slot."""
    return GuardedStream(chunks)


class _WriteSweep:
    """The streams of one event loop whose last event is being written, swept every quarter of
    ``STREAM_WRITE_TIMEOUT_S`` (at most a second): a write pending longer than the timeout has its
    stream cut. A stream costs a dictionary entry set and dropped an event."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.writing: dict[asyncio.Task, tuple[float, Callable[[], None]]] = {}
        self.sweeper: asyncio.Task | None = None

    def start(self, task: asyncio.Task, too_slow: Callable[[], None]) -> None:
        self.writing[task] = (self.loop.time(), too_slow)
        if self.sweeper is None:
            self.sweeper = self.loop.create_task(self._sweep())

    def done(self, task: asyncio.Task) -> None:
        self.writing.pop(task, None)

    async def _sweep(self) -> None:
        try:
            while self.writing:
                timeout = settings.STREAM_WRITE_TIMEOUT_S
                await asyncio.sleep(max(0.05, min(1.0, timeout / 4)))
                now = self.loop.time()
                for task, (since, too_slow) in list(self.writing.items()):
                    if now - since >= timeout:
                        self.writing.pop(task, None)
                        too_slow()
        finally:
            self.sweeper = None


_sweeps: dict[asyncio.AbstractEventLoop, _WriteSweep] = {}


def _write_sweep(loop: asyncio.AbstractEventLoop) -> _WriteSweep:
    sweep = _sweeps.get(loop)
    if sweep is None:
        for old in [other for other in _sweeps if other.is_closed()]:  # a test's loop, gone
            del _sweeps[old]
        sweep = _sweeps[loop] = _WriteSweep(loop)
    return sweep


async def _guarded(chunks: AsyncIterator[str]) -> AsyncIterator[str]:
    task = asyncio.current_task()
    sweep = _write_sweep(asyncio.get_running_loop())
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
                sweep.start(task, too_slow)
                try:
                    # bytes: Django would encode a str itself, parsing the response's charset each time
                    yield chunk.encode() if isinstance(chunk, str) else chunk
                finally:
                    sweep.done(task)
        completed = True
    finally:
        metrics.STREAMS_OPEN.dec()
        if not completed and not cut:
            metrics.STREAMS_CUT.labels("disconnect").inc()


class StreamDeadline:
    """A stream's deadline (the loop's clock) as one timer for the stream's whole life:
    ``asyncio.timeout`` around every item would make and cancel a timer an item, which at a
    thousand streams of ten items a second is a measurable part of the loop. ``next`` waits for the
    next item; past the deadline it raises ``TimeoutError`` (the wait under way is cancelled, as
    ``asyncio.timeout`` would). Use it as an async context manager: leaving it drops the timer."""

    def __init__(self, deadline: float):
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._waiting = False
        self._cancelling: int | None = None  # the task's cancel requests before the deadline cancelled it
        self.expired = False
        self._timer = loop.call_at(deadline, self._expire)

    async def __aenter__(self) -> StreamDeadline:
        return self

    async def __aexit__(self, *exc) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        self.expired = True
        if self._waiting:
            self._cancelling = self._task.cancelling()
            self._task.cancel()

    async def next(self, items: AsyncIterator):
        """The next item of ``items`` (``StopAsyncIteration`` at their end), or ``TimeoutError``."""
        if self.expired:
            raise TimeoutError
        self._waiting = True
        try:
            return await anext(items)
        except asyncio.CancelledError:
            if self._cancelling is not None and self._task.uncancel() <= self._cancelling:
                raise TimeoutError from None  # the deadline's cancel, not the caller's
            raise
        finally:
            self._waiting = False


# --------------------------------------------------------------------------- the ASGI application

ASYNC_VIEW_CONTEXTS = 4  # shared executors of the async views' thread-sensitive calls (each runs microseconds of work)


def calls_inline(view):
    """Mark an async view whose request's thread-sensitive calls may run on the event loop itself
    (``AskASGIHandler``): the view reads no session and writes nothing in them, so what Django runs
    there (the request signals' receivers, closing the response) touches no connection and takes
    microseconds, less than the two thread switches it would otherwise cost every request."""
    view.serving_calls_inline = True
    return view


class _Inline(Executor):
    """An executor that runs each call at once in the caller's thread (``calls_inline``)."""

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine, as a pool would
            future.set_exception(exc)
        return future


class AskASGIHandler(ASGIHandler):
    """Django's ASGI handler, with the async views' requests in shared thread-sensitive contexts.

    Django gives every request a thread-sensitive context of its own: the first ``sync_to_async``
    of the request (the ``request_started`` signal's receivers, at the start of every request)
    starts a thread for it, and the end of the request starts a second one to join the first.
    Starting a thread blocks the event loop until the new thread runs, which on a busy machine is
    milliseconds, while every open stream and every cache hit of the process waits. The Ask path's
    async views (the API ask, the chat stream) do their real blocking work in this module's pools;
    what Django still runs thread-sensitively for them (the request signals, closing the response)
    takes microseconds, so their requests share a few long-lived single-thread executors
    (``ASYNC_VIEW_CONTEXTS``), or, for a view marked ``calls_inline`` (the API ask), run on the loop
    itself. Every other request (the staff pages, the chat page, the admin:
    sync views that may hold a thread for a while) keeps Django's own context, a thread of its own."""

    def __init__(self):
        super().__init__()
        self._shared = itertools.cycle([ThreadPoolExecutor(max_workers=1, thread_name_prefix="asgi-context")
                                        for _ in range(ASYNC_VIEW_CONTEXTS)])
        self._inline = _Inline()

    def _async_view(self, path: str):
        """The path's view when it is an async one, else None."""
        try:
            match = get_resolver().resolve(path)
        except Resolver404:
            return None
        return match.func if iscoroutinefunction(match.func) else None

    async def listen_for_disconnect(self, receive):
        """Django's listener, returning on the client's disconnect instead of raising ``RequestAborted``.

        The ASGI server reports a disconnect after every response, so Django's listener raised on
        every request, and ``handle`` caught the exception there: its traceback then held
        ``handle``'s frame, whose list of tasks held the listener's task, which held the exception.
        That cycle kept each request's whole graph (the request, its session, the response, two
        tasks: about 80 objects) alive until the garbage collector's next pass, and those passes,
        at hundreds of requests a second, were the exact hits' longest pauses
        (``bench.stream_load``). ``handle`` (Django 5.2) treats a listener that returns exactly as
        one that raises: whichever task ends first, the other is cancelled, and a cancelled view
        ends the request. ``test_serving`` checks both the cycle and the disconnect."""
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        # As Django's: nothing else may follow the request's body.
        raise AssertionError(f"Invalid ASGI message after request body: {message['type']}")

    async def run_get_response(self, request):
        """Django's, and when the response is closed (after its last byte is sent) the request lets
        go of what it holds: Django's middleware leaves it in cycles with itself (``request.user``
        is a lazy object whose function holds the request; so do ``request.auser``, the messages'
        storage and django-htmx's ``request.htmx``), which only the garbage collector could free."""
        response = await super().run_get_response(request)
        response._resource_closers.append(functools.partial(_release_request, request))
        return response

    async def __call__(self, scope, receive, send):
        view = self._async_view(scope.get("path", "")) if scope["type"] == "http" else None
        if view is None:
            return await super().__call__(scope, receive, send)
        inline = getattr(view, "serving_calls_inline", False)
        async with ThreadSensitiveContext(executor=self._inline if inline else next(self._shared)):
            await self.handle(scope, receive, send)


def _release_request(request) -> None:
    """Drop a finished request's attributes (see ``AskASGIHandler.run_get_response``)."""
    request.__dict__.clear()


def asgi_application() -> AskASGIHandler:
    """The project's ASGI application (``supportbot.asgi``, the tests' live server, the benches):
    call once Django is set up. It shortens the process's GIL switch interval
    (``WEB_GIL_SWITCH_MS``): under load the event loop rarely waits on I/O, and a pool thread
    finishing a cache hit would otherwise wait up to 5 ms for each of its turns."""
    sys.setswitchinterval(max(0.0001, settings.WEB_GIL_SWITCH_MS / 1000))
    return AskASGIHandler()
