"""An embedding-model upgrade: a new generation builds beside the active one and the switch is
atomic, so a query never compares vectors of two models. The second model is the same real
model under another version string: to the index and the embedding cache, a different model."""
from __future__ import annotations

import threading
import uuid

import pytest
from django.db import IntegrityError, transaction

from caching.models import SemanticEntry
from core.models import JobRun
from ingestion.models import Chunk
from retrieval import generations
from retrieval.embeddings import Embedder, embed_texts, get_embedder
from retrieval.indexing import reembed_changed
from retrieval.generations import (
    GenerationMismatch, embedder_for, generation_build, generation_drop, generation_switch, generation_upgrade,
    query_embedder,
)
from core.redis_client import get_redis
from retrieval.models import ChunkEmbedding, IndexGeneration
from retrieval.search import search_chunks
from retrieval.services import active_generation, active_generation_forget
from supportbot import pipeline
from tests.jobs.helpers import CachedEverywhere, kb_article, sections_body

pytestmark = pytest.mark.django_db


class SecondVersion(Embedder):
    """The real model under a new version string."""

    def __init__(self, base: Embedder):
        self.model_dir, self.name = base.model_dir, base.name
        self.version = f"test-{uuid.uuid4().hex[:10]}"
        self._model, self._lock, self.model_calls = base.model, threading.RLock(), 0


@pytest.fixture
def second_version(monkeypatch):
    v2 = SecondVersion(get_embedder())
    monkeypatch.setattr(generations, "_embedders", {})
    yield v2
    active_generation_forget()
    r = get_redis()
    keys = list(r.scan_iter(match=f"emb:{v2.name}:{v2.version}:*", count=1000))
    if keys:
        r.delete(*keys)


def vector_rows(generation) -> set[int]:
    return set(ChunkEmbedding.objects.filter(generation=generation).values_list("chunk_id", flat=True))


def current_ids() -> set[int]:
    return set(Chunk.objects.filter(is_current=True).values_list("pk", flat=True))


def test_an_upgrade_builds_beside_the_active_generation_and_switches_atomically(acme, second_version):
    old = active_generation()
    v1 = get_embedder()
    assert embedder_for(old) is v1
    cached = CachedEverywhere(acme, "What is your return policy?", "return-policy")
    assert cached.in_semantic()

    new, report = generation_build(second_version)

    # building: the new generation is invisible to queries; the old one is untouched
    assert new.status == IndexGeneration.Status.BUILDING and active_generation() == old
    assert vector_rows(old) == current_ids() == vector_rows(new)
    # the embedding cache is keyed by version: not one old vector was reused
    assert report.embedded == report.changed == len(current_ids()) and report.cache_hits == 0
    # a process without the new model refuses to embed queries for the new generation
    with pytest.raises(GenerationMismatch):
        embedder_for(new)
    assert query_embedder() is v1
    # two active generations cannot exist, whatever the code does
    with pytest.raises(IntegrityError), transaction.atomic():
        IndexGeneration.objects.filter(pk=new.pk).update(status=IndexGeneration.Status.ACTIVE)

    # the upgrade job resumes the build: an article edited meanwhile is caught up, then the switch
    edited = kb_article(acme, "weekend-delivery", sections_body(2))
    run = generation_upgrade(second_version)

    assert run.status == JobRun.Status.SUCCEEDED and run.job == "generation_upgrade"
    assert run.detail["previous_generation_id"] == old.pk and run.detail["generation_id"] == new.pk
    assert run.embedded == Chunk.objects.filter(article=edited, is_current=True).count()
    old.refresh_from_db(), new.refresh_from_db()
    assert (old.status, new.status) == (IndexGeneration.Status.RETIRED, IndexGeneration.Status.ACTIVE)
    assert IndexGeneration.objects.filter(status=IndexGeneration.Status.ACTIVE).get() == new
    assert vector_rows(new) == current_ids()
    assert set(Chunk.objects.filter(article=edited, is_current=True).values_list("pk", flat=True)) <= vector_rows(new)
    # semantic entries embedded with the old model are retired
    assert run.detail["semantic_entries_retired"] >= 1
    assert SemanticEntry.objects.get(exact_key=cached.exact_key).status == SemanticEntry.Status.RETIRED
    assert not SemanticEntry.objects.filter(status=SemanticEntry.Status.ACTIVE).exclude(
        embedding_version=second_version.version).exists()
    # a second switch to the active generation is a no-op
    assert generation_switch(new, second_version) is None
    # queries now embed with the new model and search the new generation only
    assert query_embedder() is second_version
    vector = embed_texts(["How do I return an item?"], embedder=query_embedder())[0]
    hits = search_chunks(active_generation(), acme.pk, "en", vector, 4)
    assert hits and {h.chunk_id for h in hits} <= vector_rows(new)
    # answers cached under the old generation are unreachable: the retrieval version is in every key
    active_generation_forget()
    state = pipeline.start(pipeline.Asker(acme, "en"), "What is your return policy?", streamed=False)
    pipeline.check_eligibility(state)
    assert state.key != cached.exact_key

    # the old generation's vectors go after the grace period; an active generation is never dropped
    with pytest.raises(ValueError):
        generation_drop(new.pk)
    removed = generation_drop(old.pk)
    assert removed > 0 and not ChunkEmbedding.objects.filter(generation_id=old.pk).exists()
    assert not IndexGeneration.objects.filter(pk=old.pk).exists()

    # the nightly job now keeps the new generation in step, with the new model
    hours = kb_article(acme, "opening-hours", sections_body(1))
    run = reembed_changed()
    assert run.detail["generation_id"] == new.pk and run.detail["model_version"] == second_version.version
    assert run.embedded == Chunk.objects.filter(article=hours, is_current=True).count()
    assert vector_rows(new) == current_ids()
