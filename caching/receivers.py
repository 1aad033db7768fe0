"""Changes below the caches -> purges, queued only once the change is committed.

``article_changed`` (``ingestion.signals``) is sent after commit (ingestion, or staff saving an
article in the admin). A changed or removed article queues a purge of everything citing it on the
``purge`` queue (the re-index of its tenant is retrieval's own receiver). A publish that fails
(broker down) is logged and never breaks the save: the nightly sweep catches up.

``index_refreshed`` (``retrieval.signals``) is sent, inside the job, once new or changed articles are
searchable (the re-index after a change, or the nightly re-embed): search results cached meanwhile
that cite them go at once, and a purge is queued of the cached answers whose question now retrieves
one of them (``caching.purge.purge_retrieving``), answers that cite none of them and would still be
served otherwise.

``generation_switched`` (``retrieval.signals``): a new embedding model is active, so semantic entries
embedded with another model are retired (their vectors are not comparable any more).
"""
from __future__ import annotations

import logging


from caching import tasks
from caching.models import AskEvent, CacheDecision, Feedback, Label, PurgeRecord
from caching.purge import purge_citing, semantic_retire_other_models
from caching.thresholds import threshold_state
from core.signals import after_commit

log = logging.getLogger(__name__)


def _queue_purge(article_pk: int, version: int | None, trigger: str) -> None:
    tasks.purge_article.apply_async((article_pk, version, trigger))


def article_changed_queue_purge(sender, *, article_id: int, old_version: int, new_version: int | None,
                                trigger: str, **kwargs) -> None:
    if old_version:  # a new article has nothing citing it yet
        after_commit(_queue_purge, article_id, new_version, trigger)


def _queue_purge_retrieving(article_pks: list[int], trigger: str) -> None:
    try:
        tasks.purge_retrieving.apply_async((article_pks, trigger))
    except Exception:  # the broker is down: the entries expire by TTL; logged, never fails the job
        log.exception("could not queue the purge of answers retrieving articles %s", article_pks[:20])


def index_refreshed_purge(sender, *, article_pks: list[int], trigger: str, **kwargs) -> None:
    if trigger == "reindex":  # search results cached between the change and its re-index
        for pk in article_pks:
            purge_citing(pk, None, PurgeRecord.Trigger.REINDEX, layers=("search",))
    after_commit(_queue_purge_retrieving, list(article_pks), trigger)


def generation_switched_retire(sender, *, model: str, model_version: str, **kwargs) -> int:
    """Returns how many entries were retired (the upgrade's job run records it)."""
    notice = threshold_state(model=(model, model_version)).notice()
    if notice:  # thresholds belong to the model they were measured on (``caching.thresholds``)
        log.warning("%s", notice)
    return semantic_retire_other_models(model, model_version)


def _queue_fallback_check(tenant_id: int) -> None:
    try:
        tasks.semantic_fallback_check.apply_async((tenant_id,))
    except Exception:  # the broker is down: beat's check of every minute catches up
        log.exception("could not queue the semantic fallback check of tenant %s", tenant_id)


def label_saved_check_fallback(sender, instance: Label, created: bool, **kwargs) -> None:
    """A wrong label on a served semantic hit: check its tenant's bounds once the label is committed."""
    if created and instance.verdict == Label.Verdict.WRONG:
        row = (CacheDecision.objects.filter(pk=instance.decision_id, layer=CacheDecision.Layer.SEMANTIC,
                                            disposition="hit").values_list("tenant_id", flat=True).first())
        if row is not None:
            after_commit(_queue_fallback_check, row)


def feedback_saved_check_fallback(sender, instance: Feedback, **kwargs) -> None:
    """A customer's No on a semantic hit: the same check."""
    if not instance.helpful:
        tenant_id = (AskEvent.objects.filter(pk=instance.ask_id, serving_layer=AskEvent.ServingLayer.SEMANTIC)
                     .values_list("tenant_id", flat=True).first())
        if tenant_id is not None:
            after_commit(_queue_fallback_check, tenant_id)
