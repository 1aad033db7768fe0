"""The Redis embedding cache: keyed by model, model version and text; batch get and set in one
round trip each; shared by ingestion and the query path; never an old model's vector."""
from __future__ import annotations

import copy
import uuid

import numpy as np
import pytest
from django.test import override_settings

from caching.models import SemanticEntry
from core.redis_client import get_redis, reset_redis_state
from ingestion.models import Chunk
from retrieval.embeddings import EmbedStats, embed_query, embed_texts, get_embedder, set_embedder, text_hash
from retrieval.models import IndexGeneration
from retrieval.services import active_generation_forget, chunk_embedding_text, index_sync
from supportbot import pipeline
from tests import factories
from tests.caching.helpers import cached_lookup, decision, offer

HOUSEKEEPING = {b"PING", b"CLIENT", b"HELLO", b"SELECT", b"AUTH"}


def unique(text: str) -> str:
    return f"{text} ({uuid.uuid4().hex[:8]})"


def sentinel(dim: int) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[0] = 1.0
    return v


@pytest.fixture
def other_version():
    """The same model under a new version string (what an upgraded model looks like to the cache)."""
    current = get_embedder()
    upgraded = copy.copy(current)
    upgraded.version = current.version + "-next"
    yield upgraded
    set_embedder(current)
    active_generation_forget()  # the generation a test activated is rolled back: forget it too


def _command_names(packed: bytes) -> list[bytes]:
    """The command names in packed RESP commands, read by their lengths: a binary value (a vector)
    may hold bytes that look like a command's header."""
    names, i = [], 0
    while i < len(packed):
        end = packed.index(b"\r\n", i)
        count, i = int(packed[i + 1:end]), end + 2  # *<number of arguments>
        for n in range(count):
            end = packed.index(b"\r\n", i)
            size, i = int(packed[i + 1:end]), end + 2  # $<length>
            if n == 0:
                names.append(packed[i:i + size].upper())
            i += size + 2
    return names


@pytest.fixture
def round_trips(monkeypatch):
    """Every write to a Redis socket, as the list of command names it carried."""
    from redis.connection import AbstractConnection

    get_redis().ping()  # connect first: the handshake is not what we count
    sent: list[list[bytes]] = []
    original = AbstractConnection.send_packed_command

    def spy(self, command, check_health=True):
        packed = b"".join(command) if isinstance(command, (list, tuple)) else command
        names = _command_names(packed)
        if not set(names) <= HOUSEKEEPING:
            sent.append(names)
        return original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", spy)
    return sent


def test_the_key_names_model_version_and_text():
    e = get_embedder()
    assert e.cache_key("hello") == f"emb:{e.name}:{e.version}:{text_hash('hello')}"
    assert len(text_hash("hello")) == 64


@pytest.mark.redis_cluster
def test_a_new_model_version_never_gets_the_old_vector(other_version):
    current, text = get_embedder(), unique("How do I reset my password?")
    dim = current.dimensions
    # a vector the model would never produce, planted under the current version's key
    get_redis().set(current.cache_key(text), sentinel(dim).tobytes())
    stats = EmbedStats()
    assert np.array_equal(embed_texts([text], embedder=current, stats=stats)[0], sentinel(dim))
    assert (stats.cache_hits, stats.model_calls) == (1, 0)

    stats = EmbedStats()
    fresh = embed_texts([text], embedder=other_version, stats=stats)[0]

    assert (stats.cache_hits, stats.model_calls) == (0, 1)
    assert float(fresh @ sentinel(dim)) < 0.5
    assert float(fresh @ current.encode([text])[0]) > 0.999  # the model's own vector
    assert np.array_equal(np.frombuffer(get_redis().get(other_version.cache_key(text)), dtype=np.float32), fresh)
    assert np.array_equal(np.frombuffer(get_redis().get(current.cache_key(text)), dtype=np.float32), sentinel(dim))


def test_another_model_name_never_gets_the_vector_either(other_version):
    current, text = get_embedder(), unique("When are you open?")
    get_redis().set(current.cache_key(text), sentinel(current.dimensions).tobytes())
    renamed = copy.copy(current)
    renamed.name = "another-model"
    stats = EmbedStats()
    vector = embed_texts([text], embedder=renamed, stats=stats)[0]
    assert stats.model_calls == 1 and float(vector @ sentinel(current.dimensions)) < 0.5


