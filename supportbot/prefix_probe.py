"""Does the model server really do prefix caching? A repeated probe prompt must come back with
``usage.prompt_tokens_details.cached_tokens`` above zero on its second call. If the server does not
say (no ``prompt_tokens_details``) or says zero (vLLM without ``--enable-prefix-caching``, a router
that spreads one prompt over replicas), every tenant pays full prompt price and the cached-token
metrics read zero for a reason nobody sees: the log warns and the staff dashboard says so.

Run by the worker at start and hourly by beat (``supportbot.tasks.prefix_cache_probe``); the latest
outcome is kept in Redis for every web process's dashboard.
"""
from __future__ import annotations

import json
import logging
import time

from generation.base import ChatRequest, GenerationError, GenerationResult
from generation.client import get_backend
from core.redis_client import RedisUnavailable, get_redis, redis_failed

log = logging.getLogger(__name__)

PROBE_KEY = "probe:prefix-cache"
# Long enough to fill several KV-cache blocks (vLLM caches whole blocks of 16 tokens).
PROBE_SYSTEM = ("You are the prefix-cache probe of the Ask support bot. " * 24).strip()


def prefix_cache_probe() -> dict:
    """Send the probe prompt twice; the outcome (ok, cached tokens of the second call, why not)."""
    request = ChatRequest(messages=[{"role": "system", "content": PROBE_SYSTEM},
                                    {"role": "user", "content": "Reply with the word OK."}],
                          params={"max_tokens": 4, "temperature": 0}, cache_salt="prefix-cache-probe")
    outcome = {"at": time.time(), "ok": False, "cached_tokens": None, "prompt_tokens": None, "detail": ""}
    try:
        results = [next(r for r in get_backend().stream(request) if isinstance(r, GenerationResult))
                   for _ in range(2)]
    except (GenerationError, StopIteration) as exc:
        outcome["detail"] = f"the probe prompt failed: {exc}"
    else:
        second = results[-1]
        outcome.update(cached_tokens=second.cached_tokens, prompt_tokens=second.prompt_tokens)
        if second.cached_tokens is None:
            outcome["detail"] = ("the model server reports no usage.prompt_tokens_details.cached_tokens: "
                                 "prefix caching cannot be checked or counted")
        elif second.cached_tokens <= 0:
            outcome["detail"] = ("a repeated prompt reported 0 cached tokens: prefix caching is off "
                                 "(vLLM: --enable-prefix-caching) or the router spreads one prompt over replicas")
        else:
            outcome.update(ok=True, detail=f"{second.cached_tokens} of {second.prompt_tokens} prompt tokens cached")
    (log.info if outcome["ok"] else log.warning)("model server prefix-cache check: %s", outcome["detail"])
    try:
        get_redis().set(PROBE_KEY, json.dumps(outcome), ex=7 * 86400)
    except RedisUnavailable as exc:
        redis_failed(exc)
    return outcome


def prefix_cache_probe_latest() -> dict | None:
    """The latest outcome, for the dashboard (None: never probed, or Redis unavailable)."""
    try:
        raw = get_redis().get(PROBE_KEY)
    except RedisUnavailable as exc:
        redis_failed(exc)
        return None
    return json.loads(raw) if raw else None
