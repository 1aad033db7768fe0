"""Retention and a customer's rights over their records.

* ``records_purge_older_than(days)``: Ask records (``AskEvent``) and cache
  decisions (``CacheDecision``) older than the retention period are deleted, in
  batches so a large purge never holds long locks. Rows that hang off them
  (feedback, review items, samples, labels and labelled pairs of those decisions)
  go with them. Semantic entries hold a customer's question too: an entry made
  before the cutoff, or from a purged Ask, is deleted whatever its status
  (quarantined ones included), and the decisions that name it as their candidate
  lose its question (``entries_forget``). Run nightly by
  ``supportbot.tasks.records_purge``.
* ``customer_export`` / ``customer_erase``: one customer's Asks, found by the
  same keyed hash the pipeline records (``pipeline.customer_ref``), so no raw
  customer id is ever stored. Erasure also removes everything else that holds
  their questions: the semantic entries their Asks produced (any status), the
  candidate questions and reasons of other Asks' decisions that quote those
  entries, labelled pairs made from either side, exact-cache values they
  produced, their cached search results and the cached vectors of their
  questions under every embedding model. The cache step runs first and a Redis
  outage aborts the erasure before anything is deleted, so a rerun finds
  everything again.
"""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Concat
from django.utils import timezone

from caching.keys import digest
from caching.layers import embedding_layer, exact_layer, search_layer
from caching.models import AskEvent, CacheDecision, CalibrationUpload, LabeledPair, PairVerification, SemanticEntry
from core import budgets
from core.cachelayer import CacheScope
from core.models import Tenant
from core.redis_client import RedisUnavailable, get_redis, redis_failed
from supportbot.chat_thread import threads_erase
from supportbot.pipeline import Asker, customer_ref

# No cache reason: a semantic decision's reason quotes the cached question, another customer's words.
EXPORT_FIELDS = ("request_id", "created_at", "locale", "message", "question", "resolution", "answer", "citations",
                 "status", "serving_layer", "intent", "category", "model", "streamed", "total_ms")
ERASED_REASON = "candidate erased"


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
    # Entries first: they name their source Ask, which is about to go.
    while True:
        ids = list(SemanticEntry.objects.filter(Q(created_at__lt=cutoff) | Q(source_ask__created_at__lt=cutoff))
                   .order_by("pk").values_list("pk", flat=True)[:batch])
        if not ids:
            break
        with transaction.atomic():
            for label, n in entries_forget(SemanticEntry.objects.filter(pk__in=ids)).items():
                counts[label] = counts.get(label, 0) + n
    # The verifier's training labels hang off no decision (both questions are customers' words): by age.
    verifier_labels = LabeledPair.objects.filter(source=LabeledPair.Source.VERIFIER, decision__isnull=True,
                                                 created_at__lt=cutoff).delete()[0]
    # A calibration upload keeps its file's pairs until a worker calibrates them (one that failed keeps them): by age.
    uploads = CalibrationUpload.objects.filter(created_at__lt=cutoff).delete()[0]
    for label, n in (("verifier_labels", verifier_labels), ("calibration_uploads", uploads),
                     ("admin_log_scrubbed", admin_log_scrub())):
        if n:
            counts[label] = n
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


# Models whose rows hold a customer's question; their admin log entries name the object only by id.
CUSTOMER_TEXT_MODELS = (LabeledPair, SemanticEntry, PairVerification)


def admin_log_scrub() -> int:
    """Django's admin log copies ``str(obj)`` into ``object_repr``; those models' ``__str__`` once quoted
    the customer's question. Rewrite such entries to ``<model> <id>`` (who changed what, and when, stays)."""
    scrubbed = 0
    for model in CUSTOMER_TEXT_MODELS:
        label = f"{model._meta.verbose_name} "
        scrubbed += (LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(model))
                     .exclude(object_repr=Concat(Value(label), F("object_id")))
                     .update(object_repr=Concat(Value(label), F("object_id"))))
    return scrubbed