def test_a_vector_of_the_wrong_size_is_recomputed():
    current, text = get_embedder(), unique("Do you ship to Canada?")
    get_redis().set(current.cache_key(text), b"\x00" * 12)
    stats = EmbedStats()
    vector = embed_texts([text], stats=stats)[0]
    assert stats.model_calls == 1 and vector.shape == (current.dimensions,) and abs(np.linalg.norm(vector) - 1) < 1e-3


def test_after_a_model_upgrade_the_semantic_cache_only_offers_entries_of_the_new_version(acme, other_version):
    offer(pipeline.Asker(acme, "en"), "What is your return policy?")
    # the upgrade: the new model's generation becomes the active one and processes embed with it
    IndexGeneration.objects.filter(status=IndexGeneration.Status.ACTIVE).update(status=IndexGeneration.Status.RETIRED)
    IndexGeneration.objects.create(model_name=other_version.name, model_version=other_version.version,
                                   dimensions=other_version.dimensions, status=IndexGeneration.Status.ACTIVE)
    active_generation_forget()
    set_embedder(other_version)

    state, served = cached_lookup(pipeline.Asker(acme, "en"), "return policy details")

    assert served is None
    assert decision(state, "semantic").reason == "no candidate in scope"
    assert decision(state, "semantic").filters["embedding_version"] == other_version.version
    # answers admitted under the new version are found again
    offer(pipeline.Asker(acme, "en"), "What is your return policy?")
    assert SemanticEntry.objects.filter(embedding_version=other_version.version).count() == 1
    assert cached_lookup(pipeline.Asker(acme, "en"), "return policy details")[1] is not None


def test_a_batch_is_one_get_and_one_set(round_trips):
    cached = [unique("cached one"), unique("cached two")]
    embed_texts(cached)
    round_trips.clear()
    new = [unique("new one"), unique("new two"), unique("new three")]
    batch = [new[0], cached[0], new[1], new[0], cached[1], new[2]]  # one duplicate
    stats = EmbedStats()

    vectors = embed_texts(batch, stats=stats)

    assert round_trips == [[b"MGET"], [b"SET", b"SET", b"SET"]]
    assert (stats.requested, stats.cache_hits, stats.model_calls) == (6, 2, 3)
    assert np.array_equal(vectors[0], vectors[3])
    round_trips.clear()
    stats = EmbedStats()
    again = embed_texts(batch, stats=stats)
    assert round_trips == [[b"MGET"]] and (stats.cache_hits, stats.model_calls) == (6, 0)
    assert np.allclose(again, vectors)


@pytest.mark.redis_cluster
@override_settings(EMBEDDING_CACHE_TTL_S=777)
def test_vectors_expire_after_the_ttl_from_settings():
    text = unique("How long does shipping take?")
    embed_query(text)
    assert 700 < get_redis().ttl(get_embedder().cache_key(text)) <= 777


@pytest.mark.redis_cluster
def test_ingestion_and_queries_share_the_cache(acme):
    body = f"Bring your own bag to the Denver store and get a discount. Reference {uuid.uuid4().hex}."
    factories.article(acme, "bag-discount-" + uuid.uuid4().hex[:6], body)
    report = index_sync(tenant_id=acme.pk)
    assert report.changed >= 1 and report.embedded == report.changed and report.cache_hits == 0

    chunk = Chunk.objects.filter(text__contains=body[-40:], is_current=True).get()
    stats = EmbedStats()
    embed_texts([chunk_embedding_text(chunk)], stats=stats)  # the query path asks for the same text
    assert (stats.cache_hits, stats.model_calls) == (1, 0)


def test_redis_down_degrades_to_the_model(settings):
    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens on the discard port
    reset_redis_state()
    stats = EmbedStats()
    vector = embed_query(unique("What is your return policy?"), stats=stats)
    assert vector.shape == (get_embedder().dimensions,) and stats.model_calls == 1
    assert stats.redis_errors == 1 and stats.cache_hits == 0
    stats = EmbedStats()  # backing off: the next call does not even try
    embed_query(unique("What is your return policy?"), stats=stats)
    assert stats.cache_skipped and stats.redis_errors == 0
