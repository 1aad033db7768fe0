"""Redis Cluster failover under load: requests degrade to misses, nothing crosses a scope or is lost.

    .venv/bin/python -m bench.cluster_failover [--duration 120] [--hit-threads 4] [--miss-threads 1]

Everything the run touches is its own: a Redis Cluster of three primaries with one replica each
(``core.embedded_cluster``, from the embedded Redis's ``redis-server``), a plain redis-server
as the Celery broker (a broker never lives on the cluster), a gunicorn with
``REDIS_URL=redis+cluster://…``, and ``bench.load_faults``'s two scratch tenants and traffic (hits
offered beforehand, personal and new general questions as misses; the extractive answerer). The
tenants are placed on two different shards (their keys carry the hash tag ``{t:<id>}``). Only
PostgreSQL is shared; the scratch tenants are deleted at the end.

Faults: at 25% of the run the primary serving the first tenant's slot is killed (SIGKILL); the
cluster promotes its replica once ``cluster-node-timeout`` has passed. At 60% that new primary is
killed too: the shard has no copy left and its slots stay unserved to the end
(``cluster-require-full-coverage no``: the other shards go on).

Checks (``bench.load_faults.verify``): every response maps to one record of the same tenant,
customer and answer (``lost`` counts requests without either), no response carries another
tenant's answer or citation or a cached answer to a personal question (``cross_scope_serves``),
and no request fails (``errors``: non-200). Reported per phase and tenant: which layer served.
Ends with one line: ``requests=… errors=… cross_scope_serves=… lost=… failover_s=…
exact_before=… victim_exact_lost=… other_exact_lost=…`` (the ``exact_*`` figures: the share of hit
questions the exact cache served; ``lost`` is the phase after the shard's last copy died).
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

HOST = "127.0.0.1"


def start_services(args):
    """The cluster and the broker, started before Django reads REDIS_URL / CELERY_BROKER_URL."""
    from core.servers import start_redis
    from core.embedded_cluster import start_cluster

    t0 = time.monotonic()
    cluster = start_cluster(primaries=3, replicas=1, node_timeout_ms=args.node_timeout_ms)
    broker = start_redis(data_dir=Path(tempfile.mkdtemp(prefix="bench-broker-")))
    os.environ["REDIS_URL"] = cluster.url
    os.environ["CELERY_BROKER_URL"] = os.environ["CELERY_RESULT_BACKEND"] = f"redis://{HOST}:{broker.port}/0"
    print(f"redis cluster of 3 primaries + 3 replicas in {time.monotonic() - t0:.1f}s "
          f"({cluster.url}); broker redis on :{broker.port}", flush=True)
    return cluster, broker


def slot_of(tenant_id: int) -> int:
    from redis.crc import key_slot

    from core.redis_client import tenant_tag

    return key_slot(tenant_tag(tenant_id).encode())


def tenants_on_two_shards(cluster):
    """``bench.load_faults``'s tenants, created again until their hash tags fall on different primaries."""
    from bench.load_faults import TENANTS, setup_tenants

    for _ in range(12):
        tenants, keys = setup_tenants()
        shards = {slug: cluster.port_of_slot(slot_of(t.pk)) for slug, t in tenants.items()}
        if len(set(shards.values())) == len(TENANTS):
            return tenants, keys, shards
    raise SystemExit("the scratch tenants kept landing on one shard")


