"""A fleet on one machine: throughput against the number of web processes, and the CPU each service spends.

    .venv/bin/python -m bench.fleet [--web 1,2,3,4] [--celery 1] [--seconds 30] [--hit-threads 16]
        [--miss-threads 1] [--model embedded|none] [--edit-every 10]

N web processes (N gunicorn instances of one gthread worker each, on their own loopback ports)
behind a small TCP round-robin balancer (``bench/_roundrobin.py``, one process), M Celery
workers, one PostgreSQL (the project's, or ``DATABASE_URL``) and one Redis (a private
``redis-server`` of the run). The traffic is ``bench.load_faults``'s mix and tenants, reused from
it: hit threads ask questions whose answers were offered beforehand (exact wording or a
paraphrase for the semantic cache, anonymous or as a customer, a fifth streamed), one miss thread
asks personal and new questions (retrieval, then the embedded CPU model: seconds each, so misses
are a small share). An editor changes one article every ``--edit-every`` seconds, so the Celery
workers purge and re-embed as they would in production. No fault is injected.

For each N, one measured window of ``--seconds``: requests per second, hit latency, and the CPU
time of every process group over the window (psutil), divided by the requests answered: CPU
milliseconds per request for the web processes, PostgreSQL, Redis, Celery, the balancer, the
model and the load generator, and how much of the machine everything else used meanwhile. From
the CPU per request, the ceiling of each shared service on a host of its own (Redis executes
commands on one core; PostgreSQL spreads over its cores) says which one saturates first when the
web tier is scaled out.

On one 2-core machine the web processes, the databases, the model and the load generator share
the same two cores (and other users of the machine take their share), so throughput stops
growing at N=1 or 2: the CPU per request, not the curve, is the figure that carries to a bigger
deployment. Ends with one line:
``web=… rps=… web_cpu_ms=… pg_cpu_ms=… redis_cpu_ms=… celery_cpu_ms=… saturates_first=… shared_limit=…``
"""
from __future__ import annotations

import argparse
import http.client
import json as _json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import ROOT, bench_result, ensure_schema, percentiles, setup

setup(private_redis=True)

import psutil  # noqa: E402

from bench.load_faults import (HOST, TENANTS, Load, free_port, offer_hits, setup_tenants,  # noqa: E402
                               start_gunicorn, verify, warm_up)

EDITED_ARTICLE = "two-factor"  # no offered answer cites it: edits purge nothing the hit threads rely on


# --------------------------------------------------------------------------- processes

class Fleet:
    """The processes of the run, stopped at the end (each in its own session, killed as a group)."""

    def __init__(self, args, redis_url: str, model_port: int, log_dir: Path):
        self.args, self.redis_url, self.model_port, self.log_dir = args, redis_url, model_port, log_dir
        self.web: list[tuple[int, subprocess.Popen]] = []
        self.celery: list[subprocess.Popen] = []
        self.proxy: subprocess.Popen | None = None
        self.proxy_port = free_port()
        self.model: subprocess.Popen | None = None

    def add_web(self, keys) -> int:
        port = free_port()
        proc = start_gunicorn(port, self.redis_url, self.model_port, 1, self.args.web_threads,
                              self.log_dir / "bench-fleet-gunicorn.log")
        self.web.append((port, proc))
        warm_up(f"http://{HOST}:{port}", keys, 2)  # this process loads the embedding model, not the measure
        return port

    def balance(self) -> None:
        """(Re)start the balancer over the current web processes."""
        self._stop(self.proxy)
        self.proxy = subprocess.Popen([sys.executable, "-m", "bench._roundrobin", str(self.proxy_port),
                                       *(str(p) for p, _ in self.web)], cwd=ROOT, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proxy.poll() is not None:
                raise SystemExit(f"the balancer exited with {self.proxy.returncode}")
            try:
                import socket

                with socket.create_connection((HOST, self.proxy_port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise SystemExit("the balancer did not start")

    def start_celery(self) -> None:
        from supportbot.celery import app

        env = dict(os.environ, REDIS_URL=self.redis_url, EMBEDDED_MODEL_PORT=str(self.model_port))
        for i in range(self.args.celery):
            log = self.log_dir / f"bench-fleet-celery{i}.log"
            nodename = f"fleet{i}-{os.getpid()}@localhost"
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "supportbot", "worker", "--loglevel", "INFO",
                     "--concurrency", "1", "-Q", "default,embedding,purge", "--hostname", nodename,
                     "--without-gossip", "--without-mingle", "--without-heartbeat"],
                    cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True)
            self.celery.append(proc)
            deadline = time.monotonic() + 300
            while not app.control.ping(destination=[nodename], timeout=0.5):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"celery worker {i} did not start; see {log}")

    @staticmethod
    def _stop(proc: subprocess.Popen | None) -> None:
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, 15)
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        self._stop(self.proxy)
        for _, proc in self.web:
            self._stop(proc)
        for proc in self.celery:
            self._stop(proc)
        if self.model is not None:
            from generation.local_model import stop_model_server

            stop_model_server(self.model.pid, self.model)


