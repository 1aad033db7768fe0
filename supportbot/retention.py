"""Retention and a customer's rights over their records.

* ``records_purge_older_than(days)``: Ask records (``AskEvent``) and cache
  decisions (``CacheDecision``) older than the retention period are deleted, in
  batches so a large purge never holds long locks. Rows that hang off them
  (feedback, review items, samples and labels of those decisions) go with them;
  semantic cache entries they produced stay (they are verified answers with
  their own expiry) and lose their ``source_ask`` link. Run nightly by
  ``supportbot.tasks.records_purge``.
* ``customer_export`` / ``customer_erase``: one customer's Asks, found by the
  same keyed hash the pipeline records (``pipeline.customer_ref``), so no raw
  customer id is ever stored. Erasure also removes what those Asks put into the
  shared caches: semantic entries whose source is one of them, exact-cache
  values they produced and the cached embeddings of their questions. The cache
  step runs first and a Redis outage aborts the erasure before anything is
  deleted, so a rerun finds everything again.
"""
from __future__ import annotations

import json
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from caching.keys import KEY_VERSION, digest
from caching.models import CacheDecision, LabeledPair, SemanticEntry
from retrieval.embeddings import get_embedder
from supportbot.models import AskEvent, Tenant
from supportbot.pipeline import Asker, customer_ref
from supportbot.redis_client import RedisUnavailable, get_redis, mark_redis_down

EXPORT_FIELDS = ("request_id", "created_at", "locale", "question", "answer", "citations", "status", "serving_layer",
                 "cache_reason", "intent", "category", "model", "streamed", "total_ms")


class CacheUnavailable(Exception):
    """Redis could not be reached; nothing was erased."""


# --------------------------------------------------------------------------- retention

def records_purge_older_than(days: int | None = None, *, batch_size: int | None = None) -> dict[str, int]:
    """Delete Ask and decision records created more than ``days`` (default RECORD_RETENTION_DAYS) ago."""
    days = settings.RECORD_RETENTION_DAYS if days is None else int(days)
    if days < 1:
        raise ValueError("the retention period must be at least one day")
    batch = batch_size or settings.RECORD_PURGE_BATCH_SIZE
    cutoff = timezone.now() - timedelta(days=days)
    counts: dict[str, int] = {}
    # Decisions first (an old decision of a recent Ask cannot exist, but a decision can outlive a
    # clock change); then the Asks, whose remaining decisions cascade.
    for model in (CacheDecision, AskEvent):
        while True:
            ids = list(model.objects.filter(created_at__lt=cutoff).order_by("pk").values_list("pk", flat=True)[:batch])
            if not ids:
                break
            with transaction.atomic():
                _, deleted = model.objects.filter(pk__in=ids).delete()
            for label, n in deleted.items():
                counts[label] = counts.get(label, 0) + n
    return counts


# --------------------------------------------------------------------------- one customer's records

def customer_asks(tenant: Tenant, customer: str):
    """The customer's Asks in ``tenant`` (the reference does not depend on the locale)."""
    asker = Asker(tenant, tenant.default_locale, customer)
    refs = [customer_ref(asker), _customer_ref_before_its_own_key(asker)]
    return AskEvent.objects.filter(tenant=tenant, customer_ref__in=refs).order_by("created_at")


def _customer_ref_before_its_own_key(asker: Asker) -> str:
    """The reference recorded before ``CUSTOMER_REF_SECRET`` existed (a hash keyed with part of
    SECRET_KEY): records from then are still found. Remove once ``RECORD_RETENTION_DAYS`` have passed
    since 2026-11-29."""
    return digest({"tenant": asker.tenant.slug, "customer": asker.customer, "k": settings.SECRET_KEY[:8]})[:32]


def customer_export(tenant: Tenant, customer: str) -> dict:
    asks = [{f: _plain(getattr(a, f)) for f in EXPORT_FIELDS} for a in customer_asks(tenant, customer)]
    return {"tenant": tenant.slug, "customer": customer, "exported_at": timezone.now().isoformat(),
            "asks": asks, "count": len(asks)}


def customer_erase(tenant: Tenant, customer: str) -> dict[str, int]:
    """Delete the customer's Asks, their decisions and what they left in the shared caches; counts by kind."""
    asks = customer_asks(tenant, customer)
    request_ids = {str(r) for r in asks.values_list("request_id", flat=True)}
    questions = list(asks.values_list("question", flat=True))
    counts = {"exact_entries": 0, "embeddings": 0}
    if request_ids:
        counts.update(_erase_cached(tenant, request_ids, questions))
    with transaction.atomic():
        entries = SemanticEntry.objects.filter(tenant=tenant, source_ask__in=asks)
        _, deleted = entries.delete()
        counts["semantic_entries"] = deleted.get("caching.SemanticEntry", 0)
        # Aliases the customer's near misses made go with their Asks (cascade); the verifier's
        # training labels hold the question text without a link, so they go by text.
        counts["verifier_labels"] = LabeledPair.objects.filter(
            tenant=tenant, source=LabeledPair.Source.VERIFIER, new_question__in=questions).delete()[0]
        counts["decisions"] = CacheDecision.objects.filter(ask__in=asks).count()
        _, deleted = asks.delete()
    counts["asks"] = deleted.get("supportbot.AskEvent", 0)
    for label, n in deleted.items():
        if label not in ("supportbot.AskEvent", "caching.CacheDecision"):
            counts[label.split(".", 1)[1].lower()] = n
    return counts


def _erase_cached(tenant: Tenant, request_ids: set[str], questions: list[str]) -> dict[str, int]:
    try:
        r = get_redis()
        doomed = []
        keys = list(r.scan_iter(match=f"ans:{KEY_VERSION}:{tenant.slug}:*", count=1000))
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for key, raw in zip(chunk, r.mget(chunk)):
                if raw is not None and json.loads(raw).get("source_request") in request_ids:
                    doomed.append(key)
        exact = r.delete(*doomed) if doomed else 0
        embedder = get_embedder()
        emb_keys = list({embedder.cache_key(q) for q in questions})
        embeddings = r.delete(*emb_keys) if emb_keys else 0
    except RedisUnavailable as exc:
        mark_redis_down()
        raise CacheUnavailable(f"redis unavailable ({type(exc).__name__}); nothing was erased, run it again") from exc
    return {"exact_entries": exact, "embeddings": embeddings}


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if not isinstance(value, (str, int, float, bool, list, dict, type(None))):
        return str(value)
    return value
