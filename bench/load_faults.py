"""Load with faults: hits and misses across two tenants while Redis and the model server restart.

    .venv/bin/python -m bench.load_faults [--duration 200] [--hit-threads 6] [--miss-threads 1] [--fault-scale 1]

(A smoke run: ``--duration 12 --fault-scale 0.1 --hit-threads 1 --workers 1 --threads 2``; its figures
prove only that the run still works.)

Everything the run touches is its own: a redis-server (``start_redis``), a model server on a free
port (``start_model_server``), a gunicorn on a free port given both through ``REDIS_URL`` and
``EMBEDDED_MODEL_PORT``, and two scratch tenants (``lf-alpha``, ``lf-beta``) with a few articles,
an API key each and three customers each. Only the PostgreSQL is shared (the project's embedded
one, or ``DATABASE_URL``); the scratch tenants are deleted at the end.

Traffic, over loopback with httpx from Python threads:

- hit threads: general questions whose answers were offered to the caches beforehand with
  ``pipeline.offer_answer`` (the exact wording, or a paraphrase for the semantic cache), asked
  anonymously or as a customer (API key + ``customer``), a fifth of them streamed;
- miss threads: personal questions (they bypass the answer caches) and new general questions:
  retrieval, then the CPU model (``GENERATION_TIMEOUT_S`` is short so misses fail fast while the
  model is down). Misses are a small share because the model takes seconds per answer.

Faults: Redis is killed at 30% of the run and restarted 15 s later (with empty caches); at 45% it
is held at its memory limit for 20 s (``maxmemory`` set to what it holds, policy ``noeviction``, so
every write is refused with an OOM error reply while reads go on); the model server is killed at
60% and restarted 30 s later.

Every offered answer carries a marker naming its tenant, so any served answer can be traced. The
check, from the responses and the AskEvent records: every response maps to exactly one record of
the same tenant, customer reference and answer (``lost`` counts requests without a response or
without a record), and no response carries another tenant's marker or citation, or a cached answer
to a personal question (``cross_scope_serves``). Ends with one line:
``requests=… rps=… p99_ms=… errors=… cross_scope_serves=… lost=…``
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

HOST = "127.0.0.1"
TENANTS = ("lf-alpha", "lf-beta")
CUSTOMERS = (None, "cust-a", "cust-b", "cust-c")
MARKER = re.compile(r"\bscope-answer ([a-z]+)\b")

ARTICLES = {
    "return-policy": ("Return policy", "{name} accepts returns of unused items within {days} days of delivery. "
                      "Start a return from the Orders page, print the prepaid label and drop the parcel at any "
                      "carrier point. Refunds go back to the original payment method within five business days "
                      "after the parcel arrives at the {name} warehouse."),
    "password-reset": ("Reset your password", "To reset your {name} password, choose 'Forgot password' on the "
                       "sign-in page and enter your e-mail address. The reset link in the e-mail is valid for one "
                       "hour. Choose a new password of at least twelve characters."),
    "shipping-times": ("Shipping times", "{name} ships every order within one business day. Standard delivery "
                       "takes three to five business days; express delivery takes one to two business days. "
                       "You receive a tracking link by e-mail once the parcel leaves the warehouse."),
    "two-factor": ("Two-factor authentication", "Protect your {name} account with two-factor authentication: "
                   "open Account settings, choose Security, and scan the QR code with an authenticator app. "
                   "Keep the recovery codes in a safe place."),
}
# (offered question, asked variants): the first variant is the exact wording, the rest paraphrases
HITS = [
    ("What is your return policy?", ["What is your return policy?", "what's your returns policy",
                                     "What is the return policy?"]),
    ("How do I reset my password?", ["How do I reset my password?", "How can I reset my password?"]),
    ("How long does shipping take?", ["How long does shipping take?", "how long does delivery take"]),
]
MISSES_PERSONAL = ["Where is my order LF-558812?", "What is the status of my refund?", "Has my package shipped yet?",
                   "Why was my card declined?"]
MISSES_GENERAL = ["How do I enable two-factor authentication?", "Where do I keep my recovery codes?",
                  "Can I choose express delivery?", "How do I start a return?"]


@dataclass
class Result:
    kind: str  # hit | miss_personal | miss_general
    tenant: str
    customer: str | None
    question: str
    stream: bool
    started: float
    latency_ms: float = 0.0
    status: int = 0  # 0: no response (transport error)
    error: str = ""
    body: dict = field(default_factory=dict)
    phase: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


# --------------------------------------------------------------------------- setup

def setup_tenants():
    from django.db import transaction

    from ingestion.parsing import ParsedArticle
    from ingestion.services import article_upsert
    from retrieval.services import index_sync
    from supportbot.auth import api_key_create
    from core.models import Tenant

    tenants, keys = {}, {}
    for i, slug in enumerate(TENANTS):
        Tenant.objects.filter(slug=slug).delete()
        name = f"{slug.split('-')[1].title()} Goods"
        with transaction.atomic():
            tenant = Tenant.objects.create(slug=slug, name=name, locales=["en"], default_locale="en",
                                           handoff_text=f"Write to the {name} team.", semantic_mode="serve")
            for external_id, (title, body) in ARTICLES.items():
                article_upsert(tenant, ParsedArticle(external_id, title, "en",
                                                     f"https://help.{slug}.example/en/{external_id}",
                                                     body.format(name=name, days=30 if i == 0 else 14)))
        index_sync(tenant_id=tenant.pk)
        tenants[slug] = tenant
        keys[slug] = api_key_create(tenant, "load_faults")[1]
    return tenants, keys


def offer_hits(tenants) -> dict[str, str]:
    """Offer a marked answer per tenant and hit question; returns marker -> tenant slug."""
    from supportbot import pipeline
    from generation.base import Passage

    owners, n = {}, 0
    for slug, tenant in tenants.items():
        for question, _ in HITS:
            n += 1
            marker = "mk" + "".join(chr(ord("a") + int(d)) for d in f"{n:03d}")
            state = pipeline.start(pipeline.Asker(tenant, "en"), question, streamed=False)
            pipeline.retrieve(state)
            top = state.passages[:1]
            if not top:
                raise SystemExit(f"no passage for {question!r} in {slug}: the index is not ready")
            passage = Passage(1, top[0].chunk_id, top[0].article_id, top[0].title, top[0].url, top[0].version,
                              top[0].text, top[0].similarity)
            offered = pipeline.offer_answer(pipeline.Asker(tenant, "en"), question,
                                            f"{tenant.name} answer: see our help centre, scope-answer {marker} [1].",
                                            [passage], {passage.chunk_id: state.article_pks[passage.chunk_id]},
                                            checks=False)  # placeholder text
            if not offered.admitted:
                raise SystemExit(f"the synthetic answer for {question!r} was not admitted: {offered.layers}")
            owners[marker] = slug
    return owners


def start_gunicorn(port: int, redis_url: str, model_port: int, workers: int, threads: int, log_path):
    from django.conf import settings

    # DATABASE_URL is in the environment by now (settings set it when they started the embedded one)
    env = dict(os.environ, REDIS_URL=redis_url, EMBEDDED_MODEL_PORT=str(model_port), GENERATION_TIMEOUT_S="15",
               GENERATION_MAX_RETRIES="1", GENERATION_BREAKER_RESET_S="5", RATELIMIT_CLIENT_REQUESTS="1000000",
               RATELIMIT_TENANT_REQUESTS="1000000", RATELIMIT_API_KEY_REQUESTS="1000000", LOG_LEVEL="WARNING")
    log = open(log_path, "ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "supportbot.wsgi", "--bind", f"{HOST}:{port}", "--worker-class",
         "gthread", "--workers", str(workers), "--threads", str(threads), "--timeout", "60",
         "--graceful-timeout", "10"],
        cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    import httpx

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited with {proc.returncode}; see {log_path}")
        try:
            if httpx.get(f"http://{HOST}:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not start")


# --------------------------------------------------------------------------- load

class Load:
    client_class = None  # an httpx.Client-like class for the load threads (default httpx.Client)

    def __init__(self, base: str, keys: dict[str, str], duration: float, seed: int):
        self.base, self.keys, self.duration = base, keys, duration
        self.results: list[Result] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.phase = ""
        self.seed = seed
        self.started = 0.0

    def send(self, client, r: Result) -> None:
        body = {"question": r.question, "locale": "en", "stream": r.stream}
        headers = {}
        if r.customer is not None:
            body["customer"] = r.customer
            headers["Authorization"] = f"Bearer {self.keys[r.tenant]}"
        r.phase = self.phase
        t0 = time.perf_counter()
        try:
            response = client.post(f"{self.base}/api/t/{r.tenant}/ask", json=body, headers=headers)
            r.status = response.status_code
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                r.body = parse_stream(response.text)
            else:
                r.body = response.json()
        except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the run
            r.error = f"{type(exc).__name__}: {exc}"[:200]
        r.latency_ms = (time.perf_counter() - t0) * 1000
        with self.lock:
            self.results.append(r)

    def hit_worker(self, n: int) -> None:
        import httpx

        rnd = random.Random(self.seed * 100 + n)
        with (self.client_class or httpx.Client)(timeout=60) as client:
            while not self.stop.is_set():
                _, variants = rnd.choice(HITS)
                r = Result("hit", rnd.choice(TENANTS), rnd.choice(CUSTOMERS), rnd.choice(variants),
                           rnd.random() < 0.2, time.monotonic())
                self.send(client, r)

    def miss_worker(self, n: int) -> None:
        import httpx

        rnd = random.Random(self.seed * 1000 + n)
        with (self.client_class or httpx.Client)(timeout=60) as client:
            while not self.stop.is_set():
                personal = rnd.random() < 0.5
                question = rnd.choice(MISSES_PERSONAL if personal else MISSES_GENERAL)
                r = Result("miss_personal" if personal else "miss_general", rnd.choice(TENANTS),
                           rnd.choice(CUSTOMERS[1:]) if personal else rnd.choice(CUSTOMERS), question,
                           rnd.random() < 0.5, time.monotonic())
                self.send(client, r)
                self.stop.wait(0.5)


def warm_up(base: str, keys: dict[str, str], threads: int) -> None:
    """Load the embedding model in every web worker and the model's tenant prefixes (not measured)."""
    import httpx

    t0 = time.monotonic()

    def hits():
        with httpx.Client(timeout=120) as client:
            for _ in range(8):
                for slug in TENANTS:
                    for _, variants in HITS:
                        client.post(f"{base}/api/t/{slug}/ask", json={"question": variants[-1]})

    workers = [threading.Thread(target=hits) for _ in range(max(2, threads))]
    for w in workers:
        w.start()
    with httpx.Client(timeout=120) as client:
        for slug in TENANTS:
            client.post(f"{base}/api/t/{slug}/ask", json={"question": MISSES_GENERAL[0]})
    for w in workers:
        w.join()
    print(f"warm-up done in {time.monotonic() - t0:.0f}s (not measured)", flush=True)