def sessions_clear_expired() -> int:
    """Delete expired sessions (Django's ``clearsessions``): a session keeps the chat page's thread and
    pending questions, which outlive nothing they were kept for. Returns how many went."""
    expired = Session.objects.filter(expire_date__lt=timezone.now())
    return expired.delete()[0]


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
    """Delete the customer's Asks, their decisions and everything else holding their questions; counts by kind."""
    asks = customer_asks(tenant, customer)
    request_ids = {str(r) for r in asks.values_list("request_id", flat=True)}
    questions = list(asks.values_list("question", flat=True))
    normalized = list(asks.values_list("normalized_question", flat=True))
    counts = {"exact_entries": 0, "search_entries": 0, "embeddings": 0}
    if request_ids:
        counts.update(_erase_cached(tenant, request_ids, questions, normalized))
    with transaction.atomic():
        counts["chat_sessions"] = threads_erase(  # the chat page's sessions and threads (supportbot.chat_thread)
            tenant, customer, customer_ref(Asker(tenant, tenant.default_locale, customer)))
        # Aliases the customer's near misses made go with their Asks (cascade); the verifier's
        # training labels hold the question text without a link, so they go by text (first, so
        # they are counted as such before the sweep of labelled pairs quoting the questions).
        counts["verifier_labels"] = LabeledPair.objects.filter(
            tenant=tenant, source=LabeledPair.Source.VERIFIER, new_question__in=questions).delete()[0]
        entries = SemanticEntry.objects.filter(tenant=tenant, source_ask__in=asks)
        forgotten = entries_forget(entries, questions=questions, tenant=tenant)
        counts["semantic_entries"] = forgotten.pop("caching.SemanticEntry", 0)
        counts["decisions"] = CacheDecision.objects.filter(ask__in=asks).count()
        _, deleted = asks.delete()
    counts["asks"] = deleted.get("caching.AskEvent", 0)
    for label, n in [*forgotten.items(), *deleted.items()]:
        if label not in ("caching.AskEvent", "caching.CacheDecision"):
            name = label.split(".", 1)[-1].lower()
            counts[name] = counts.get(name, 0) + n
    return counts


def entries_forget(entries, *, questions: list[str] | None = None, tenant: Tenant | None = None) -> dict[str, int]:
    """Delete semantic entries and every trace of their questions in other Asks' records: the
    candidate question, reason and signature difference of decisions that considered them (a
    guard's reason quotes the cached question), the cache reason of Asks they served and the
    labelled pairs of those decisions. ``questions`` (with ``tenant``): texts to forget in the
    tenant's decisions and pairs as well, for traces whose entry is gone already. Counts by label."""
    ids = [str(pk) for pk in entries.values_list("pk", flat=True)]
    tenants = list(entries.values_list("tenant_id", flat=True).distinct())
    decisions = CacheDecision.objects.filter(tenant_id__in=tenants, layer=CacheDecision.Layer.SEMANTIC,
                                             candidate__in=ids)
    pairs = LabeledPair.objects.filter(decision__in=decisions)
    if questions and tenant is not None:
        quoted = CacheDecision.objects.filter(tenant=tenant, layer=CacheDecision.Layer.SEMANTIC,
                                              candidate_question__in=questions)
        decisions = decisions | quoted
        pairs = pairs | LabeledPair.objects.filter(tenant=tenant).filter(
            Q(decision__in=quoted) | Q(cached_question__in=questions) | Q(new_question__in=questions))
    _, deleted = pairs.delete()
    counts = {k: v for k, v in deleted.items() if v}
    AskEvent.objects.filter(pk__in=decisions.values("ask_id"), serving_layer=AskEvent.ServingLayer.SEMANTIC).update(
        cache_reason=ERASED_REASON)
    counts["scrubbed_decisions"] = decisions.update(candidate_question="", reason=ERASED_REASON,
                                                    signature_difference=None)
    _, deleted = entries.delete()
    for label, n in deleted.items():
        counts[label] = counts.get(label, 0) + n
    return counts


def _erase_cached(tenant: Tenant, request_ids: set[str], questions: list[str], normalized: list[str]) -> dict[str, int]:
    scope = CacheScope(tenant.pk, tenant.slug, frozenset(request_ids), tuple(questions), tuple(normalized))
    try:
        exact = exact_layer.purge_scope(scope)
        search = search_layer.purge_scope(scope)
        embeddings = embedding_layer.purge_scope(scope)
        budgets.ledger_prune(get_redis(), tenant.pk)  # the ledgers name the deleted keys (core.budgets)
    except RedisUnavailable as exc:
        redis_failed(exc)
        raise CacheUnavailable(f"redis unavailable ({type(exc).__name__}); nothing was erased, run it again") from exc
    return {"exact_entries": exact, "search_entries": search, "embeddings": embeddings}


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if not isinstance(value, (str, int, float, bool, list, dict, type(None))):
        return str(value)
    return value