def postmaster_pid() -> int | None:
    """The local PostgreSQL's postmaster (the embedded one's pid file), None when it runs elsewhere."""
    from core.servers import VAR

    try:
        return int((VAR / "pg" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """CPU seconds (user + system) of each group of processes, between two snapshots."""

    def __init__(self, groups: dict[str, callable]):
        self.groups = groups  # name -> () -> root pids

    def snapshot(self) -> dict:
        shot = {"time": time.monotonic(), "machine": _machine_busy(), "groups": {}}
        for name, roots in self.groups.items():
            per_pid = {}
            for pid in roots():
                try:
                    root = psutil.Process(pid)
                    # this process's children are the services themselves: it counts alone
                    procs = [root] if pid == os.getpid() else [root, *root.children(recursive=True)]
                except psutil.Error:
                    continue
                for p in procs:
                    try:
                        t = p.cpu_times()
                        # a parent's reaped children (PostgreSQL backends that ended) count for the group
                        per_pid[p.pid] = t.user + t.system + (t.children_user + t.children_system if p is root else 0)
                    except psutil.Error:
                        pass
            shot["groups"][name] = per_pid
        return shot

    @staticmethod
    def delta(a: dict, b: dict) -> dict:
        out = {"seconds": b["time"] - a["time"], "machine_busy_s": b["machine"] - a["machine"], "groups": {}}
        for name, after in b["groups"].items():
            before = a["groups"].get(name, {})
            out["groups"][name] = sum(t - before.get(pid, 0.0) for pid, t in after.items())
        return out


def _machine_busy() -> float:
    t = psutil.cpu_times()
    return t.user + t.nice + t.system + getattr(t, "irq", 0) + getattr(t, "softirq", 0) + getattr(t, "steal", 0)


# --------------------------------------------------------------------------- the load generator

class KeepAliveClient:
    """``httpx.Client.post`` over one ``http.client`` keep-alive connection per thread: the load
    generator shares the machine with what it measures, and httpx costs it several times the CPU."""

    def __init__(self, timeout: float = 60):
        self.timeout = timeout
        self.conn: http.client.HTTPConnection | None = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.conn is not None:
            self.conn.close()

    def post(self, url: str, json: dict | None = None, headers: dict | None = None) -> "_Response":
        parts = urlsplit(url)
        body = _json.dumps(json or {}).encode()
        for attempt in (1, 2):  # the server may have closed an idle keep-alive connection
            if self.conn is None:
                self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=self.timeout)
            try:
                self.conn.request("POST", parts.path, body=body,
                                  headers={"Content-Type": "application/json", **(headers or {})})
                response = self.conn.getresponse()
                return _Response(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


class _Response:
    def __init__(self, status: int, headers: dict, raw: bytes):
        self.status_code, self.headers, self._raw = status, headers, raw

    @property
    def text(self) -> str:
        return self._raw.decode("utf-8", "replace")

    def json(self):
        return _json.loads(self._raw)


# --------------------------------------------------------------------------- the editor

def editor(tenants, stop: threading.Event, every_s: float, counts: Counter) -> None:
    """Change one article now and then: its purge and re-embedding run on the Celery workers."""
    from django.db import close_old_connections

    from bench.load_faults import ARTICLES
    from ingestion.parsing import ParsedArticle
    from ingestion.services import article_upsert

    title, body = ARTICLES[EDITED_ARTICLE]
    n = 0
    while not stop.wait(every_s):
        n += 1
        for slug, tenant in tenants.items():
            text = body.format(name=tenant.name) + f" Revised guidance number {n}: keep your recovery codes offline."
            article_upsert(tenant, ParsedArticle(EDITED_ARTICLE, title, "en",
                                                 f"https://help.{slug}.example/en/{EDITED_ARTICLE}", text))
            counts["edits"] += 1
        close_old_connections()


# --------------------------------------------------------------------------- one measured window

def window(fleet: Fleet, keys, meter: CpuMeter, args, seed: int) -> tuple[dict, list]:
    load = Load(f"http://{HOST}:{fleet.proxy_port}", keys, args.seconds, seed)
    load.client_class = KeepAliveClient
    load.phase = f"web{len(fleet.web)}"
    workers = [threading.Thread(target=load.hit_worker, args=(i,), daemon=True) for i in range(args.hit_threads)]
    workers += [threading.Thread(target=load.miss_worker, args=(i,), daemon=True) for i in range(args.miss_threads)]
    for w in workers:
        w.start()
    load.stop.wait(args.ramp)  # connections open, threads busy
    first, a = len(load.results), meter.snapshot()
    load.stop.wait(args.seconds)
    last, b = len(load.results), meter.snapshot()
    load.stop.set()
    for w in workers:
        w.join(timeout=90)
    done = load.results[first:last]
    usage = CpuMeter.delta(a, b)
    seconds = usage["seconds"]
    kinds = Counter(r.kind for r in done)
    served = Counter(r.body.get("cache", {}).get("layer", "-") for r in done if r.kind == "hit")
    ok = [r for r in done if r.status == 200]
    hits = [r.latency_ms for r in done if r.kind == "hit" and r.status == 200]
    n = max(1, len(done))
    figures = {
        "web": len(fleet.web), "requests": len(done), "rps": len(done) / seconds, "ok": len(ok),
        "errors": len(done) - len(ok), "kinds": dict(kinds), "hits_served_by": dict(served),
        "hit_latency": percentiles(hits),
        "cpu_cores": {k: v / seconds for k, v in usage["groups"].items()},
        "cpu_ms_per_request": {k: v * 1000 / n for k, v in usage["groups"].items()},
        "machine_busy_cores": usage["machine_busy_s"] / seconds,
    }
    ours = sum(usage["groups"].values()) / seconds
    figures["other_users_cores"] = max(0.0, figures["machine_busy_cores"] - ours)
    return figures, load.results


def print_window(f: dict) -> None:
    cores = ", ".join(f"{k} {v:.2f}" for k, v in f["cpu_cores"].items())
    per = ", ".join(f"{k} {v:.2f}" for k, v in f["cpu_ms_per_request"].items())
    h = f["hit_latency"]
    print(f"web={f['web']}: {f['requests']} requests, {f['rps']:.1f}/s ({f['errors']} not 200; {f['kinds']}; hits "
          f"served by {f['hits_served_by']}); hit p50={h.get('p50', 0):.1f} ms p99={h.get('p99', 0):.1f} ms", flush=True)
    print(f"   cores used: {cores}; machine {f['machine_busy_cores']:.2f} of {psutil.cpu_count()} "
          f"(other users {f['other_users_cores']:.2f})", flush=True)
    print(f"   CPU ms per request: {per}", flush=True)


def ceilings(f: dict, pg_cores: int) -> dict:
    """Requests per second each shared service could serve on a host of its own, from its CPU per
    request: Redis executes commands on one core, PostgreSQL spreads over ``pg_cores``."""
    per, out = f["cpu_ms_per_request"], {}
    if per.get("redis"):
        out["redis"] = 1000 / per["redis"]
    if per.get("postgres"):
        out["postgres"] = pg_cores * 1000 / per["postgres"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", default="1,2,3,4", help="numbers of web processes to measure, ascending")
    parser.add_argument("--web-threads", type=int, default=8, help="threads of each web process")
    parser.add_argument("--celery", type=int, default=1, help="Celery workers (concurrency 1 each)")
    parser.add_argument("--seconds", type=float, default=30.0, help="measured window per N")
    parser.add_argument("--ramp", type=float, default=3.0, help="load before each window starts")
    parser.add_argument("--hit-threads", type=int, default=16)
    parser.add_argument("--miss-threads", type=int, default=1)
    parser.add_argument("--model", choices=("embedded", "none"), default="embedded",
                        help="misses go to the embedded CPU model, or to a closed port (they fail fast)")
    parser.add_argument("--edit-every", type=float, default=10.0, help="seconds between article edits (0: none)")
    parser.add_argument("--pg-cores", type=int, default=8, help="cores of the PostgreSQL host the ceilings assume")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    try:
        steps = [int(x) for x in args.web.split(",") if x]
    except ValueError:
        parser.error("--web: comma-separated numbers")
    if not steps or steps != sorted(set(steps)) or steps[0] < 1:
        parser.error("--web: ascending numbers >= 1")

    from core.servers import VAR
    from core.models import Tenant

    ensure_schema()
    redis_url = os.environ["REDIS_URL"]
    log_dir = VAR / "log"
    log_dir.mkdir(parents=True, exist_ok=True)
    model_port = free_port()
    fleet = Fleet(args, redis_url, model_port, log_dir)
    counts: Counter = Counter()
    stop_editor = threading.Event()
    windows, all_results = [], []
    try:
        if args.model == "embedded":
            from generation.local_model import start_model_server

            fleet.model = start_model_server(HOST, model_port)
        tenants, keys = setup_tenants()
        owners = offer_hits(tenants)
        fleet.start_celery()
        print(f"tenants {', '.join(tenants)}: {len(owners)} answers offered; {args.celery} Celery worker(s); model: "
              f"{args.model}; redis {redis_url}; load generator: {args.hit_threads} hit + {args.miss_threads} miss "
              f"threads in this process", flush=True)
        pg = postmaster_pid()
        meter = CpuMeter({
            "web": lambda: [p.pid for _, p in fleet.web],
            "balancer": lambda: [fleet.proxy.pid] if fleet.proxy else [],
            "postgres": lambda: [pg] if pg else [],
            "redis": lambda: [int(os.environ["BENCH_PRIVATE_REDIS"])],
            "celery": lambda: [p.pid for p in fleet.celery],
            "model": lambda: [fleet.model.pid] if fleet.model else [],
            "load_generator": lambda: [os.getpid()],
        })
        if pg is None:
            print("PostgreSQL runs elsewhere (DATABASE_URL): its CPU is not measured", flush=True)
        if args.edit_every > 0:
            threading.Thread(target=editor, args=(tenants, stop_editor, args.edit_every, counts), daemon=True).start()
        for n in steps:
            while len(fleet.web) < n:
                fleet.add_web(keys)
            fleet.balance()
            f, results = window(fleet, keys, meter, args, args.seed + n)
            all_results += results
            windows.append(f)
            print_window(f)
        stop_editor.set()
        time.sleep(2)  # the web processes' record writers flush
        summary = verify(all_results, owners, tenants)
    finally:
        stop_editor.set()
        fleet.stop()
        Tenant.objects.filter(slug__in=TENANTS).delete()

    best = max(windows, key=lambda f: f["rps"])
    per = best["cpu_ms_per_request"]
    # on this machine: the service that used the most CPU (the load generator and the model are not the product's
    # request path: in production they are the customers and a GPU fleet)
    busiest = max((k for k in per if k not in ("load_generator", "model")), key=lambda k: best["cpu_cores"][k])
    caps = ceilings(best, args.pg_cores)
    shared = min(caps, key=caps.get) if caps else "unknown"
    print("\nthroughput by web processes: " + ", ".join(f"{f['web']}: {f['rps']:.0f}/s" for f in windows))
    print(f"at the best N ({best['web']}), CPU ms per request (= cores per 1,000 requests/s): "
          + ", ".join(f"{k} {v:.2f}" for k, v in per.items()))
    print(f"saturates first on this machine: {busiest} ({best['cpu_cores'][busiest]:.2f} cores); the web tier "
          "scales out, so add web processes (hosts) first")
    print(f"shared services on hosts of their own (from CPU per request): redis (1 core) ~{caps.get('redis', 0):.0f}/s, "
          f"postgres ({args.pg_cores} cores) ~{caps.get('postgres', 0):.0f}/s -> the first shared limit: {shared}")
    flat = len(windows) > 1 and windows[-1]["rps"] < 1.15 * windows[0]["rps"]
    others = max(f["other_users_cores"] for f in windows)
    if others > 0.2:
        print(f"other users of this machine took up to {others:.2f} cores during the windows: the growth with N is "
              "partly the scheduler giving more processes a larger share of a contended machine")
    if flat:
        print(f"throughput stopped growing with N: this machine has {psutil.cpu_count()} cores for everything "
              f"(the machine was {best['machine_busy_cores']:.2f} cores busy, {best['other_users_cores']:.2f} of them "
              "other users); the CPU per request is the figure to plan with, not the curve")
    print(f"article edits during the run: {counts['edits']}; records checked: {summary['records']}, lost "
          f"{summary['lost']}, cross-scope serves {summary['cross_scope_serves']}")
    figures = {"windows": windows, "ceilings_rps": caps, "saturates_first": busiest, "shared_limit": shared,
               "pg_cores_assumed": args.pg_cores, "edits": counts["edits"], "verify": summary,
               "flat_on_this_machine": flat, "cores": psutil.cpu_count()}
    rates = ",".join(f"{f['rps']:.0f}" for f in windows)
    last = (f"web={','.join(str(f['web']) for f in windows)} rps={rates} "
            f"web_cpu_ms={per.get('web', 0):.2f} pg_cpu_ms={per.get('postgres', 0):.2f} "
            f"redis_cpu_ms={per.get('redis', 0):.2f} celery_cpu_ms={per.get('celery', 0):.2f} "
            f"saturates_first={busiest} shared_limit={shared}")
    bench_result("fleet", figures, last)
    return 0 if summary["cross_scope_serves"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