def parse_stream(text: str) -> dict:
    deltas, done = [], {}
    for block in text.strip().split("\n\n"):
        lines = block.split("\n")
        name = next((line[7:] for line in lines if line.startswith("event: ")), "")
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        if name == "delta":
            deltas.append(json.loads(data)["delta"])
        elif name == "done":
            done = json.loads(data)
    done["streamed_text"] = "".join(deltas)
    return done


# --------------------------------------------------------------------------- verification

def finish_load(load: Load, workers, mark, owners: dict[str, str], tenants) -> tuple[list[Result], float, dict]:
    """Stop the load and verify what it got: (results, elapsed seconds, ``verify`` summary). Hit
    records are written by each web worker's background writer a moment after the answer, so the
    check is repeated a few times before a record counts as lost."""
    load.stop.set()
    for w in workers:
        w.join(timeout=90)
    elapsed = time.monotonic() - load.started
    mark("load stopped", "done")
    results = list(load.results)
    for wait_s in (1, 2, 5, 10):
        time.sleep(wait_s)
        summary = verify(results, owners, tenants)
        if summary["lost"] == 0:
            break
    return results, elapsed, summary


def verify(results: list[Result], owners: dict[str, str], tenants) -> dict:
    from supportbot import pipeline
    from caching.models import AskEvent

    ids = [r.body.get("request_id") for r in results if r.body.get("request_id")]
    events = {}
    for i in range(0, len(ids), 2000):
        for e in AskEvent.objects.filter(request_id__in=ids[i:i + 2000]).select_related("tenant"):
            events[str(e.request_id)] = e
    refs = {(slug, c): pipeline.customer_ref(pipeline.Asker(t, "en", c)) for slug, t in tenants.items()
            for c in CUSTOMERS}
    cross, lost, problems = 0, 0, Counter()
    for r in results:
        if r.status == 0 or not r.body.get("request_id"):
            lost += 1
            problems["no response" if r.status == 0 else f"HTTP {r.status} without a record id"] += 1
            continue
        event = events.get(r.body["request_id"])
        if event is None:
            lost += 1
            problems["response without a record"] += 1
            continue
        bad = []
        if event.tenant.slug != r.tenant:
            bad.append("record of another tenant")
        if event.customer_ref != refs[(r.tenant, r.customer)]:
            bad.append("record of another customer")
        if event.answer != r.body.get("answer"):
            bad.append("response differs from the record")
        for marker in MARKER.findall(r.body.get("answer", "") + r.body.get("streamed_text", "")):
            if owners.get(marker) != r.tenant:
                bad.append("another tenant's cached answer")
        if any(f"help.{r.tenant}.example" not in c.get("url", "") for c in r.body.get("citations", [])):
            bad.append("another tenant's citation")
        if r.kind == "miss_personal" and r.body.get("cache", {}).get("layer") not in ("none", None):
            bad.append("a personal question answered from a shared cache")
        if bad:
            cross += 1
            problems.update(bad)
    return {"cross_scope_serves": cross, "lost": lost, "problems": dict(problems), "records": len(events)}


