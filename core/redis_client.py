"""A Redis client per thread, with short timeouts.

Each thread gets its own single-connection client: a request's commands skip the pool's
checkout (a lock, bookkeeping and a poll of the socket per command, which cost a cache hit
more than the command itself). A forked child makes its own; ``reset_redis_state`` retires
every thread's client (tests restart Redis on another port).

Redis holds caches, never the only copy of anything: callers treat
``RedisUnavailable`` (any Redis error: down, timed out, or an error reply such as
``OOM command not allowed`` from a full server under ``noeviction``) as a cache miss,
report it with ``redis_failed`` and carry on through the slow path.

**Redis Cluster**: ``REDIS_URL=redis+cluster://host:port`` (``rediss+cluster://`` with TLS; any node
of the cluster, the rest are discovered) makes ``get_redis`` a ``redis.cluster.RedisCluster``, one per
process (it keeps a pool per node). Keys that one script, transaction or multi-key command touches
together share a hash tag, per tenant ``tenant_tag(id)`` = ``{t:<id>}``, so they live on one shard;
``mget_spread`` reads keys that may lie on several. Never a Celery broker (``supportbot.checks``).
"""
from __future__ import annotations

import os
import threading
import time
import weakref

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, SlotNotCoveredError
from redis.retry import Retry

# RedisClusterException (no node reachable, a slot without a primary) is no RedisError.
RedisUnavailable = (redis.RedisError, RedisClusterException, OSError)
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}

_lock = threading.Lock()
_local = threading.local()
_clients: weakref.WeakSet = weakref.WeakSet()  # every thread's client, to retire them all at a reset
_generation = 0  # bumped by a reset: a client of an older generation is replaced on its next use
_down_until = 0.0
_cluster: tuple[RedisCluster, int, int] | None = None  # (client, pid, generation): one per process
# After a failure, skip Redis for this long so a dead server costs nothing per request.
DOWN_BACKOFF_S = 2.0


def cluster_url(url: str) -> str | None:
    """The plain URL of a cluster URL (``redis+cluster://h:p/0`` -> ``redis://h:p/0``); None when
    ``url`` names a single server."""
    scheme, sep, rest = (url or "").partition("://")
    plain = CLUSTER_SCHEMES.get(scheme.lower()) if sep else None
    return f"{plain}://{rest}" if plain else None


def tenant_tag(tenant_id: int) -> str:
    """The hash tag of a tenant's keys, ``{t:<id>}``: on a cluster every key holding it is on one
    shard, so the rate limiter's script, the exact cache's transaction and a purge's multi-key
    commands of one tenant stay on one slot. The id, not the slug: it never changes."""
    return f"{{t:{int(tenant_id)}}}"


def key_tag(key: str) -> str:
    """The hash tag a key carries (``ans:a2:{t:5}:…`` -> ``{t:5}``)."""
    return key[key.index("{"):key.index("}") + 1]


def tenant_keys_pattern(tenant_id: int) -> str:
    """A SCAN pattern of every key of the tenant (they all carry its hash tag)."""
    return f"*{tenant_tag(tenant_id)}*"


def is_cluster(client) -> bool:
    return isinstance(client, RedisCluster)


def mget_spread(client, keys) -> list:
    """MGET of keys that may lie on different shards (content-addressed embeddings, several tenants'
    entries): one MGET per slot, pipelined per node, on a cluster; a plain MGET otherwise."""
    keys = list(keys)
    if not keys:
        return []
    return client.mget_nonatomic(keys) if isinstance(client, RedisCluster) else client.mget(keys)


def redis_info(section: str) -> dict:
    """``INFO section`` of the cache Redis; on a cluster the primaries' numbers summed (memory,
    limits, counters: the cluster's totals) and their text fields taken from the first."""
    client = get_redis()
    if not isinstance(client, RedisCluster):
        return client.info(section)
    total: dict = {}
    for info in client.info(section, target_nodes=RedisCluster.PRIMARIES).values():
        for name, value in info.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
            else:
                total.setdefault(name, value)
    return total


_node_down_until: dict[str, float] = {}  # cluster node ("host:port") -> monotonic time its backoff ends


