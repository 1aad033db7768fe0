"""A web process starts warm, and its long-lived objects leave the garbage collector's scans.

A web worker holds a large graph of objects that live as long as it does: Django, the app, and
the embedding model (torch and transformers, hundreds of thousands of objects). CPython's full
collection walks all of them; it runs every few thousand requests, because the records of
cache hits wait a moment in the writer's queue and so reach the oldest generation, and under
load it cost an exact hit about 50 µs on average (a quarter-second pause every ~5,000 requests).
``gc.freeze()`` moves everything alive at that point to a permanent generation that collections
skip, so it is called once the process has loaded what it keeps: after the WSGI application and
the query embedder (a semantic lookup needs it anyway; loading it here also spares the first
customer the seconds it takes) and the gazetteer of towns (``caching.answer_checks.places``).

Then the collector's thresholds become ``WEB_GC_THRESHOLDS`` (10,000 / 20 / 10 instead of 700 / 10 / 10): a process
holding many open streams has many young objects that live for the stream's length; collected every 700
allocations they reach the oldest generation within seconds, and each full collection then paused the process
for 100-330 ms (measured with a collector callback in ``bench.stream_load`` at 1,000 streams: the held phase's
exact-hit p99 was 50-420 ms with CPython's thresholds, 24-29 ms with these).

Imported once the app is configured and called by ``supportbot.wsgi`` in every gunicorn worker
(and by ``bench.cache_latency``'s app, as a worker would); nothing depends on it having run.
"""
from __future__ import annotations

import gc
import logging
import time

from django.conf import settings
from django.db import DatabaseError, connections

from caching import guards
from caching.answer_checks import places
from retrieval import generations

log = logging.getLogger(__name__)


def warm_up() -> dict:
    """Load the query embedder, then freeze what is alive. Never fails the process: without a
    database (not migrated yet, unreachable) the embedder loads on first use instead."""
    started = time.perf_counter()
    loaded = False
    try:
        generations.query_embedder(cached=True).model  # noqa: B018 - loads the weights
        loaded = True
        guards.learned_judge()  # the semantic judge's weights (None, logged, when not built)
        places.towns()  # the gazetteer a fresh question's town is read with (0.2 s), not on the first customer's ask
    except (DatabaseError, OSError) as exc:  # not migrated yet, unreachable: expected at times
        log.warning("web warm-up: the query embedder loads on first use (%s)", exc)
    except Exception:  # noqa: BLE001 - a model that cannot load fails its lookups loudly later, not the worker
        log.exception("web warm-up: the query embedder did not load; it is tried again on first use")
    finally:
        connections.close_all()  # this thread serves no request: its connection would sit idle
    gc.collect()  # what start-up left behind goes now, not into the frozen generation
    gc.freeze()
    if len(settings.WEB_GC_THRESHOLDS) == 3:
        gc.set_threshold(*settings.WEB_GC_THRESHOLDS)
    frozen = gc.get_freeze_count()
    log.info("web warm-up: embedder %s, %d objects frozen in %.1f s", "loaded" if loaded else "deferred", frozen,
             time.perf_counter() - started)
    return {"embedder_loaded": loaded, "frozen": frozen}