# --------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=200.0, help="seconds of load (>= 180 for the record)")
    parser.add_argument("--hit-threads", type=int, default=6)
    parser.add_argument("--miss-threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--fault-scale", type=float, default=1.0,
                        help="multiplies the fault windows (15, 20 and 30 s); below 1 only for a smoke run")
    args = parser.parse_args(argv)
    if args.fault_scale <= 0 or args.duration <= 0:
        parser.error("--duration and --fault-scale must be positive")

    from core.servers import VAR, start_redis

    redis_proc = start_redis()
    redis_port = redis_proc.port
    redis_url = f"redis://{HOST}:{redis_port}/0"
    model_port, web_port = free_port(), free_port()
    os.environ["REDIS_URL"] = redis_url
    os.environ["EMBEDDED_MODEL_PORT"] = str(model_port)
    import django

    django.setup()
    from django.core.management import call_command

    from generation.local_model import start_model_server, stop_model_server
    from core.models import Tenant

    procs = {"redis": redis_proc}
    log_path = VAR / "log" / "bench-load-faults-gunicorn.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        call_command("migrate", interactive=False, verbosity=0)
        t0 = time.monotonic()
        procs["model"] = start_model_server(HOST, model_port)
        print(f"model server on :{model_port} (pid {procs['model'].pid}) in {time.monotonic() - t0:.1f}s; "
              f"redis on :{redis_port}", flush=True)
        tenants, keys = setup_tenants()
        owners = offer_hits(tenants)
        print(f"scratch tenants {', '.join(tenants)}: {len(owners)} answers offered to the caches", flush=True)
        procs["web"] = start_gunicorn(web_port, redis_url, model_port, args.workers, args.threads, log_path)
        print(f"gunicorn on :{web_port} ({args.workers} workers x {args.threads} threads); "
              f"load for {args.duration:.0f}s", flush=True)

        warm_up(f"http://{HOST}:{web_port}", keys, args.hit_threads)
        load = Load(f"http://{HOST}:{web_port}", keys, args.duration, args.seed)
        load.phase = "before_faults"
        workers = [threading.Thread(target=load.hit_worker, args=(i,), daemon=True) for i in range(args.hit_threads)]
        workers += [threading.Thread(target=load.miss_worker, args=(i,), daemon=True)
                    for i in range(args.miss_threads)]
        load.started = time.monotonic()
        for w in workers:
            w.start()
        timeline = []

        def at(fraction: float):
            load.stop.wait(max(0.0, load.started + args.duration * fraction - time.monotonic()))

        def mark(event: str, phase: str):
            load.phase = phase
            timeline.append((round(time.monotonic() - load.started, 1), event))
            print(f"  t={timeline[-1][0]:6.1f}s {event}", flush=True)

        at(0.30)
        procs["redis"].kill()
        procs["redis"].wait(timeout=10)
        mark("redis killed", "redis_down")
        load.stop.wait(15 * args.fault_scale)
        procs["redis"] = start_redis(redis_port)
        mark("redis restarted (empty)", "after_redis_restart")
        at(0.45)
        full = redis_at_memory_limit(redis_url)
        mark(f"redis at its memory limit ({full} bytes, noeviction)", "redis_full")
        load.stop.wait(20 * args.fault_scale)
        redis_at_memory_limit(redis_url, release=True)
        mark("redis memory limit lifted", "after_redis_full")
        at(0.60)
        procs["model"].kill()
        procs["model"].wait(timeout=10)
        mark("model server killed", "model_down")
        load.stop.wait(30 * args.fault_scale)
        t1 = time.monotonic()
        procs["model"] = start_model_server(HOST, model_port)
        mark(f"model server restarted (ready in {time.monotonic() - t1:.1f}s)", "after_model_restart")
        at(1.0)
        results, elapsed, summary = finish_load(load, workers, mark, owners, tenants)
        report(results, summary, elapsed, args)
        return 0 if summary["cross_scope_serves"] == 0 and summary["lost"] == 0 else 1
    finally:
        web = procs.get("web")
        if web is not None and web.poll() is None:
            os.killpg(web.pid, signal.SIGTERM)
            try:
                web.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(web.pid, signal.SIGKILL)
        if procs.get("model") is not None:
            stop_model_server(procs["model"].pid, procs["model"])
        if procs.get("redis") is not None and procs["redis"].poll() is None:
            procs["redis"].kill()
        Tenant.objects.filter(slug__in=TENANTS).delete()


