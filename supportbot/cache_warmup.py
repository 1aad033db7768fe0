"""Warm-up after a bump: a model, prompt or policy version change makes every cached answer of a
tenant unreachable at once (the versions are part of every key). Instead of letting the full load
reach the model, a job answers each tenant's most-asked questions again, off the request path,
through the usual Ask path and its admission checks, at most ``CACHE_WARMUP_PER_SECOND`` a second.

``warmup_due`` compares each tenant's answer fingerprint (model, prompt version, tenant prompt,
policy version) with the one its last warm-up ran for (kept in the database as the job run's
detail); beat runs it every five minutes (``supportbot.tasks.cache_warmup``). Each run is a Job
run (``cache_warmup``): questions tried, answers admitted, already cached, refused.

Warm-up asks are recorded like any Ask (their records and metrics are the cost they had).
"""
from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from caching.keys import digest
from caching.models import AskEvent
from core.jobs import job_run
from core.models import JobRun, Tenant
from supportbot import pipeline

log = logging.getLogger(__name__)

WARMUP_JOB = "cache_warmup"
CACHED_LAYERS = (AskEvent.ServingLayer.EXACT, AskEvent.ServingLayer.SEMANTIC)


def answer_fingerprint(tenant: Tenant) -> str:
    """What every cached answer of the tenant is keyed on besides the question: a change of it
    makes them all unreachable."""
    writer = pipeline.get_answerer().spec()  # what answer_spec builds every key from
    return digest([writer.model, writer.model_revision, writer.prompt_version, writer.params,
                   pipeline.retrieval_version(), pipeline.tenant_prompt_version(tenant), tenant.policy_version])[:16]


def top_questions(tenant: Tenant, limit: int, days: int) -> list[tuple[str, str]]:
    """(locale, question) of the tenant's most-asked answered general questions of the last ``days``,
    anonymous ones only (a signed-in customer's question never becomes a shared answer by this path)."""
    since = timezone.now() - timezone.timedelta(days=days)
    rows = (AskEvent.objects.filter(tenant=tenant, created_at__gte=since, status=AskEvent.Status.ANSWERED,
                                    scope="anonymous", category="general")
            .exclude(normalized_question="").values("locale", "normalized_question")
            .annotate(n=Count("id"), question=Max("question")).order_by("-n", "normalized_question")[:limit])
    return [(r["locale"], r["question"]) for r in rows if r["locale"] in tenant.locales]


def warmup_due() -> list[int]:
    """Tenants whose answer fingerprint differs from the one their last warm-up ran for. A tenant
    not seen before gets its fingerprint recorded (a new tenant or a first deploy: nothing to re-answer)."""
    seen = _last_fingerprints()
    current = {str(t.pk): answer_fingerprint(t) for t in Tenant.objects.all()}
    missing = {pk: fp for pk, fp in current.items() if pk not in seen}
    if missing:
        with job_run(WARMUP_JOB) as ctx:  # the baseline of the new ones
            ctx.run.detail["fingerprints"] = {**seen, **missing}
    return [int(pk) for pk, fp in current.items() if pk in seen and seen[pk] != fp]


def warmup_run(tenant_ids=None, *, limit: int | None = None, per_second: float | None = None,
               task_id: str = "", attempt: int = 1) -> JobRun:
    """Answer the most-asked questions of ``tenant_ids`` (None: every tenant) again, rate-limited."""
    limit = settings.CACHE_WARMUP_TOP_QUESTIONS if limit is None else limit
    per_second = settings.CACHE_WARMUP_PER_SECOND if per_second is None else per_second
    tenants = list(Tenant.objects.filter(pk__in=tenant_ids) if tenant_ids is not None else Tenant.objects.all())
    with job_run(WARMUP_JOB, task_id=task_id, attempt=attempt) as ctx:
        plan = [(t, locale, q) for t in tenants for locale, q in top_questions(t, limit, settings.CACHE_WARMUP_DAYS)]
        counts = {"admitted": 0, "cached": 0, "refused": 0, "failed": 0}
        ctx.progress(0, len(plan))
        gap = 1.0 / per_second if per_second > 0 else 0.0
        for i, (tenant, locale, question) in enumerate(plan):
            started = time.monotonic()
            try:
                outcome = pipeline.ask(pipeline.Asker(tenant, locale, client="warmup"), question)
            except Exception as exc:  # noqa: BLE001 - one question never stops the warm-up
                counts["failed"] += 1
                log.warning("warm-up of tenant %s: %s", tenant.slug, type(exc).__name__)
            else:
                if outcome.layer in CACHED_LAYERS:
                    counts["cached"] += 1
                elif any(d.get("layer") == "admission" and d.get("disposition") == "stored"
                         for d in outcome.decisions):
                    counts["admitted"] += 1
                else:
                    counts["refused"] += 1
            ctx.progress(i + 1, len(plan))
            wait = gap - (time.monotonic() - started)
            if wait > 0 and i + 1 < len(plan):
                time.sleep(wait)
        ctx.record(scanned=len(plan), changed=counts["admitted"], cache_hits=counts["cached"])
        ctx.run.detail.update(counts, fingerprints={**_last_fingerprints(),
                                                    **{str(t.pk): answer_fingerprint(t) for t in tenants}})
    return ctx.run


def _last_fingerprints() -> dict:
    last = JobRun.objects.filter(job=WARMUP_JOB, status=JobRun.Status.SUCCEEDED).order_by("-started_at").first()
    return dict((last.detail or {}).get("fingerprints", {})) if last else {}
