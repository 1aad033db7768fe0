"""A lean HTTP/1.1 client for the one call a streamed answer makes: POST a JSON body to the model
server and read its event stream back, on the event loop.

Why not httpx (through the ``openai`` client): at a thousand open streams, each delta read through
httpx/httpcore/anyio cost an h11 event, an anyio cancel scope and a timeout per read, and building
each request through the client's typed models cost more than the rest of the request; together
about a third of a web worker (docs/serving.md). Here a connection is an ``asyncio.Protocol``
whose bytes go through ``httptools`` (llhttp, the parser uvicorn uses): a delta costs one callback
and one wake-up of the reading coroutine. A stream has one deadline timer, set once, not a timeout
per read. Cancelling the reader (the customer left) aborts the socket at once, which is what makes
vLLM stop generating.

Connections are kept alive per event loop (``ConnectionPool``) up to ``keepalive_max`` idle ones,
each for at most ``keepalive_idle_s`` (below the server's own keep-alive timeout: uvicorn's, under
vLLM, is 5 s), so most streams skip the TCP connect. A request on a kept connection that the server
had closed meanwhile is sent again on a new one, as browsers do: nothing was answered on it.

Retries, the breaker, error reasons and metrics are the backend's (``openai_http``); this module
only moves bytes and says what failed (``ConnectFailed``, ``Timeout``, ``ConnectionLost``).
"""
from __future__ import annotations

import asyncio
import ssl
import time
from urllib.parse import urlsplit

import httptools

_PAUSE_AT = 1 << 20  # buffered body bytes past which the socket stops being read until the reader catches up


class Timeout(Exception):
    """The call's deadline passed (connecting, waiting for the answer or reading it)."""


class ConnectFailed(OSError):
    """No connection to the server (refused, unreachable, the connect timed out)."""