def redis_at_memory_limit(url: str, *, release: bool = False) -> int:
    """Hold the bench's Redis at what it holds now, refusing every write (OOM), or lift the limit."""
    import redis

    r = redis.Redis.from_url(url)
    if release:
        r.config_set("maxmemory", 0)
        return 0
    used = r.info("memory")["used_memory"]
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", used)
    return used


def report(results: list[Result], summary: dict, elapsed: float, args) -> None:
    latencies = [r.latency_ms for r in results]
    errors = [r for r in results if r.status != 200]
    print(f"\n{len(results)} requests in {elapsed:.0f}s ({len(results) / elapsed:.1f}/s); "
          f"{args.hit_threads} hit threads, {args.miss_threads} miss threads")
    print(f"{'group':24} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}  statuses")
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(f"{r.kind}/{r.phase}", []).append(r)
        groups.setdefault(f"all/{r.phase}", []).append(r)
    for name in sorted(groups):
        rs = groups[name]
        ls = [r.latency_ms for r in rs]
        statuses = Counter(r.status for r in rs)
        print(f"{name:24} {len(rs):6d} {percentile(ls, 50):8.1f} {percentile(ls, 95):8.1f} {percentile(ls, 99):8.1f} "
              f"{max(ls):8.0f}  {dict(sorted(statuses.items()))}")
    layers = Counter((r.kind, r.body.get("cache", {}).get("layer", "-")) for r in results)
    print("served by:", ", ".join(f"{k}={v}" for k, v in sorted(layers.items())))
    reasons = Counter(r.body.get("status") or r.error.split(":")[0] for r in errors)
    print("non-200 by status:", dict(reasons))
    hung = [r for r in results if r.latency_ms > (15 + 10) * 1000]
    print(f"longest request {max(latencies):.0f} ms; over the generation timeout + 10 s: {len(hung)}")
    print(f"records found {summary['records']}; problems: {summary['problems'] or 'none'}")
    print(f"requests={len(results)} rps={len(results) / elapsed:.1f} p99_ms={percentile(latencies, 99):.1f} "
          f"errors={len(errors)} cross_scope_serves={summary['cross_scope_serves']} lost={summary['lost']}")


if __name__ == "__main__":
    sys.exit(main())