def wait_for_new_owner(cluster, slot: int, dead_port: int, timeout_s: float = 60.0) -> tuple[int | None, float]:
    """(port of the primary now serving ``slot``, seconds it took), or (None, timeout) if none took over."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            port = cluster.port_of_slot(slot)
        except StopIteration:
            port = None
        if port is not None and port != dead_port:
            cluster.wait_ok(timeout_s=max(1.0, timeout_s - (time.monotonic() - t0)))
            return port, time.monotonic() - t0
        time.sleep(0.05)
    return None, timeout_s


def layer_shares(results, tenant: str, phase: str) -> dict:
    """Which layer served the tenant's hit questions in the phase, and the p50 of all its requests."""
    from bench.load_faults import percentile

    hits = [r for r in results if r.kind == "hit" and r.tenant == tenant and r.phase == phase and r.status == 200]
    layers = Counter(r.body.get("cache", {}).get("layer", "-") for r in hits)
    n = len(hits)
    p50 = percentile([r.latency_ms for r in results if r.tenant == tenant and r.phase == phase], 50)
    return {"n": n, "p50_ms": round(p50, 1), **{f"{k}_share": round(v / n, 3) for k, v in sorted(layers.items())}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--hit-threads", type=int, default=4)
    parser.add_argument("--miss-threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=6)
    parser.add_argument("--node-timeout-ms", type=int, default=2000, help="cluster-node-timeout of the nodes")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    cluster, broker = start_services(args)
    web, scratch = None, ()
    try:
        from bench.common import bench_result, ensure_schema, percentiles, setup

        setup()
        ensure_schema()
        from bench.load_faults import TENANTS, Load, finish_load, free_port, offer_hits, start_gunicorn, warm_up
        from core.servers import VAR
        from core.models import Tenant

        scratch = TENANTS
        tenants, keys, shards = tenants_on_two_shards(cluster)
        victim, other = TENANTS[0], TENANTS[1]
        owners = offer_hits(tenants)
        placed = ", ".join(f"{s} (pk {tenants[s].pk}) -> :{p}" for s, p in shards.items())
        print(f"scratch tenants on different shards: {placed}; "
              f"{len(owners)} answers offered", flush=True)
        log_path = VAR / "log" / "bench-cluster-failover-gunicorn.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        web_port = free_port()
        web = start_gunicorn(web_port, cluster.url, free_port(), args.workers, args.threads, log_path)
        base = f"http://{HOST}:{web_port}"
        warm_up(base, keys, args.hit_threads)

        load = Load(base, keys, args.duration, args.seed)
        load.phase = "before"
        workers = [threading.Thread(target=load.hit_worker, args=(i,), daemon=True) for i in range(args.hit_threads)]
        workers += [threading.Thread(target=load.miss_worker, args=(i,), daemon=True)
                    for i in range(args.miss_threads)]
        load.started = time.monotonic()
        for w in workers:
            w.start()

        def at(fraction: float):
            load.stop.wait(max(0.0, load.started + args.duration * fraction - time.monotonic()))

        def mark(event: str, phase: str):
            load.phase = phase
            print(f"  t={time.monotonic() - load.started:6.1f}s {event}", flush=True)

        slot = slot_of(tenants[victim].pk)
        at(0.25)
        first = shards[victim]
        cluster.kill(first)
        mark(f"primary :{first} of {victim}'s slot {slot} killed", "failover")
        promoted, failover_s = wait_for_new_owner(cluster, slot, first)
        if promoted is None:
            raise SystemExit(f"no replica took over slot {slot} within {failover_s:.0f}s")
        mark(f"replica :{promoted} promoted after {failover_s:.1f}s", "after_failover")
        at(0.60)
        cluster.kill(promoted)
        mark(f"primary :{promoted} killed: the shard has no copy left", "shard_lost")
        at(1.0)
        results, elapsed, summary = finish_load(load, workers, mark, owners, tenants)
        errors = [r for r in results if r.status != 200]
        phases = ["before", "failover", "after_failover", "shard_lost"]
        figures = {"requests": len(results), "elapsed_s": round(elapsed, 1), "errors": len(errors),
                   "error_kinds": dict(Counter(r.body.get("error", {}).get("code") or r.error.split(":")[0]
                                               or str(r.status) for r in errors)),
                   "cross_scope_serves": summary["cross_scope_serves"], "lost": summary["lost"],
                   "problems": summary["problems"], "failover_s": round(failover_s, 2),
                   "layers": {f"{t}/{p}": layer_shares(results, t, p) for t in TENANTS for p in phases},
                   "latency_ms": {p: percentiles(r.latency_ms for r in results if r.phase == p) for p in phases}}
        print(f"\n{len(results)} requests in {elapsed:.0f}s; tenants {victim} (its shard fails) and {other}")
        print(f"{'tenant/phase':28} {'hits':>5} {'p50 ms':>7}  served by (share of hit questions)")
        for name, shares in figures["layers"].items():
            print(f"{name:28} {shares['n']:5d} {shares['p50_ms']:7.1f}  "
                  + ", ".join(f"{k[:-6]}={v:.2f}" for k, v in shares.items() if k.endswith("_share")))
        for p in phases:
            lat = figures["latency_ms"][p]
            if lat.get("n"):
                print(f"latency {p:16} n={lat['n']:5d} p50={lat['p50']:.1f} ms p99={lat['p99']:.1f} ms "
                      f"max={lat['max']:.0f} ms")
        print(f"non-200: {figures['error_kinds'] or 'none'}; records found {summary['records']}; "
              f"problems: {summary['problems'] or 'none'}")

        def exact(t, p):
            return figures["layers"][f"{t}/{p}"].get("exact_share", 0.0)

        bench_result("cluster_failover", figures,
                     f"requests={len(results)} errors={len(errors)} cross_scope_serves={summary['cross_scope_serves']} "
                     f"lost={summary['lost']} failover_s={failover_s:.1f} "
                     f"exact_before={(exact(victim, 'before') + exact(other, 'before')) / 2:.2f} "
                     f"victim_exact_lost={exact(victim, 'shard_lost'):.2f} "
                     f"other_exact_lost={exact(other, 'shard_lost'):.2f}")
        return 0 if summary["cross_scope_serves"] == 0 and summary["lost"] == 0 and not errors else 1
    finally:
        if web is not None and web.poll() is None:
            os.killpg(web.pid, signal.SIGTERM)
            try:
                web.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(web.pid, signal.SIGKILL)
        if scratch:
            Tenant.objects.filter(slug__in=scratch).delete()
        cluster.stop()
        if broker.poll() is None:
            broker.kill()


if __name__ == "__main__":
    sys.exit(main())
