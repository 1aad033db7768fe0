"""Concurrent streaming asks on one machine: the async server (ASGI) against the gthread server.

    .venv/bin/python -m bench.stream_load [--ramp 16,32,100,300,1000,2000] [--servers async,threads]
                                          [--arrival-per-s 50] [--hold-s 10] [--interval-ms 100]
                                          [--hit-clients 4] [--hit-rate 100] [--workers N]

A smoke run (seconds): ``--ramp 2 --interval-ms 50 --hold-s 1 --arrival-per-s 10 --hit-clients 1 --hit-rate 20 --workers 1``.

A stand-in model server (``modelserver.standin``: the OpenAI streaming protocol, a word every
``--interval-ms``, as vLLM would stream) answers every fresh ask. Each server is started as ``make
run`` starts it (``supportbot.run.web_command``: the same workers; rate limits and in-flight caps
raised past the load sent). Each step of the ramp then opens that many streamed API asks at a
steady ``--arrival-per-s`` (50 a second: 1,000 streams arrive over 20 s), waits a second for the last
ones to settle, and holds every one of them open for ``--hold-s`` (10 s) more: the stand-in's answers
are made that long for the step. Beside the streams, ``--hit-clients`` processes send ``--hit-rate``
exact hits a second, paced (a probe, not a flood), on keep-alive connections, from before the first
arrival to the end of the hold. Its figures, for each of the two phases (**arriving**: new asks coming
in; **held**: every stream open, none arriving): the exact hits' p50/p99 and the CPU seconds of the web
server, the stand-in model and the stream reader, each on its own, so what the web server itself
costs is plain. From those, per unit of work, the web server's CPU for an exact hit (the first step,
of no streams), for a second of an open stream (the hold's, less its exact hits), and for a fresh ask
(the arrival's, less its exact hits and the stream-seconds open meanwhile). The streams are read by one
process on uvloop, one read an event. A step is **held** when every stream was open through the hold,
every stream reached its ``done`` event in time (its length plus ``--slack-s``) with no HTTP error, no
exact hit failed, and the exact hits' p99 while the streams were held stayed within ``--p99-ms`` (50);
the arrival's p99 is reported beside it. A server's ramp stops at its first step with errors (a step
that only misses the p99 goes on, so the figures show the shape on a busy machine).

The scratch tenant holds two articles of the demo knowledge base (``KB_DEMO_DIR``: the return
policy and the opening hours), so the streamed question passes the answerability check as a real
customer's would; a warm-up stream before the ramp proves it (the run stops, saying why, when the
question is handed off instead of streamed). The stand-in's words share none with a passage, so
each streamed answer, once written, cites nothing and ends handed off (``not_covered``): none is
admitted, and every ask of the step is a fresh stream (a miss of the exact and semantic caches, a
hit of the search cache) that streams all its words. Memory per stream is the growth of the web
processes' resident memory (gunicorn's master and workers) from idle to the peak of the hold, over
the streams open. The load average of the machine (shared with other work) is printed with each step.
Everything lives in a scratch tenant deleted at the end.
Ends with one line:
``streams_held_async=… streams_held_threads=… exact_p99_ms_at_peak=… mb_per_stream=…
exact_p99_ms_arriving_at_peak=… arrival_per_s=… fresh_ask_cpu_ms=… stream_s_cpu_ms=…``
(the async server's largest held step: the exact hits' p99 while held and while arriving, the memory
per stream, and the web CPU of a fresh ask and of a stream-second).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from bench.common import ROOT, bench_result, ensure_schema, percentiles, scratch_tenants, setup

STANDIN_MODEL = "standin-model"
os.environ["VLLM_MODEL"] = STANDIN_MODEL
os.environ["VLLM_MODEL_REVISION"] = "standin"
os.environ["ASK_ANSWERER"] = "model"
os.environ["GENERATION_MAX_TOKENS"] = "8192"  # the stand-in's answers outlast the longest step (a cache-key input: set for both sides)
os.environ.setdefault("VLLM_BASE_URL", "http://127.0.0.1:9")  # replaced by the stand-in's address below
setup(private_redis=True)

import psutil  # noqa: E402
import uvloop  # noqa: E402
from django.conf import settings  # noqa: E402

HOST = "127.0.0.1"
P99_TARGET_MS = 50.0
ARRIVAL_PER_S = 50.0  # new streamed asks a second while a step ramps up (the default; --arrival-per-s)
SETTLE_S = 1.0  # after the last arrival, before the hold is timed: the last asks' first tokens
HIT_TIMEOUT_S = 10.0
DEMO_ARTICLES = ("acme/en/return-policy.md", "acme/en/opening-hours.md")  # of the demo knowledge base
STREAM_QUESTION = "What is the return policy?"  # answered by return-policy, as the stand-in's words say
HIT_QUESTION = "What are your opening hours?"
HIT_ANSWER = "Customer support in the US and Canada is open Monday to Friday, 8:00 a.m. to 8:00 p.m. MT [1]."


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- processes

@contextlib.contextmanager
def standin_model(interval_ms: float):
    """The stand-in model server (its answers' length set for each step: ``standin_configure``)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "modelserver.standin", "--host", HOST, "--port", str(port),
                             "--interval-ms", str(interval_ms), "--no-cite"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(port, "/health", 30)
        yield port, proc
    finally:
        proc.terminate()
        proc.wait(10)


def wait_http(port: int, path: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", path)
            if conn.getresponse().status < 500:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing answered on port {port} within {timeout_s:.0f} s")
        time.sleep(0.2)


@contextlib.contextmanager
def web_server(kind: str, model_port: int, workers: int):
    """``make run``'s web server (``web_command``) on a free port against the stand-in model."""
    from supportbot.run import web_command

    port = free_port()
    metrics_dir = tempfile.mkdtemp(prefix="bench-prometheus-")
    env = dict(os.environ, VLLM_BASE_URL=f"http://{HOST}:{model_port}", PROMETHEUS_MULTIPROC_DIR=metrics_dir,
               RATELIMIT_CLIENT_REQUESTS="1000000000", RATELIMIT_TENANT_REQUESTS="1000000000",
               INFLIGHT_CLIENT_MAX="1000000", INFLIGHT_TENANT_MAX="1000000", GENERATION_MAX_RETRIES="0",
               WEB_SERVER=kind, LOG_LEVEL="WARNING")  # no INFO line per model request at a thousand streams
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    config = SimpleNamespace(WEB_HOST=HOST, WEB_PORT=port, WEB_WORKERS=workers,
                             WEB_THREADS=settings.WEB_THREADS, WEB_DRAIN_GRACE_S=5, WEB_KEEPALIVE_S=settings.WEB_KEEPALIVE_S,
                             WEB_SERVER=kind)
    command = [c for c in web_command(config) if c not in ("--access-logfile", "-")] + ["--log-level", "warning"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    try:
        wait_http(port, "/healthz", 120)
        wait_quiet(proc)
        yield port, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(metrics_dir, ignore_errors=True)


def wait_quiet(proc: subprocess.Popen, timeout_s: float = 240.0) -> None:
    """Wait until the web processes have finished starting (every worker loads the embedding model
    at start, seconds of CPU each): their CPU time grows by less than a tenth of a second a second."""
    deadline = time.monotonic() + timeout_s
    before = cpu_s(proc)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_s(proc)
        if now - before < 0.1:
            return
        before = now


def cpu_s(proc: subprocess.Popen) -> float:
    """CPU seconds (user and system) a process and its children have used (the web server: gunicorn's master and workers)."""
    try:
        root = psutil.Process(proc.pid)
        return sum(sum(p.cpu_times()[:2]) for p in [root, *root.children(recursive=True)])
    except psutil.Error:
        return 0.0


def rss_mb(proc: subprocess.Popen) -> float:
    try:
        root = psutil.Process(proc.pid)
        return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / 1e6
    except psutil.Error:
        return 0.0


# --------------------------------------------------------------------------- exact-hit traffic (own processes)

def hit_client(port: int, url: str, start_at: float, stop_at: float, per_s: float, out) -> None:
    """Exact hits at a steady ``per_s`` on one keep-alive connection from ``start_at`` to ``stop_at``
    (wall clock; a hit sent late is not made up for: the probe measures, it does not flood); sends
    back (sent at, ms, ok) of each and the CPU seconds this process used."""
    body = json.dumps({"question": HIT_QUESTION}).encode()
    headers = {"Content-Type": "application/json"}
    conn, samples = http.client.HTTPConnection(HOST, port, timeout=HIT_TIMEOUT_S), []
    period, cpu_before = 1.0 / per_s, time.process_time()
    next_at = start_at
    while True:
        now = time.time()
        if now >= stop_at:
            break
        if now < next_at:
            time.sleep(next_at - now)
        next_at = max(next_at + period, time.time())
        sent_at, started = time.time(), time.perf_counter()
        ok = False
        try:
            conn.request("POST", url, body=body, headers=headers)
            response = conn.getresponse()
            payload = json.loads(response.read())
            ok = response.status == 200 and payload["cache"]["layer"] == "exact"
        except (OSError, http.client.HTTPException, ValueError, KeyError):
            conn.close()
            conn = http.client.HTTPConnection(HOST, port, timeout=HIT_TIMEOUT_S)
        samples.append((sent_at, (time.perf_counter() - started) * 1000, ok))
    out.send((samples, time.process_time() - cpu_before))


# --------------------------------------------------------------------------- streams (this process, asyncio)

async def one_stream(port: int, url: str, deadline_s: float, started_at: float, live: list) -> str:
    """One streamed ask read to its ``done`` event: "ok", or what went wrong. The body is read in
    whatever pieces arrive and cut into events at their blank lines (the chunked encoding's size
    lines fall between events): one read an event, so the reader costs the machine little."""
    body = json.dumps({"question": STREAM_QUESTION, "stream": True}).encode()
    writer = None
    try:
        await asyncio.sleep(max(0.0, started_at - time.monotonic()))
        async with asyncio.timeout(deadline_s):
            reader, writer = await asyncio.open_connection(HOST, port)
            writer.write(b"POST " + url.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            status = (await reader.readline()).split(b" ", 2)
            if len(status) < 2 or status[1] != b"200":
                return f"http {status[1].decode() if len(status) > 1 else '?'}"
            live[0] += 1
            live[1] = max(live[1], live[0])
            deltas, rest = 0, b""
            try:
                while True:
                    piece = await reader.read(65536)
                    if not piece:
                        return "closed before done"
                    *events, rest = (rest + piece).split(b"\n\n")
                    for event in events:
                        deltas += b"event: delta" in event
                        at = event.find(b"event: done\ndata: ")
                        if at >= 0:
                            done = json.loads(event[at + len(b"event: done\ndata: "):].split(b"\n", 1)[0])
                            if done.get("status") in ("unavailable", "interrupted"):
                                return f"answer {done['status']}"  # the model failed (a timeout, the breaker)
                            return "ok" if deltas > 1 else "not streamed " + str(done.get("status"))
            finally:
                live[0] -= 1
    except TimeoutError:
        return "timeout"
    except OSError as exc:
        return type(exc).__name__
    finally:
        if writer is not None:
            writer.close()


class Meter:
    """The CPU seconds of the web server, the stand-in model and this process (the stream reader),
    read at the marks of a step."""

    def __init__(self, web, standin):
        self.web, self.standin = web, standin

    def read(self) -> tuple[float, float, float]:
        return cpu_s(self.web), cpu_s(self.standin), sum(os.times()[:2])


async def stream_step(port: int, url: str, n: int, plan: SimpleNamespace, meter: Meter, proc) -> dict:
    """Open ``n`` streams evenly over ``plan.ramp_in_s`` from ``plan.t0`` (the loop's clock) and read
    them to their end; meanwhile read the CPU meters at the phases' marks and sample the streams
    open and the web server's memory every half second."""
    live = [0, 0]
    tasks = [asyncio.create_task(one_stream(port, url, plan.deadline_s, plan.t0 + plan.ramp_in_s * i / n, live))
             for i in range(n)]
    marks: dict = {}
    samples: list = []  # (loop time, streams open, web RSS MB)

    async def read_marks():
        for name, at in (("start", plan.t0), ("arrived", plan.hold_from), ("hold_end", plan.hold_to)):
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            marks[name] = (time.monotonic(), *meter.read(), live[0])

    async def sample():
        while True:
            samples.append((time.monotonic(), live[0], rss_mb(proc)))
            await asyncio.sleep(0.5)

    helpers = [asyncio.create_task(read_marks()), asyncio.create_task(sample())]
    outcomes = await asyncio.gather(*tasks)
    await helpers[0]  # a step of no streams: the marks still end the step
    helpers[1].cancel()
    counts: dict = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    return {"outcomes": counts, "peak_open": live[1], "marks": marks, "samples": samples}


def run_step(port: int, url: str, n: int, args, proc) -> dict:
    """One step: ``n`` streams arriving at ``--arrival-per-s``, all held open for ``--hold-s``, exact
    hits timed beside them throughout. Its figures, by phase: the arrival (the first ask to the last
    ask plus a second to settle) and the hold (every stream open, none arriving)."""
    ramp_in_s = n / args.arrival_per_s
    settle_s = SETTLE_S if n else 0.0
    stream_s = ramp_in_s + settle_s + args.hold_s  # each answer outlasts the last arrival by the hold
    tokens = max(2, math.ceil(stream_s * 1000 / args.interval_ms))
    standin_configure(args.standin_port, tokens)
    lead_s = 0.5  # the hit clients start before the first ask
    t0_wall, t0 = time.time() + lead_s, time.monotonic() + lead_s
    plan = SimpleNamespace(t0=t0, ramp_in_s=ramp_in_s, hold_from=t0 + ramp_in_s + settle_s,
                           hold_to=t0 + ramp_in_s + settle_s + args.hold_s,
                           deadline_s=tokens * args.interval_ms / 1000 + args.slack_s)
    pipes, hitters = [], []
    for _ in range(args.hit_clients):
        parent, child = multiprocessing.Pipe(duplex=False)
        p = multiprocessing.Process(target=hit_client, daemon=True, args=(
            port, url, t0_wall - lead_s / 2, t0_wall + (plan.hold_to - t0), args.hit_rate / args.hit_clients, child))
        p.start()
        pipes.append(parent)
        hitters.append(p)
    idle_mb = rss_mb(proc)
    load_before = os.getloadavg()[0]
    meter = Meter(proc, args.standin)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # the web server's loop, too
        step = runner.run(stream_step(port, url, n, plan, meter, proc))
    hits, hit_client_cpu_s = [], 0.0
    for pipe in pipes:
        samples, cpu = pipe.recv()
        hits.extend(samples)
        hit_client_cpu_s += cpu
    for p in hitters:
        p.join(10)
    marks = step.pop("marks")
    wall = {name: t0_wall + (mark[0] - t0) for name, mark in marks.items()}  # the marks on the hits' clock

    def phase(since: str, until: str) -> dict:
        ms = [h[1] for h in hits if wall[since] <= h[0] < wall[until] and h[2]]
        seconds = marks[until][0] - marks[since][0]
        web, standin, reader = (marks[until][i] - marks[since][i] for i in (1, 2, 3))
        sent = sum(1 for h in hits if wall[since] <= h[0] < wall[until])
        return {"exact": percentiles(ms), "hits": len(ms), "sent": sent, "s": seconds, "web_cpu_s": web,
                "standin_cpu_s": standin, "reader_cpu_s": reader}

    arrival, hold = phase("start", "arrived"), phase("arrived", "hold_end")
    hit_errors = sum(1 for h in hits if not h[2])
    held_samples = [s for s in step.pop("samples") if plan.hold_from <= s[0] <= plan.hold_to]
    open_held = min((s[1] for s in held_samples), default=marks["hold_end"][4])
    peak_mb = max((s[2] for s in held_samples), default=idle_mb)
    if not n:  # the floor: an exact hit's web CPU, with no stream open
        args.hit_cpu_ms = hold["web_cpu_s"] * 1000 / max(1, hold["sent"])
    hit_cpu_ms = getattr(args, "hit_cpu_ms", 0.0)
    # web CPU a second of an open stream: the hold's, less its hits at the floor's cost a hit
    stream_s_cpu_ms = (max(0.0, hold["web_cpu_s"] * 1000 - hold["sent"] * hit_cpu_ms) / (n * hold["s"])
                       if n and hold["s"] > 0 else float("nan"))
    # web CPU of a fresh ask (its lookups, retrieval, checks, record; the stream's opening and end):
    # the arrival's, less its hits and the stream-seconds open meanwhile (n/2 over the ramp-in, n over the settling)
    open_stream_s = n * ramp_in_s / 2 + n * settle_s
    fresh_cpu_ms = ((arrival["web_cpu_s"] * 1000 - arrival["sent"] * hit_cpu_ms - open_stream_s * stream_s_cpu_ms) / n
                    if n else float("nan"))
    ok = step["outcomes"].get("ok", 0)
    step.update(n=n, arrival_per_s=args.arrival_per_s, ramp_in_s=ramp_in_s, hold_s=args.hold_s, tokens=tokens,
                arrival=arrival, hold=hold, exact=hold["exact"], exact_arrival=arrival["exact"],
                exact_errors=hit_errors, open_held=open_held, idle_mb=idle_mb, peak_mb=peak_mb,
                mb_per_stream=(peak_mb - idle_mb) / open_held if n and open_held else float("nan"),
                hit_cpu_ms=hit_cpu_ms, stream_s_cpu_ms=stream_s_cpu_ms, fresh_ask_cpu_ms=fresh_cpu_ms,
                hit_client_cpu_s=hit_client_cpu_s, load_avg=[load_before, os.getloadavg()[0]])
    step["errors"] = (n - ok) + hit_errors
    # held: all n open at once through the hold, none failed, and the exact hits within the p99 while held
    step["held"] = step["errors"] == 0 and open_held >= n and hold["exact"].get("p99", 1e9) <= args.p99_ms
    nan = float("nan")
    print(f"  {n:5d} streams ({args.arrival_per_s:g}/s over {ramp_in_s:.1f} s, then held {args.hold_s:g} s; "
          f"{tokens} tokens): {ok} done ({step['outcomes']}), {open_held} open through the hold; {hit_errors} hits failed",
          flush=True)
    for name, part in ((("arriving", arrival),) if n else ()) + (("held" if n else "no streams", hold),):
        print(f"        {name:8s} {part['s']:5.1f} s: exact hits p50={part['exact'].get('p50', nan):.1f} ms "
              f"p99={part['exact'].get('p99', nan):.1f} ms ({part['hits']} hits); CPU web {part['web_cpu_s']:.1f} s, "
              f"stand-in model {part['standin_cpu_s']:.1f} s, stream reader {part['reader_cpu_s']:.1f} s", flush=True)
    print(f"        web CPU: {hit_cpu_ms:.2f} ms an exact hit, {fresh_cpu_ms:.1f} ms a fresh ask, "
          f"{stream_s_cpu_ms:.3f} ms a stream-second; exact-hit clients {hit_client_cpu_s:.1f} s; web RSS "
          f"{idle_mb:.0f} -> {peak_mb:.0f} MB ({step['mb_per_stream']:.3f} MB/stream); load average "
          f"{load_before:.1f} -> {step['load_avg'][1]:.1f} -> {'held' if step['held'] else 'NOT held'}", flush=True)
    return step


def standin_configure(port: int, tokens: int) -> None:
    """The stand-in model's answers from now on: ``tokens`` long."""
    conn = http.client.HTTPConnection(HOST, port, timeout=10)
    conn.request("POST", "/config", body=json.dumps({"tokens": tokens}), headers={"Content-Type": "application/json"})
    if conn.getresponse().status != 204:
        raise RuntimeError("the stand-in model server refused its configuration")
    conn.close()


def warm_up(port: int, url: str, args) -> None:
    """One exact hit and one stream before the ramp; stop the run, saying why, when either is not
    what the ramp measures (a stream handed off by the answerability check counts as no stream)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.request("POST", url, body=json.dumps({"question": HIT_QUESTION}), headers={"Content-Type": "application/json"})
    layer = json.loads(conn.getresponse().read()).get("cache", {}).get("layer")
    conn.close()
    if layer != "exact":
        raise SystemExit(f"the warm-up hit was served by {layer!r}, not the exact cache")
    tokens = 10
    standin_configure(args.standin_port, tokens)
    deadline_s = args.interval_ms * tokens / 1000 + args.slack_s
    outcome = uvloop.run(one_stream(port, url, deadline_s, time.monotonic(), [0, 0]))
    if outcome != "ok":
        raise SystemExit(f"the warm-up stream of {STREAM_QUESTION!r} ended {outcome!r}, not streamed to its end")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ramp", default="16,32,100,300,1000,2000", help="concurrent streams of each step")
    parser.add_argument("--servers", default="async,threads", help="which servers, in order")
    parser.add_argument("--interval-ms", type=float, default=100.0, help="the stand-in model's time between tokens")
    parser.add_argument("--arrival-per-s", type=float, default=ARRIVAL_PER_S,
                        help="new streamed asks a second while a step ramps up (its N asks arrive over N/rate s)")
    parser.add_argument("--hold-s", type=float, default=10.0,
                        help="how long every stream of a step is open at once after the last one arrived "
                             "(each answer lasts the ramp-in, a second to settle and this)")
    parser.add_argument("--slack-s", type=float, default=20.0, help="a stream's time allowed beyond its length")
    parser.add_argument("--hit-clients", type=int, default=4, help="processes sending exact hits beside the streams")
    parser.add_argument("--hit-rate", type=float, default=100.0, help="exact hits a second, over all hit clients")
    parser.add_argument("--p99-ms", type=float, default=P99_TARGET_MS, help="the exact hits' p99 a held step stays within")
    parser.add_argument("--workers", type=int, default=settings.WEB_WORKERS,
                        help="web worker processes of each server (WEB_WORKERS, as make run starts)")
    args = parser.parse_args(argv)
    ramp = [int(n) for n in args.ramp.split(",")]
    if args.arrival_per_s <= 0 or args.hold_s <= 0 or args.hit_rate <= 0 or args.hit_clients < 1 or min(ramp) < 1:
        parser.error("--arrival-per-s, --hold-s, --hit-rate must be positive, --hit-clients and each step at least 1")
    from supportbot.run import raise_open_files

    fds = raise_open_files()  # this process's streams, and the servers it starts
    if fds < 4 * max(ramp) + 200:
        print(f"  open-file limit {fds} is low for {max(ramp)} streams (each holds about four descriptors)")
    ensure_schema()
    from supportbot import pipeline
    from supportbot.pipeline import Asker

    figures: dict = {"ramp": ramp, "interval_ms": args.interval_ms, "arrival_per_s": args.arrival_per_s,
                     "hold_s": args.hold_s, "hit_rate": args.hit_rate,
                     "web_workers": args.workers, "web_threads": settings.WEB_THREADS}
    print(f"streams arrive at {args.arrival_per_s:g}/s, each held {args.hold_s:g} s past the last arrival; a token every "
          f"{args.interval_ms:g} ms; {args.hit_rate:g} exact hits/s from {args.hit_clients} clients; "
          f"load average {os.getloadavg()[0]:.1f} (a shared machine: compare CPU a unit, not latency)", flush=True)
    with scratch_tenants("streams") as scratch:
        tenant = scratch.tenant("load")
        from generation.base import Passage
        from ingestion.models import Chunk
        from ingestion.parsing import parse_file
        from ingestion.services import article_upsert
        from retrieval.services import index_sync

        demo = Path(settings.KB_DEMO_DIR)
        hours = [article_upsert(tenant, parse_file(demo / name))[0] for name in DEMO_ARTICLES][-1]
        index_sync(tenant_id=tenant.pk)  # the articles searchable (the first index generation, if none is yet)
        chunk = Chunk.objects.filter(article=hours, is_current=True, text__contains="Monday to Friday").first()
        passage = Passage(1, chunk.pk, hours.external_id, hours.title, hours.url, hours.version, chunk.text, 1.0)
        scratch.will_embed([HIT_QUESTION, STREAM_QUESTION])
        with standin_model(args.interval_ms) as (args.standin_port, args.standin):
            model_port = args.standin_port
            os.environ["VLLM_BASE_URL"] = settings.VLLM_BASE_URL = f"http://{HOST}:{model_port}"
            offered = pipeline.offer_answer(Asker(tenant, "en"), HIT_QUESTION, HIT_ANSWER, [passage],
                                            {passage.chunk_id: hours.pk}, checks=False)
            assert offered.admitted, offered.layers
            url = f"/api/t/{tenant.slug}/ask"
            for kind in args.servers.split(","):
                print(f"{kind} server ({args.workers} workers"
                      + (f" x {settings.WEB_THREADS} threads" if kind == "threads" else "") + "):", flush=True)
                steps = []
                with web_server(kind, model_port, args.workers) as (port, proc):
                    warm_up(port, url, args)
                    for n in [0, *ramp]:  # 0: the exact hits alone, the machine's floor
                        step = run_step(port, url, n, args, proc)
                        steps.append(step)
                        if step["errors"]:  # a step that only misses the p99 goes on: the figures show the shape
                            break
                held = [s for s in steps if s["held"] and s["n"]]
                clean = [s for s in steps if not s["errors"] and s["n"]]
                figures[kind] = {"steps": steps, "held": max((s["n"] for s in held), default=0),
                                 "no_errors": max((s["n"] for s in clean), default=0),
                                 "peak": held[-1] if held else None}
                print(f"  {kind}: held {figures[kind]['held']} streams (0 errors, exact p99 <= {args.p99_ms:.0f} ms "
                      f"while held); {figures[kind]['no_errors']} with 0 errors", flush=True)
    nan = float("nan")
    peak = (figures.get("async") or {}).get("peak") or {}
    results = {
        "streams_held_async": (figures.get("async") or {}).get("held", 0),
        "streams_held_threads": (figures.get("threads") or {}).get("held", 0),
        "exact_p99_ms_at_peak": peak.get("exact", {}).get("p99", nan),
        "mb_per_stream": peak.get("mb_per_stream", nan),
        "exact_p99_ms_arriving_at_peak": peak.get("exact_arrival", {}).get("p99", nan),
        "arrival_per_s": args.arrival_per_s,
        "fresh_ask_cpu_ms": peak.get("fresh_ask_cpu_ms", nan),
        "stream_s_cpu_ms": peak.get("stream_s_cpu_ms", nan),
    }
    figures.update(results)
    last = (f"streams_held_async={results['streams_held_async']} streams_held_threads={results['streams_held_threads']} "
            f"exact_p99_ms_at_peak={results['exact_p99_ms_at_peak']:.2f} mb_per_stream={results['mb_per_stream']:.3f} "
            f"exact_p99_ms_arriving_at_peak={results['exact_p99_ms_arriving_at_peak']:.2f} "
            f"arrival_per_s={results['arrival_per_s']:g} fresh_ask_cpu_ms={results['fresh_ask_cpu_ms']:.1f} "
            f"stream_s_cpu_ms={results['stream_s_cpu_ms']:.3f}")
    bench_result("stream_load", figures, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
