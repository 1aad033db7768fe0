"""The embedded backend: the same OpenAI-compatible client, pointed at the CPU model server.

``make run`` starts ``python -m modelserver`` in the foreground. A
one-shot command, a test session or a benchmark started from a plain shell has
no server yet: :func:`ensure_model_server` starts one (or reuses the one a
sibling process started) and registers a handle, so the last process holding it
stops it at exit (the same mechanism as the embedded PostgreSQL and Redis in
``core/servers.py``). A server it did not start (``make run``'s) is used
but never stopped.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
from django.conf import settings

from core.servers import EmbeddedServiceError, ROOT, RUN, VAR, _pid_alive, locked, register_handle
from generation.base import ChatRequest, GenerationError, GenerationResult
from generation.openai_http import OpenAIHTTPBackend, timeouts_from_settings
from modelserver import SERVED_MODEL_NAME, model_revision

logger = logging.getLogger(__name__)

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 10.0
HUNG_AFTER_S = 5.0  # a busy server still answers /health (generation runs off the GIL); a hung one does not


class EmbeddedBackend(OpenAIHTTPBackend):
    """SmolLM2-135M-Instruct on this machine's CPU, through the project's own model server."""

    name = "embedded"

    def __init__(self, *, host: str, port: int, autostart: bool = True, **transport):
        super().__init__(base_url=f"http://{host}:{port}", model_id=SERVED_MODEL_NAME,
                         model_revision=model_revision(), **transport)
        self.host, self.port = host, port
        self.autostart = autostart
        self._server_checked = False
        self._server_lock = threading.Lock()

    @classmethod
    def from_settings(cls) -> EmbeddedBackend:
        return cls(host=settings.EMBEDDED_MODEL_HOST, port=settings.EMBEDDED_MODEL_PORT, **timeouts_from_settings())

    def complete(self, request: ChatRequest) -> GenerationResult:
        self._ensure_server()
        return super().complete(request)

    def stream(self, request: ChatRequest) -> Iterator[str | GenerationResult]:
        self._ensure_server()
        yield from super().stream(request)

    async def astream(self, request: ChatRequest) -> AsyncIterator[str | GenerationResult]:
        if not self._server_checked and self.autostart:  # once a process; starting one blocks
            await asyncio.to_thread(self._ensure_server)
        async with contextlib.aclosing(super().astream(request)) as items:
            async for item in items:
                yield item

    def _ensure_server(self) -> None:
        """Once per process: make sure a model server answers (start one if none does)."""
        if self._server_checked or not self.autostart:
            return
        with self._server_lock:
            if self._server_checked:
                return
            def start():  # through the breaker: a server that would not start is not retried on every request
                try:
                    yield ensure_model_server(self.host, self.port)
                except EmbeddedServiceError as exc:
                    raise GenerationError("unavailable", str(exc)) from exc

            self._guarded(start)
            self._server_checked = True


# --------------------------------------------------------------------------- the server process

def _name(port: int) -> str:
    return f"modelserver-{port}"


def is_healthy(base_url: str, timeout_s: float = 0.5) -> bool:
    try:
        return httpx.get(base_url.rstrip("/") + "/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def start_model_server(host: str, port: int, *, ctx: int | None = None, threads: int | None = None,
                       timeout_s: float = START_TIMEOUT_S) -> subprocess.Popen:
    """Start ``python -m modelserver`` and wait until /health answers. The caller owns the process."""
    log_dir = VAR / "log"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "modelserver.log"
    command = [
        sys.executable, "-m", "modelserver", "--host", host, "--port", str(port),
        "--ctx", str(ctx or settings.EMBEDDED_MODEL_CTX), "--threads", str(threads or settings.EMBEDDED_MODEL_THREADS),
    ]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    url = f"http://{host}:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise EmbeddedServiceError(f"model server exited with {proc.returncode}: {_tail(log_path)}")
        if is_healthy(url):
            logger.info("embedded model server started on %s (pid %d, log %s)", url, proc.pid, log_path)
            return proc
        time.sleep(0.1)
    stop_model_server(proc.pid, proc)
    raise EmbeddedServiceError(f"model server did not answer on {url} within {timeout_s:.0f}s: {_tail(log_path)}")


def stop_model_server(pid: int, proc: subprocess.Popen | None = None) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT_S."""
    for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                return
            if proc is None and not _pid_alive(pid):
                return
            time.sleep(0.05)


def ensure_model_server(host: str | None = None, port: int | None = None) -> str:
    """Make sure a model server answers on host:port and return its base URL.

    Reuses whatever answers there; starts one otherwise. A server started here
    (or by a sibling process through this function) is stopped when the last
    process holding a handle on it exits.
    """
    host = host or settings.EMBEDDED_MODEL_HOST
    port = int(port or settings.EMBEDDED_MODEL_PORT)
    url = f"http://{host}:{port}"
    name = _name(port)
    state_path = RUN / f"{name}.json"
    with locked(name):
        state = _read_state(state_path)
        pid = state.get("pid")
        ours = bool(pid) and _pid_alive(pid) and state.get("port") == port
        if is_healthy(url) or (ours and is_healthy(url, timeout_s=HUNG_AFTER_S)):
            if ours:
                register_handle(name, lambda: _stop_and_forget(port))
            return url
        if ours:  # alive but not answering even slowly: hung; replace it
            stop_model_server(pid)
        try:
            proc = start_model_server(host, port)
        except EmbeddedServiceError:
            if is_healthy(url, timeout_s=2.0):  # `make run`'s server took the port meanwhile: use it
                return url
            raise
        state_path.write_text(json.dumps({"pid": proc.pid, "port": port, "host": host}))
        register_handle(name, lambda: _stop_and_forget(port))
    return url


def _stop_and_forget(port: int) -> None:
    """The last holder's exit: stop the server the state file names now, and drop the state."""
    state_path = RUN / f"{_name(port)}.json"
    pid = _read_state(state_path).get("pid")
    if pid:
        stop_model_server(pid)
    for path in (state_path, RUN / f"{_name(port)}.handles"):
        path.unlink(missing_ok=True)


def _read_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
