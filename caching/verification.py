"""The check of a queued near miss, on a worker (``caching.tasks.pair_verify``): the verifier's yes
or no becomes an alias of the entry and a training label (``caching.learning`` queues the pairs)."""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from caching.models import LabeledPair, PairVerification, SemanticEntry
from generation.verifier import Verdict, verify

log = logging.getLogger(__name__)


def pair_verify(verification_id: int) -> PairVerification:
    """Ask the verifier about one queued pair; approve it as an alias and keep the label.
    Idempotent: a pair that already has a verdict is returned as it is."""
    row = PairVerification.objects.select_related("entry", "tenant").get(pk=verification_id)
    if row.verdict != PairVerification.Verdict.PENDING:
        return row
    entry = row.entry
    if entry.status != SemanticEntry.Status.ACTIVE:
        verdict = Verdict(None, f"entry is {entry.status}: nothing to alias", "", 0.0)
    else:
        verdict = verify(row.tenant.slug, entry.question, entry.answer, row.question,
                         timeout_s=settings.JUDGE_VERIFIER_TIMEOUT_S)
    return verification_record(row, verdict)


@transaction.atomic
def verification_record(row: PairVerification, verdict: Verdict) -> PairVerification:
    row = PairVerification.objects.select_for_update().get(pk=row.pk)
    if row.verdict != PairVerification.Verdict.PENDING:  # a redelivered task finished first
        return row
    row.verdict = (PairVerification.Verdict.ERROR if verdict.error else
                   PairVerification.Verdict.APPROVED if verdict.approved else PairVerification.Verdict.REJECTED)
    row.detail, row.verifier_model, row.verify_ms = verdict.detail[:300], verdict.model[:200], verdict.ms
    row.prompt_tokens, row.cached_tokens, row.verified_at = verdict.prompt_tokens, verdict.cached_tokens, timezone.now()
    row.save()
    if not verdict.error:
        LabeledPair.objects.create(
            tenant_id=row.tenant_id, cached_question=row.entry.question, new_question=row.question,
            should_hit=bool(verdict.approved), source=LabeledPair.Source.VERIFIER,
            judge_probability=row.judge_probability, judge_version=row.judge_version,
            embedding_version=row.entry.embedding_version)
    log.info("near miss %s: %s (%s, %.0f ms)", row.pk, row.verdict, verdict.detail, verdict.ms)
    return row
