"""Shared helpers for the benchmarks in ``bench/``.

A benchmark is a module run as ``python -m bench.NAME``. It starts what it needs the way the tests
do (``setup()``: settings start the embedded PostgreSQL and Redis when ``DATABASE_URL`` /
``REDIS_URL`` are unset), works in scratch tenants of its own (``scratch_tenants``) so a running
app's data is never touched, prints its figures and ends with exactly one summary line, which
``bench_result`` also stores in ``var/bench/NAME.json`` for ``bench/all.py`` to render
``docs/benchmarks.md``.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# BENCH_RESULTS_DIR: elsewhere (the smoke tests run every benchmark tiny, and must not overwrite real results)
RESULTS_DIR = Path(os.environ.get("BENCH_RESULTS_DIR") or ROOT / "var" / "bench")


def _shared_dir() -> Path:
    """The shared data folder (public data sets uncompressed, the eval pairs): ``ASK_SHARED_DIR``, else a
    folder named ``shared`` beside the checkout, or beside the folder that holds it (a worktree)."""
    if os.environ.get("ASK_SHARED_DIR"):
        return Path(os.environ["ASK_SHARED_DIR"])
    candidates = (ROOT.parent / "shared", ROOT.parent.parent / "shared")
    return next((c for c in candidates if c.is_dir()), candidates[0])


# ASK_SHARED_DIR: the shared data folder the benchmarks read (``data/``, ``eval/``)
SHARED_DIR = _shared_dir()
SHARED_DATA = SHARED_DIR / "data"
SCRATCH_PREFIX = "bench-"  # every scratch tenant's slug starts with this, then a run id


def setup(*, private_redis: bool = False) -> None:
    """Configure Django for a benchmark process (idempotent).

    ``private_redis``: run against a redis-server of this process's own (stopped at exit), which
    its child processes inherit through ``REDIS_URL``. A benchmark then neither touches the app's
    caches nor sees them cleared under it (the test suite empties Redis before every test)."""
    if private_redis and not os.environ.get("BENCH_PRIVATE_REDIS"):
        _start_private_redis()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import django

    django.setup()


def _start_private_redis() -> None:
    import atexit
    import tempfile

    from core.servers import start_redis

    proc = start_redis(data_dir=Path(tempfile.mkdtemp(prefix="bench-redis-")))
    os.environ["REDIS_URL"] = f"redis://127.0.0.1:{proc.port}/0"
    os.environ["BENCH_PRIVATE_REDIS"] = str(proc.pid)  # children use it, and start none of their own

    def stop():
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - best effort at exit
                proc.kill()

    atexit.register(stop)


def ensure_schema() -> None:
    """Apply migrations only when the database has never been migrated (a fresh checkout);
    a database someone runs the app on is left as it is."""
    from django.db import connection
    from django.core.management import call_command

    if "caching_semanticentry" not in connection.introspection.table_names():
        call_command("migrate", verbosity=0)


def percentiles(samples_ms: Iterable[float]) -> dict[str, float]:
    """p50/p90/p99/mean/max of latencies in milliseconds (nearest-rank percentiles)."""
    values = sorted(samples_ms)
    if not values:
        return {"n": 0}

    def rank(p: float) -> float:
        return values[min(len(values) - 1, max(0, math.ceil(p / 100 * len(values)) - 1))]

    return {"n": len(values), "p50": rank(50), "p90": rank(90), "p99": rank(99),
            "mean": statistics.fmean(values), "max": values[-1]}


def fmt_ms(stats: dict[str, float]) -> str:
    if not stats.get("n"):
        return "no samples"
    return (f"p50={stats['p50']:.2f} ms p90={stats['p90']:.2f} ms p99={stats['p99']:.2f} ms "
            f"mean={stats['mean']:.2f} ms (n={stats['n']})")


class Stopwatch:
    def __init__(self):
        self.started = time.perf_counter()

    @property
    def ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


# --------------------------------------------------------------------------- scratch tenants

class Scratch:
    """Scratch tenants of one benchmark run, and the Redis keys the run created."""

    def __init__(self, label: str):
        self.run = f"{SCRATCH_PREFIX}{label}-{uuid.uuid4().hex[:6]}"
        self.tenants = []
        self._preexisting_embeddings: set[bytes] = set()
        self._embedding_keys: set[bytes] = set()

    def tenant(self, suffix: str = "", *, locales=("en",), **fields):
        from core.models import Tenant

        defaults = {"name": f"Bench {suffix or len(self.tenants)}", "locales": list(locales),
                    "default_locale": locales[0], "semantic_mode": Tenant.SemanticMode.SERVE}
        defaults.update(fields)
        tenant = Tenant.objects.create(slug=f"{self.run}-{suffix or len(self.tenants)}"[:50], **defaults)
        self.tenants.append(tenant)
        return tenant

    def article(self, tenant, external_id: str, title: str, body: str, locale: str = "en"):
        """An article of a scratch tenant (versioned and chunked like any other)."""
        from ingestion.parsing import ParsedArticle
        from ingestion.services import article_upsert

        parsed = ParsedArticle(external_id, title, locale, f"https://bench.example/{tenant.slug}/{external_id}", body)
        return article_upsert(tenant, parsed)[0]

    def will_embed(self, texts: Iterable[str]) -> None:
        """Note texts the run is about to embed: their cache keys are removed at the end unless
        they were cached before the run (someone else's)."""
        from retrieval.embeddings import get_embedder
        from core.redis_client import get_redis

        embedder = get_embedder()
        keys = [embedder.cache_key(t).encode() for t in texts]
        keys = [k for k in keys if k not in self._embedding_keys and k not in self._preexisting_embeddings]
        if not keys:
            return
        r = get_redis()
        for key, exists in zip(keys, _exists_many(r, keys)):
            (self._preexisting_embeddings if exists else self._embedding_keys).add(key)

    def drop(self) -> None:
        """Delete the scratch tenants (with everything they own) and the Redis keys the run created."""
        from django.db import connection

        from caching.layers import embedding_layer, exact_layer, search_layer
        from caching.models import EntryCitation, PairVerification, SemanticEntry
        from core.cachelayer import CacheScope
        from core.models import Tenant
        from core.redis_client import get_redis, tenant_keys_pattern

        ids = [t.pk for t in self.tenants]
        if not ids:
            return
        # every cache's share of each scratch tenant (its entries, their indexes and reverse indexes,
        # the vectors of its questions), through the layers that own those keys
        for tenant in self.tenants:
            for layer in (exact_layer, search_layer, embedding_layer):
                layer.purge_scope(CacheScope(tenant.pk, tenant.slug))
        r = get_redis()
        # what is left of a tenant (rate-limit counters, revisions) carries its hash tag too
        doomed = {k for pk in ids for k in r.scan_iter(match=tenant_keys_pattern(pk), count=1000)}
        doomed = sorted(doomed | set(self._embedding_keys))
        for start in range(0, len(doomed), 1000):
            r.delete(*doomed[start:start + 1000])
        # Bulk-inserted entries are deleted in SQL: the ORM's cascade would load each one.
        entries = SemanticEntry.objects.filter(tenant_id__in=ids)
        EntryCitation.objects.filter(entry__in=entries).delete()
        PairVerification.objects.filter(entry__in=entries).delete()  # near-miss checks (aliases) of the run
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {SemanticEntry._meta.db_table} WHERE tenant_id = ANY(%s)", [ids])
        Tenant.objects.filter(pk__in=ids).delete()
        self.tenants = []


def _exists_many(r, keys: list[bytes]) -> list[bool]:
    pipe = r.pipeline(transaction=False)
    for key in keys:
        pipe.exists(key)
    return [bool(n) for n in pipe.execute()]


@contextlib.contextmanager
def scratch_tenants(label: str) -> Iterator[Scratch]:
    """``with scratch_tenants("latency") as scratch: t = scratch.tenant("a")`` and everything
    the run created is gone afterwards, even when the benchmark fails."""
    scratch = Scratch(label)
    try:
        yield scratch
    finally:
        scratch.drop()


# --------------------------------------------------------------------------- results

def bench_result(name: str, figures: dict, last_line: str) -> Path:
    """Store a run's figures and summary line in ``var/bench/NAME.json`` (the latest run, plus a
    short history) and print the summary line last."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    try:
        previous = json.loads(path.read_text())
    except (OSError, ValueError):
        previous = {}
    run = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "figures": figures, "last_line": last_line}
    history = ([{k: previous[k] for k in ("date", "last_line") if k in previous}] if previous.get("last_line") else [])
    history += previous.get("history", [])
    data = {"name": name, **run, "history": history[:10]}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)
    print(last_line, flush=True)
    return path


class TraceSink:
    """An OTLP/HTTP endpoint that accepts span batches and drops them (the exporter's work is
    measured, a collector's is not)."""

    def __init__(self):
        sink = self
        self.batches = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sink.batches += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def start_celery_worker(name: str, queue: str, *, concurrency: int = 1, env: dict | None = None,
                        timeout_s: float = 120.0) -> tuple[subprocess.Popen, str]:
    """A real Celery worker of this checkout on ``queue`` (threads pool, no gossip), started as a
    subprocess with ``env`` (default: this process's), once it answers a ping: ``(process, nodename)``."""
    from django.conf import settings

    from supportbot.celery import app

    nodename = f"bench-{name}-{uuid.uuid4().hex[:8]}@localhost"
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "supportbot", "worker", "--loglevel", "WARNING", "-Q", queue,
         "--pool", "threads", "--concurrency", str(concurrency), "--hostname", nodename, "--without-gossip",
         "--without-mingle", "--without-heartbeat"],
        env=dict(os.environ) if env is None else env, cwd=settings.BASE_DIR, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"celery worker exited with {proc.returncode}")
        if app.control.ping(destination=[nodename], timeout=0.5):
            return proc, nodename
    proc.kill()
    raise RuntimeError("celery worker did not answer a ping")


def stop_process(proc: subprocess.Popen, wait_s: float = 30.0) -> None:
    """Terminate a subprocess this run started, killing it after ``wait_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
