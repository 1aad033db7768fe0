"""A saved or deleted tenant or API key bumps the tenant's revision (``supportbot.selectors``); a
recorded Ask's hits are sampled for labelling (and their second opinions queued); a staff label
counts in the metrics."""
from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from caching.models import AskEvent, CacheDecision, Feedback, Label
from core import metrics
from core.models import Tenant, TenantApiKey
from supportbot import hit_sampling, tasks
from supportbot.selectors import tenant_cache
from supportbot.signals import decisions_recorded


def tenant_changed(sender, instance: Tenant, **kwargs) -> None:
    # By id: a changed slug stops resolving too, since the record under the id no longer carries it.
    tenant_cache.bump(instance.pk)


def api_key_changed(sender, instance: TenantApiKey, **kwargs) -> None:
    tenant_cache.bump(instance.tenant_id)


def decisions_recorded_sample(sender, *, asks, **kwargs) -> None:
    picked = hit_sampling.sample_batch(asks)
    if settings.SECOND_OPINION_ENABLED:
        for sample in picked:
            if sample.stratum == "semantic":
                transaction.on_commit(lambda pk=sample.pk: tasks.second_opinion.delay(pk))


def connect() -> None:
    post_save.connect(tenant_changed, sender=Tenant, dispatch_uid="supportbot.tenant_saved")
    post_delete.connect(tenant_changed, sender=Tenant, dispatch_uid="supportbot.tenant_deleted")
    post_save.connect(api_key_changed, sender=TenantApiKey, dispatch_uid="supportbot.api_key_saved")
    post_delete.connect(api_key_changed, sender=TenantApiKey, dispatch_uid="supportbot.api_key_deleted")
    decisions_recorded.connect(decisions_recorded_sample, dispatch_uid="supportbot.decisions_recorded_sample")


def hit_labelled(sender, instance, created: bool, **kwargs) -> None:
    """A staff verdict on a served hit, in the metrics (the wrong-hit rate is wrong / all)."""
    if not created:
        return
    row = CacheDecision.objects.filter(pk=instance.decision_id).values_list("layer", "tenant__slug").first()
    if row is not None:
        metrics.HIT_LABELS.labels(row[1] or "", row[0], instance.verdict).inc()


def feedback_counted(sender, instance: Feedback, created: bool, **kwargs) -> None:
    """A customer's yes or no, by the layer that served the answer: "no" on cached answers against
    "no" on fresh ones is what the alert compares. A changed verdict is not counted twice."""
    if not created:
        return
    row = AskEvent.objects.filter(pk=instance.ask_id).values_list("tenant__slug", "serving_layer").first()
    if row is not None:
        metrics.FEEDBACK.labels(row[0], row[1], "yes" if instance.helpful else "no").inc()


def connect_metrics() -> None:
    post_save.connect(hit_labelled, sender=Label, dispatch_uid="supportbot.hit_labelled")
    post_save.connect(feedback_counted, sender=Feedback, dispatch_uid="supportbot.feedback_counted")