class ConnectionLost(OSError):
    """The server closed the connection before the answer was complete."""


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time, its answer's body read as it arrives."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: ConnectionPool):
        self.loop, self.pool = loop, pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.idle_since = 0.0  # loop time it went back to the pool, while it is there
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head = False  # the status line and headers are in
        self.complete = False  # the whole answer is in
        self.keep_alive = False
        self.received = False  # a byte of the answer arrived
        self.failure: BaseException | None = None
        self._pieces: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._gathering = False  # a read waits out its ``not_before``: arriving bytes wake nobody

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionLost(f"invalid HTTP from the server: {exc}"))
            return
        if not self._gathering or self.complete:
            self._wake()

    def eof_received(self):
        return False  # close the transport: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if self.idle_since:
            self.pool.forget(self)
        if self.head and not self.complete and "content-length" not in self.headers \
                and "chunked" not in self.headers.get("transfer-encoding", "").lower():
            self.complete = True  # a body delimited by the end of the connection
        elif self.failure is None and not self.complete:
            self.failure = ConnectionLost(f"the server closed the connection ({exc or 'end of stream'})")
        self._wake()

    # httptools' callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self.head = True

    def on_body(self, body: bytes) -> None:
        self._pieces.append(body)
        self._buffered += len(body)
        if self._buffered > _PAUSE_AT and not self._paused:
            self._paused = True
            self.transport.pause_reading()

    def on_message_complete(self) -> None:
        self.complete = True

    # ------------------------------------------------------------------ the caller's side

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fail(self, failure: BaseException) -> None:
        if self.failure is None:
            self.failure = failure
        if self.transport is not None:
            self.transport.abort()
        self._wake()

    def _expire(self) -> None:
        self._timer = None
        if not self.complete:
            self._fail(Timeout("the model server's answer did not end in time"))

    async def _wait(self) -> None:
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def read_head(self) -> None:
        """Wait for the status line and headers (``status``, ``headers``)."""
        while not self.head:
            if self.failure is not None:
                raise self.failure
            await self._wait()

    async def read(self, not_before: float = 0.0) -> bytes:
        """The body bytes that arrived since the last read, waiting for some; ``b""`` at its end.
        ``not_before`` (the loop's clock): bytes that arrive earlier wait for it, with whatever
        follows them until then (one timer), so a fast stream is read in fewer, larger pieces; the
        answer's end or a failure is returned at once."""
        while not self._pieces:
            if self.complete:
                return b""
            if self.failure is not None:
                raise self.failure
            await self._wait()
        if not_before > self.loop.time() and not self.complete and self.failure is None:
            timer = self.loop.call_at(not_before, self._wake)
            self._gathering = True
            try:
                await self._wait()
            finally:
                self._gathering = False
                timer.cancel()
        pieces = self._pieces
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        pieces.clear()
        self._buffered = 0
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        return data

    async def read_body(self, limit: int = 65536) -> bytes:
        """The rest of the body, up to ``limit`` bytes (an error answer's, to say what went wrong)."""
        parts, size = [], 0
        while size < limit:
            data = await self.read()
            if not data:
                break
            parts.append(data)
            size += len(data)
        return b"".join(parts)[:limit]

    def close(self) -> None:
        """Done with it: back to the pool when its answer was read to the end, else closed at once
        (the server sees the connection go and stops)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.complete and self.keep_alive and self.failure is None and not self.transport.is_closing():
            self.pool.keep(self)
        elif self.transport is not None:
            self.transport.abort()


class ConnectionPool:
    """The kept-alive connections to one server, for one event loop."""

    def __init__(self, base_url: str, *, keepalive_max: int = 256, keepalive_idle_s: float = 4.0):
        url = urlsplit(base_url)
        self.host = url.hostname or ""
        self.tls = url.scheme == "https"
        self.port = url.port or (443 if self.tls else 80)
        self.path = url.path.rstrip("/")
        self.host_header = url.netloc.rsplit("@", 1)[-1]
        self.keepalive_max = max(0, int(keepalive_max))
        self.keepalive_idle_s = keepalive_idle_s
        self._ssl = ssl.create_default_context() if self.tls else None
        self._idle: list[Connection] = []  # the last one kept is the first one taken (the least likely stale)
        self.loop = asyncio.get_running_loop()

    def keep(self, conn: Connection) -> None:
        if len(self._idle) >= self.keepalive_max:
            conn.transport.abort()
            return
        conn._reset()
        conn.idle_since = self.loop.time()
        self._idle.append(conn)

    def forget(self, conn: Connection) -> None:
        conn.idle_since = 0.0
        try:
            self._idle.remove(conn)
        except ValueError:
            pass

    def close(self) -> None:
        for conn in self._idle:
            conn.idle_since = 0.0
            conn.transport.abort()
        self._idle.clear()

    async def _connect(self, timeout_s: float) -> Connection:
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await self.loop.create_connection(
                    lambda: Connection(self.loop, self), self.host, self.port, ssl=self._ssl,
                    server_hostname=self.host if self.tls else None)
        except TimeoutError as exc:
            raise ConnectFailed(f"connecting to {self.host}:{self.port} timed out after {timeout_s:.1f}s") from exc
        except OSError as exc:
            raise ConnectFailed(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        return conn

    def _kept(self) -> Connection | None:
        oldest = self.loop.time() - self.keepalive_idle_s
        while self._idle:
            conn = self._idle.pop()
            kept_at, conn.idle_since = conn.idle_since, 0.0
            if conn.transport.is_closing() or kept_at < oldest:
                conn.transport.abort()
                continue
            return conn
        return None

    async def request(self, head: bytes, body: bytes, *, deadline: float, connect_timeout_s: float) -> Connection:
        """Send one request and wait for its answer's head; the connection is the caller's to
        ``read`` and ``close``. ``deadline`` (``time.monotonic``) bounds the whole answer, its
        body too. Raises ``ConnectFailed``, ``ConnectionLost`` or ``Timeout``."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("no time left for the call")
            conn = self._kept()
            reused = conn is not None
            if conn is None:
                conn = await self._connect(min(connect_timeout_s, remaining))
                remaining = deadline - time.monotonic()
            conn._timer = self.loop.call_at(self.loop.time() + max(0.0, remaining), conn._expire)
            conn.transport.write(head + body)
            try:
                await conn.read_head()
            except ConnectionLost:
                conn.close()
                if reused and not conn.received:
                    continue  # the server had closed the kept connection: nothing was answered, send again
                raise
            except BaseException:
                conn.close()
                raise
            return conn