class BackingOffCluster(RedisCluster):
    """A cluster client that skips a node for ``DOWN_BACKOFF_S`` after it failed (down or timed out),
    rather than the whole of Redis: a dead shard costs its tenants' commands nothing (they fail at
    once, so their requests are misses) and the other shards' tenants nothing at all. The first
    command after the pause tries the node again; its failure makes the client re-read the topology,
    which finds a replica promoted meanwhile. (Hooks ``RedisCluster._execute_command``: redis is
    pinned, and ``tests/caching/test_redis_cluster.py`` kills a primary to check it.)"""

    def _execute_command(self, target_node, *args, **kwargs):
        if time.monotonic() < _node_down_until.get(target_node.name, 0.0):
            raise redis.ConnectionError(f"cluster node {target_node.name} failed a moment ago (backing off)")
        try:
            return super()._execute_command(target_node, *args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError):
            _node_down_until[target_node.name] = time.monotonic() + DOWN_BACKOFF_S
            raise


def _cluster_client() -> RedisCluster:
    global _cluster
    held = _cluster
    if held is not None and held[1] == os.getpid() and held[2] == _generation:
        return held[0]
    with _lock:
        if _cluster is None or _cluster[1] != os.getpid() or _cluster[2] != _generation:
            client = BackingOffCluster.from_url(
                cluster_url(settings.REDIS_URL),
                socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
                health_check_interval=30,
                # A shard down: the slots stay served by the others (its keys are misses), and one
                # retry, after the client re-reads the topology, follows a replica's promotion.
                require_full_coverage=False,
                retry=Retry(NoBackoff(), 1),
            )
            _cluster = (client, os.getpid(), _generation)
            _clients.add(client)
        return _cluster[0]


def get_redis() -> redis.Redis | RedisCluster:
    """This thread's client (made on first use in the thread, the process, or after a reset); the
    process's cluster client when ``REDIS_URL`` names a cluster."""
    if cluster_url(settings.REDIS_URL) is not None:
        return _cluster_client()
    client = getattr(_local, "client", None)
    if client is None or _local.pid != os.getpid() or _local.generation != _generation:
        client = redis.Redis.from_url(
            settings.REDIS_URL,
            single_connection_client=True,
            socket_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
            socket_connect_timeout=settings.REDIS_SOCKET_TIMEOUT_S,
            health_check_interval=30,
            retry_on_timeout=False,
        )
        _local.client, _local.pid, _local.generation = client, os.getpid(), _generation
        with _lock:
            _clients.add(client)
    return client


def call(*args):
    """One command on this thread's client, straight on its connection: without the client's
    lock and retry wrapper, a third of the cost of the one command of an exact hit (the rate
    limiter's). Like the client, it tries once more on a new connection when the server closed
    this one (a restart, an idle timeout) and never after a timeout; any failure but an error
    reply drops the connection, since a reply left unread would answer the next command. On a
    cluster the client routes the command by its keys (one slot: they share a hash tag)."""
    client = get_redis()
    if isinstance(client, RedisCluster):
        return client.execute_command(*args)
    conn = client.connection
    for attempt in (1, 2):
        try:
            conn.send_command(*args)
            return conn.read_response()
        except redis.ResponseError:  # a whole reply was read: the connection is in step
            raise
        except redis.ConnectionError:
            conn.disconnect()
            if attempt == 2:
                raise
        except BaseException:
            conn.disconnect()
            raise


def redis_available() -> bool:
    """False for a short while after a failure, so callers skip Redis instead of timing out again."""
    return time.monotonic() >= _down_until


def mark_redis_down() -> None:
    global _down_until
    _down_until = time.monotonic() + DOWN_BACKOFF_S


def redis_failed(exc: BaseException) -> None:
    """A cache path's Redis call failed: back off when the server is unreachable. An error reply
    (``ResponseError``: out of memory, read-only replica) came from a server that still answers
    reads in microseconds, so the caches keep reading and only that command is lost. On a cluster
    an unreachable node backs off by itself (``BackingOffCluster``)."""
    if isinstance(exc, redis.ResponseError):
        return
    if cluster_url(settings.REDIS_URL) is not None and isinstance(
            exc, (redis.ConnectionError, redis.TimeoutError, SlotNotCoveredError)):
        return  # one shard failed: that node backs off alone (``BackingOffCluster``), the others serve on
    mark_redis_down()


def redis_error_text(exc: BaseException) -> str:
    """What a decision records about a Redis failure: the error class, and an error reply's first words."""
    if isinstance(exc, redis.ResponseError):
        return f"redis error: {type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"
    return f"redis unavailable: {type(exc).__name__}"


def reset_redis_state() -> None:
    """Retire every thread's client and forget the backoff (tests restart Redis on another port)."""
    global _generation, _down_until, _cluster
    with _lock:
        _generation += 1
        _cluster = None
        _node_down_until.clear()
        retired = list(_clients)
        _clients.clear()
        _down_until = 0.0
    for client in retired:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - a client of a dead server or another thread: nothing to keep
            pass
