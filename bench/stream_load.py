"""Concurrent streaming asks on one machine: the async server (ASGI) against the gthread server.

    .venv/bin/python -m bench.stream_load [--ramp 16,32,100,300,1000,2000] [--servers async,threads]
                                          [--interval-ms 100] [--tokens 150] [--ramp-in-s 10] [--hit-clients 4]
                                          [--workers N]

A smoke run (seconds of streams): ``--ramp 2 --tokens 5 --interval-ms 50 --ramp-in-s 0.5 --hit-clients 1 --workers 1``.

A stand-in model server (``modelserver.standin``: the OpenAI streaming protocol, a word every
``--interval-ms`` for ``--tokens`` words, 15 s by default, as vLLM would stream) answers every fresh
ask. Each server is started as ``make run`` starts it (``supportbot.run.web_command``: the same
workers; rate limits and in-flight caps raised past the load sent), then for each step of the ramp
that many streamed API asks are opened, evenly over ``--ramp-in-s`` (10 s: N new asks in 10 s is
the arrival rate that keeps N chats of 10-s answers open, 100 a second for 1,000), and read to
their last event. The answers last longer than the ramp-in, so every stream of the step is open
at once for the last 5 s. Meanwhile ``--hit-clients`` processes send exact-hit asks back to back on
keep-alive connections and time them from the middle of the ramp-in (half the streams open, new
asks still arriving) until the first stream ends (a first step of no streams gives the machine's
floor). The streams are read by one process on uvloop, one read an event. A step is held when its streams were all
open at once and every stream reached its ``done`` event in time (the stream's length plus ``--slack-s``) with no HTTP error, and
the exact hits' p99 stayed within ``--p99-ms`` (50); a server's ramp stops at its first step with
errors (a step that only misses the p99 goes on, so the figures show the shape on a busy machine).

The scratch tenant holds two articles of the demo knowledge base (``KB_DEMO_DIR``: the return
policy and the opening hours), so the streamed question passes the answerability check as a real
customer's would; a warm-up stream before the ramp proves it (the run stops, saying why, when the
question is handed off instead of streamed). The stand-in's words share none with a passage, so
each streamed answer, once written, cites nothing and ends handed off (``not_covered``): none is
admitted, and every ask of the step is a fresh stream (a miss of the exact and semantic caches, a
hit of the search cache) that streams all its words. Memory per stream is the
growth of the web processes' resident memory (gunicorn's master and workers) from idle to the
peak of the step, over the streams open; each step also prints the web processes' CPU time a stream (the step's,
less its exact hits at the floor's cost a hit) and the load average of the machine (shared with
other work). Everything lives in a scratch tenant deleted at the end.
Ends with one line:
``streams_held_async=… streams_held_threads=… exact_p99_ms_at_peak=… mb_per_stream=…``
(the exact-hit p99 and the memory per stream of the async server's largest held step).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
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
os.environ.setdefault("VLLM_BASE_URL", "http://127.0.0.1:9")  # replaced by the stand-in's address below
setup(private_redis=True)

import psutil  # noqa: E402
import uvloop  # noqa: E402
from django.conf import settings  # noqa: E402

HOST = "127.0.0.1"
P99_TARGET_MS = 50.0
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
def standin_model(interval_ms: float, tokens: int):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "modelserver.standin", "--host", HOST, "--port", str(port),
                             "--interval-ms", str(interval_ms), "--tokens", str(tokens), "--no-cite"],
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

def hit_client(port: int, url: str, stop_at: float, out) -> None:
    """Exact hits back to back on one keep-alive connection; sends back (start time, ms, ok) of each."""
    body = json.dumps({"question": HIT_QUESTION}).encode()
    headers = {"Content-Type": "application/json"}
    conn, samples = http.client.HTTPConnection(HOST, port, timeout=30), []
    while time.time() < stop_at:
        started = time.perf_counter()
        ok = False
        try:
            conn.request("POST", url, body=body, headers=headers)
            response = conn.getresponse()
            payload = json.loads(response.read())
            ok = response.status == 200 and payload["cache"]["layer"] == "exact"
        except (OSError, http.client.HTTPException, ValueError, KeyError):
            conn.close()
            conn = http.client.HTTPConnection(HOST, port, timeout=30)
        samples.append((time.time(), (time.perf_counter() - started) * 1000, ok))
        time.sleep(0.01)  # a steady trickle, not a flood: the figure is the latency under the streams
    out.send(samples)


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


async def stream_step(port: int, url: str, n: int, ramp_in_s: float, deadline_s: float, proc, rss: list) -> dict:
    live = [0, 0]
    t0 = time.monotonic() + 0.2
    tasks = [asyncio.create_task(one_stream(port, url, deadline_s, t0 + ramp_in_s * i / n, live)) for i in range(n)]

    async def sample_memory():
        while True:
            rss.append((live[0], rss_mb(proc)))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_memory())
    outcomes = await asyncio.gather(*tasks)
    sampler.cancel()
    counts: dict = {}
    for outcome in outcomes:
        counts[outcome] = counts.get(outcome, 0) + 1
    return {"outcomes": counts, "peak_open": live[1]}


def run_step(port: int, url: str, hit_url: str, n: int, args, proc) -> dict:
    stream_s = args.interval_ms * args.tokens / 1000
    deadline_s = stream_s + args.slack_s
    stop_at = time.time() + args.ramp_in_s + stream_s + 1.0
    pipes, hitters = [], []
    for _ in range(args.hit_clients):
        parent, child = multiprocessing.Pipe(duplex=False)
        p = multiprocessing.Process(target=hit_client, args=(port, hit_url, stop_at, child), daemon=True)
        p.start()
        pipes.append(parent)
        hitters.append(p)
    rss: list = []
    idle_mb = rss_mb(proc)
    begin, cpu_before, load_before = time.time(), cpu_s(proc), os.getloadavg()[0]
    others_before = cpu_s(args.standin), sum(os.times()[:2])
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # the web server's loop, too
        step = runner.run(stream_step(port, url, n, args.ramp_in_s, deadline_s, proc, rss))
    if not n:  # the floor: the exact hits alone, as long as a step's hits run
        time.sleep(max(0.0, stop_at - time.time()))
    web_cpu_s = cpu_s(proc) - cpu_before
    standin_cpu_s, client_cpu_s = cpu_s(args.standin) - others_before[0], sum(os.times()[:2]) - others_before[1]
    samples = [s for pipe in pipes for s in pipe.recv()]
    for p in hitters:
        p.join(10)
    # the hits sent from the middle of the ramp-in (half the streams open, new asks still arriving)
    # until the first stream ends (all open)
    window = [s for s in samples if begin + 0.2 + args.ramp_in_s / 2 <= s[0] <= begin + 0.2 + stream_s]
    ms = [s[1] for s in (window or samples) if s[2]]
    hit_errors = sum(1 for s in samples if not s[2])
    peak_mb = max((mb for _, mb in rss), default=idle_mb)
    open_at_peak = max((o for o, _ in rss), default=0)
    step.update(n=n, exact=percentiles(ms), exact_hits=len(ms), exact_errors=hit_errors, idle_mb=idle_mb,
                peak_mb=peak_mb, mb_per_stream=(peak_mb - idle_mb) / open_at_peak if open_at_peak else float("nan"),
                web_cpu_s=web_cpu_s,
                load_avg=[load_before, os.getloadavg()[0]])
    step.setdefault("outcomes", {})
    ok = step["outcomes"].get("ok", 0)
    if not n:
        args.hit_cpu_ms = web_cpu_s * 1000 / max(1, len(samples))
    # the web CPU of the streams: the step's, less what its exact hits cost at the floor
    stream_cpu_s = max(0.0, web_cpu_s - len(samples) * getattr(args, "hit_cpu_ms", 0.0) / 1000)
    # per second of an open stream: the figure least moved by other work on the machine
    step.update(hit_cpu_ms=getattr(args, "hit_cpu_ms", float("nan")),
                web_cpu_ms_per_stream=stream_cpu_s * 1000 / n if n else float("nan"),
                web_cpu_ms_per_stream_s=stream_cpu_s * 1000 / n / stream_s if n else float("nan"),
                standin_cpu_s=standin_cpu_s, client_cpu_s=client_cpu_s)
    step["errors"] = (n - ok) + hit_errors
    # held: all n open at once (a server that queues streams behind busy threads finishes them
    # one batch after another), none failed, and the exact hits within the p99
    step["held"] = step["errors"] == 0 and step["peak_open"] >= n and step["exact"].get("p99", 1e9) <= args.p99_ms
    print(f"  {n:5d} streams: {ok} done ({step['outcomes']}), {step['peak_open']} open at once; exact hits "
          f"p50={step['exact'].get('p50', float('nan')):.1f} ms p99={step['exact'].get('p99', float('nan')):.1f} ms "
          f"({len(ms)} hits, {hit_errors} failed); web RSS {idle_mb:.0f} -> {peak_mb:.0f} MB "
          f"({step['mb_per_stream']:.3f} MB/stream); web CPU {web_cpu_s:.1f} s "
          f"({step['hit_cpu_ms']:.2f} ms an exact hit, {step['web_cpu_ms_per_stream']:.1f} ms a stream, "
          f"{step['web_cpu_ms_per_stream_s']:.2f} ms a stream-second); stand-in model CPU {standin_cpu_s:.1f} s, "
          f"stream reader CPU {client_cpu_s:.1f} s; load average {load_before:.1f} -> "
          f"{step['load_avg'][1]:.1f} -> {'held' if step['held'] else 'NOT held'}", flush=True)
    return step


def warm_up(port: int, url: str, args) -> None:
    """One exact hit and one stream before the ramp; stop the run, saying why, when either is not
    what the ramp measures (a stream handed off by the answerability check counts as no stream)."""
    conn = http.client.HTTPConnection(HOST, port, timeout=30)
    conn.request("POST", url, body=json.dumps({"question": HIT_QUESTION}), headers={"Content-Type": "application/json"})
    layer = json.loads(conn.getresponse().read()).get("cache", {}).get("layer")
    conn.close()
    if layer != "exact":
        raise SystemExit(f"the warm-up hit was served by {layer!r}, not the exact cache")
    deadline_s = args.interval_ms * args.tokens / 1000 + args.slack_s
    outcome = uvloop.run(one_stream(port, url, deadline_s, time.monotonic(), [0, 0]))
    if outcome != "ok":
        raise SystemExit(f"the warm-up stream of {STREAM_QUESTION!r} ended {outcome!r}, not streamed to its end")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ramp", default="16,32,100,300,1000,2000", help="concurrent streams of each step")
    parser.add_argument("--servers", default="async,threads", help="which servers, in order")
    parser.add_argument("--interval-ms", type=float, default=100.0, help="the stand-in model's time between tokens")
    parser.add_argument("--tokens", type=int, default=150, help="tokens a stand-in answer has")
    parser.add_argument("--ramp-in-s", type=float, default=10.0,
                        help="a step's streams open evenly over this long (10 s: N streams arrive at the rate "
                             "that keeps N chats of 10 s open)")
    parser.add_argument("--slack-s", type=float, default=20.0, help="a stream's time allowed beyond its length")
    parser.add_argument("--hit-clients", type=int, default=4, help="processes sending exact hits beside the streams")
    parser.add_argument("--p99-ms", type=float, default=P99_TARGET_MS, help="the exact hits' p99 a held step stays within")
    parser.add_argument("--workers", type=int, default=settings.WEB_WORKERS,
                        help="web worker processes of each server (WEB_WORKERS, as make run starts)")
    args = parser.parse_args(argv)
    ramp = [int(n) for n in args.ramp.split(",")]
    from supportbot.run import raise_open_files

    fds = raise_open_files()  # this process's streams, and the servers it starts
    if fds < 4 * max(ramp) + 200:
        print(f"  open-file limit {fds} is low for {max(ramp)} streams (each holds about four descriptors)")
    ensure_schema()
    from supportbot import pipeline
    from supportbot.pipeline import Asker

    figures: dict = {"ramp": ramp, "interval_ms": args.interval_ms, "tokens": args.tokens,
                     "web_workers": args.workers, "web_threads": settings.WEB_THREADS}
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
        with standin_model(args.interval_ms, args.tokens) as (model_port, args.standin):
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
                        step = run_step(port, url, url, n, args, proc)
                        steps.append(step)
                        if step["errors"]:  # a step that only misses the p99 goes on: the figures show the shape
                            break
                held = [s for s in steps if s["held"] and s["n"]]
                clean = [s for s in steps if not s["errors"] and s["n"]]
                figures[kind] = {"steps": steps, "held": max((s["n"] for s in held), default=0),
                                 "no_errors": max((s["n"] for s in clean), default=0),
                                 "peak": held[-1] if held else None}
                print(f"  {kind}: held {figures[kind]['held']} streams (0 errors, exact p99 <= {args.p99_ms:.0f} ms); "
                      f"{figures[kind]['no_errors']} with 0 errors", flush=True)
    nan = float("nan")
    peak = (figures.get("async") or {}).get("peak") or {}
    results = {
        "streams_held_async": (figures.get("async") or {}).get("held", 0),
        "streams_held_threads": (figures.get("threads") or {}).get("held", 0),
        "exact_p99_ms_at_peak": peak.get("exact", {}).get("p99", nan),
        "mb_per_stream": peak.get("mb_per_stream", nan),
    }
    figures.update(results)
    last = (f"streams_held_async={results['streams_held_async']} streams_held_threads={results['streams_held_threads']} "
            f"exact_p99_ms_at_peak={results['exact_p99_ms_at_peak']:.2f} mb_per_stream={results['mb_per_stream']:.3f}")
    bench_result("stream_load", figures, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
