"""Staff review of cache hits: customer feedback, the wrong-hit review queue, sampled-hit
labels, quarantine and staff-corrected answers. Every staff action is audited.

Queue membership:
* a customer's "no" on an answer opens a review item at once: on an answer served from a
  cache (exact or semantic) about the hit, on a fresh answer about the answer itself (layer
  "fresh", its decision the Ask's admission: the answer may be in the caches now);
* a sampled hit labelled wrong opens one;
* the automatic second opinion opens one when the fresh answer disagrees.
A decision has at most one open item; a second "no" or flag on it joins the open one.

Two kinds of wrong: a wrong hit (reasons entity … other) is a cached answer served to a question
it does not fit, the cache judge's mistake, and becomes a negative calibration pair; a wrong answer
(reason ``answer_wrong``) was wrong for its own question too. Labelling one quarantines the entry
at once and drops it from every layer (exact, semantic, and the question's search results), opens
the review item where staff write the corrected answer, never becomes a calibration pair, and is
counted apart from wrong hits (``caching.stats``).
"""
from __future__ import annotations

import logging
import time

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from caching import guards
from caching.audit import audit
from caching.citations import stale_citations
from caching.layers import exact_layer, search_layer, semantic_layer
from caching.layers.base import CachedAnswer
from caching.layers.search import search_key
from caching.models import (ANSWER_LAYERS, AskEvent, CacheDecision, Feedback, Label, LabeledPair, ReasonCode,
                            ReviewItem, SampledHit, SemanticEntry)
from caching.rollups import tenant_lookup
from core import metrics
from core.redis_client import RedisUnavailable, redis_failed
from retrieval.embeddings import embed_query, embed_texts, question_scope
from retrieval.search import index_version
from retrieval.services import active_generation_cached
from supportbot import pipeline
from supportbot.conversation import Resolution

log = logging.getLogger(__name__)

REASON_KEYS = {str(i): code for i, code in enumerate(ReasonCode.values, start=1)}  # labelling shortcuts 1-8


class ReviewError(Exception):
    """A staff action that cannot be carried out; the message is shown to the user."""


# --------------------------------------------------------------------------- lookups

def served_decision(ask: AskEvent) -> CacheDecision | None:
    """The decision of the layer that served this Ask's answer (None for a fresh answer)."""
    if ask.serving_layer not in ANSWER_LAYERS:
        return None
    return ask.decisions.filter(layer=ask.serving_layer, disposition=CacheDecision.Disposition.HIT).first()


def entry_of(decision: CacheDecision) -> SemanticEntry | None:
    """The semantic entry behind a hit: the candidate of a semantic decision; for an exact hit,
    the entry admitted with the same exact key (the decision keeps the key's last 16 characters)."""
    if decision.layer == CacheDecision.Layer.SEMANTIC and decision.candidate.isdigit():
        return SemanticEntry.objects.filter(pk=int(decision.candidate)).first()
    if decision.layer == CacheDecision.Layer.EXACT and decision.candidate:
        return (SemanticEntry.objects.filter(tenant_id=decision.tenant_id, exact_key__endswith=decision.candidate)
                .order_by("-created_at").first())
    return None


def exact_keys_of(decision: CacheDecision, entry: SemanticEntry | None) -> list[str]:
    """Every exact-cache key that may hold the answer behind this decision."""
    keys = {entry.exact_key} if entry is not None and entry.exact_key else set()
    if decision.layer == CacheDecision.Layer.EXACT and decision.candidate:
        # An exact entry need not have a semantic twin (semantic mode off): find its key by suffix.
        try:
            keys.update(exact_layer.keys_ending(decision.tenant_id, decision.candidate))
        except RedisUnavailable as exc:
            redis_failed(exc)
            raise ReviewError("Redis is unavailable: the exact cache cannot be cleared now, try again") from None
    return sorted(keys)


# --------------------------------------------------------------------------- customer feedback

def fresh_decision(ask: AskEvent) -> CacheDecision | None:
    """The decision a review of a fresh answer hangs on: the Ask's admission (stored or refused),
    else its last decision (an Ask that failed before admission)."""
    decisions = ask.decisions.order_by("-pk")
    return decisions.filter(layer=CacheDecision.Layer.ADMISSION).first() or decisions.first()


def fresh_entry(ask: AskEvent) -> SemanticEntry | None:
    """The semantic entry a fresh answer was admitted as (None when it was not admitted)."""
    return SemanticEntry.objects.filter(source_ask=ask).order_by("-pk").first()


@transaction.atomic
def feedback_record(ask: AskEvent, helpful: bool, comment: str = "") -> tuple[Feedback, ReviewItem | None]:
    feedback, _ = Feedback.objects.update_or_create(ask=ask, defaults={"helpful": helpful, "comment": comment[:2000]})
    item = None
    if not helpful:
        decision = served_decision(ask)
        if decision is not None:
            item = review_open(decision, ReviewItem.Source.FEEDBACK, note=comment[:2000])
        elif ask.serving_layer not in ANSWER_LAYERS and (decision := fresh_decision(ask)) is not None:
            item = review_open(decision, ReviewItem.Source.FEEDBACK, note=comment[:2000], fresh=True)
    return feedback, item


def review_open(decision: CacheDecision, source: str, *, reason: str = "", note: str = "",
                fresh: bool = False) -> ReviewItem:
    """The open review item of a decision, created if there is none. ``fresh``: the item is about a
    fresh answer (the decision is its admission), not about a hit."""
    existing = ReviewItem.objects.filter(decision=decision, status=ReviewItem.Status.OPEN).first()
    if existing is not None:
        return existing
    if fresh:
        entry, layer = fresh_entry(decision.ask), ReviewItem.FRESH
    else:
        entry, layer = entry_of(decision), decision.layer if decision.disposition == "hit" else "shadow"
    try:
        with transaction.atomic():
            return ReviewItem.objects.create(source=source, reason=reason, tenant_id=decision.tenant_id,
                                             ask_id=decision.ask_id, decision=decision, entry=entry, layer=layer,
                                             note=note)
    except IntegrityError:  # opened concurrently
        return ReviewItem.objects.get(decision=decision, status=ReviewItem.Status.OPEN)


# --------------------------------------------------------------------------- labels and pairs

def pair_keep(decision: CacheDecision, should_hit: bool, reason: str, source: str) -> LabeledPair | None:
    """Keep (cached question, new question) as a labelled pair for calibration. Only semantic
    decisions make pairs: an exact hit is the same question, no threshold decides it."""
    if decision.layer != CacheDecision.Layer.SEMANTIC or not decision.candidate_question:
        return None
    entry = entry_of(decision)
    probability, judge_version = decision.judge_probability, decision.judge_version
    if probability is None:  # a strict match served without the judge: score the pair now, for calibration
        probability, judge_version = guards.score_pair(decision.candidate_question, decision.ask.question,
                                                       decision.similarity, locale=decision.ask.locale)
    pair, _ = LabeledPair.objects.update_or_create(
        decision=decision,
        defaults={"tenant_id": decision.tenant_id, "cached_question": decision.candidate_question,
                  "new_question": decision.ask.question, "should_hit": should_hit,
                  "reason": "" if should_hit else reason, "source": source, "similarity": decision.similarity,
                  "embedding_version": entry.embedding_version if entry else "",
                  "judge_probability": probability, "judge_version": judge_version},
    )
    return pair


@transaction.atomic
def label_sample(sample: SampledHit, verdict: str, reason: str, user) -> Label:
    """A labeller's verdict on a sampled hit; "wrong" sends it to the review queue. Idempotent
    per sample: a second verdict (a double submit, two labellers) returns the first label."""
    if verdict not in Label.Verdict.values:
        raise ReviewError(f"unknown verdict {verdict!r}")
    if verdict == Label.Verdict.WRONG and reason not in ReasonCode.values:
        raise ReviewError("a wrong hit needs a reason")
    sample = (SampledHit.objects.select_for_update(of=("self",)).select_related("decision__ask", "decision__tenant")
              .get(pk=sample.pk))
    decision = sample.decision
    if sample.labeled:  # two labellers on one item: the first verdict stands
        return decision.labels.order_by("-created_at").first()
    label = Label.objects.create(decision=decision, verdict=verdict, reason=reason if verdict == "wrong" else "",
                                 source=Label.Source.SAMPLE, labeler=user)
    sample.labeled = True
    sample.save(update_fields=["labeled"])
    if reason != ReasonCode.ANSWER_WRONG:  # a wrong answer says nothing about the two questions
        pair_keep(decision, verdict == Label.Verdict.CORRECT, reason, LabeledPair.Source.LABEL)
    removed = None
    if verdict == Label.Verdict.WRONG:
        item = review_open(decision, ReviewItem.Source.SAMPLE, reason=reason)
        if reason == ReasonCode.ANSWER_WRONG:  # nobody may get it again while it waits for its correction
            removed = _quarantine_item(item, user, reason)
    audit(user, "label", sample, verdict=verdict, reason=label.reason, decision=decision.pk, removed=removed)
    return label


def next_sample(exclude_ids=(), tenant_id=None) -> SampledHit | None:
    """The oldest unlabelled sampled hit, skipping the ones this labeller passed on; ``tenant_id``:
    one tenant, a collection of tenants or None for all (``rollups.tenant_lookup``)."""
    return (SampledHit.objects.filter(labeled=False, **tenant_lookup(tenant_id)).exclude(pk__in=list(exclude_ids))
            .select_related("decision__ask", "tenant").order_by("created_at", "pk").first())


# --------------------------------------------------------------------------- review actions

def _resolve(item: ReviewItem, status: str, user, reason: str = "") -> None:
    if item.status != ReviewItem.Status.OPEN:
        raise ReviewError(f"this item was already resolved ({item.get_status_display()})")
    item.status, item.resolved_at, item.resolved_by = status, timezone.now(), user
    if reason:
        item.reason = reason
    item.save(update_fields=["status", "resolved_at", "resolved_by", "reason"])


def _locked(item: ReviewItem) -> ReviewItem:
    return (ReviewItem.objects.select_for_update(of=("self",))
            .select_related("decision__ask", "decision__tenant", "ask__tenant", "entry").get(pk=item.pk))


@transaction.atomic
def review_confirm_wrong(item: ReviewItem, reason: str, user) -> dict:
    """The hit was wrong: quarantine its entry from every cache and keep the negative pair."""
    if reason not in ReasonCode.values:
        raise ReviewError("choose a reason code")
    item = _locked(item)
    _resolve(item, ReviewItem.Status.CONFIRMED_WRONG, user, reason)
    removed = _quarantine_item(item, user, reason)
    Label.objects.create(decision=item.decision, verdict=Label.Verdict.WRONG, reason=reason,
                         source=Label.Source.REVIEW, labeler=user)
    if reason != ReasonCode.ANSWER_WRONG:
        pair_keep(item.decision, False, reason, LabeledPair.Source.REVIEW)
    audit(user, "review_confirm_wrong", item, reason=reason, removed=removed)
    return removed


@transaction.atomic
def review_dismiss(item: ReviewItem, user) -> None:
    """Not wrong: the hit stays, and the pair is kept as a positive."""
    item = _locked(item)
    _resolve(item, ReviewItem.Status.DISMISSED, user)
    Label.objects.create(decision=item.decision, verdict=Label.Verdict.CORRECT, source=Label.Source.REVIEW,
                         labeler=user)
    pair_keep(item.decision, True, "", LabeledPair.Source.REVIEW)
    audit(user, "review_dismiss", item)


@transaction.atomic
def review_correct(item: ReviewItem, answer: str, reason: str, user) -> SemanticEntry:
    """The hit was wrong and staff wrote the right answer: quarantine the old entry and store the
    corrected answer for the customer's question as a verified staff entry (both answer caches),
    citing the same article versions so a change to them purges it like any other entry."""
    answer = (answer or "").strip()
    if not answer:
        raise ReviewError("write the corrected answer")
    if reason not in ReasonCode.values:
        raise ReviewError("choose a reason code")
    item = _locked(item)
    ask = item.ask
    citations = (item.entry.citations if item.entry is not None else ask.citations) or ask.citations
    if not citations:
        raise ReviewError("the answer has no citations to keep: a verified entry must cite the knowledge base")
    if stale_citations(ask.tenant_id, citations):
        raise ReviewError("a cited article has changed since: let the next fresh answer replace it instead")
    _resolve(item, ReviewItem.Status.CORRECTED, user, reason)
    removed = _quarantine_item(item, user, reason)
    Label.objects.create(decision=item.decision, verdict=Label.Verdict.WRONG, reason=reason,
                         source=Label.Source.REVIEW, labeler=user)
    if reason != ReasonCode.ANSWER_WRONG:
        pair_keep(item.decision, False, reason, LabeledPair.Source.REVIEW)
    entry = staff_answer_store(ask, answer, citations)
    item.corrected_entry = entry
    item.save(update_fields=["corrected_entry"])
    audit(user, "review_correct", item, reason=reason, removed=removed, entry=entry.pk, answer=answer[:500])
    return entry


def _quarantine_item(item: ReviewItem, user, reason: str) -> dict:
    if item.layer == ReviewItem.FRESH:  # the Ask's own admission stored the answer: its decision names the key
        entry = item.entry
        stored = item.ask.decisions.filter(layer=CacheDecision.Layer.EXACT,
                                           disposition=CacheDecision.Disposition.STORED).first()
        keys = exact_keys_of(stored, entry) if stored else ([entry.exact_key] if entry and entry.exact_key else [])
    else:
        entry = item.entry or (entry_of(item.decision) if item.decision else None)
        keys = exact_keys_of(item.decision, entry) if item.decision else []
    removed = entry_quarantine(entry, keys, user, why=f"review item {item.pk}: {reason}")
    if reason == ReasonCode.ANSWER_WRONG:
        removed["search"] = search_forget(item.ask)
    return removed


def search_forget(ask: AskEvent) -> int:
    """Drop the cached search results of an Ask's question, so its next fresh answer reads the
    knowledge base again rather than the passages behind a wrong answer."""
    generation = active_generation_cached()
    if generation is None:
        return 0
    state = answer_scope(ask.tenant, ask.locale, ask.question, ask)
    key = search_key(state.normalized, ask.tenant_id, ask.locale, settings.RETRIEVAL_TOP_K, generation.pk,
                     index_version(ask.tenant_id))
    return search_layer.delete(key)


def entry_quarantine(entry: SemanticEntry | None, exact_keys: list[str], user=None, why: str = "") -> dict:
    """Take an answer out of every answer cache at once: the semantic entry becomes
    quarantined (never served again) and its exact-cache keys are deleted. If Redis cannot delete
    them, the quarantine is audited as incomplete and ``ReviewError`` says so: the answer may still
    be served from the exact cache, and staff must try again (never reported as removed)."""
    semantic = 0
    if entry is not None:
        semantic = SemanticEntry.objects.filter(pk=entry.pk).exclude(status=SemanticEntry.Status.QUARANTINED).update(
            status=SemanticEntry.Status.QUARANTINED)
    try:
        exact = exact_layer.delete_keys(list(exact_keys)) if exact_keys else 0
    except RedisUnavailable as exc:
        redis_failed(exc)
        audit(user, "quarantine_incomplete", entry if entry is not None else ("exact cache", exact_keys[0][-16:]),
              why=why, removed={"semantic": semantic, "exact": 0}, exact_keys=[k[-16:] for k in exact_keys],
              error=type(exc).__name__)
        raise ReviewError("the answer was quarantined in the semantic cache, but the exact cache could not be "
                          "reached to delete it: it may still be served from there. Try again shortly.") from exc
    removed = {"semantic": semantic, "exact": exact}
    for layer, count in removed.items():
        metrics.EVICTIONS.labels(layer, "quarantine").inc(count)
    if entry is not None or exact_keys:
        target = entry if entry is not None else ("exact cache", exact_keys[0][-16:])
        audit(user, "quarantine", target, why=why, removed=removed, exact_keys=[k[-16:] for k in exact_keys])
    return removed


# --------------------------------------------------------------------------- staff answers

def answer_scope(tenant, locale: str, question: str, ask: AskEvent | None = None):
    """The pipeline's view of a question now: eligibility, exact key and semantic scope
    (built by the pipeline's own steps, so a staff entry lands where a lookup will find it).
    With ``ask``, its recorded resolution is kept: ``question`` is already the resolved one."""
    if ask is not None and ask.resolution:
        question = Resolution(message=ask.message or question, question=question, how=ask.resolution,
                              detail=ask.resolution_detail)
    state = pipeline.start(pipeline.Asker(tenant, locale, None), question, streamed=False)
    pipeline.check_eligibility(state)
    return state


def staff_answer_store(ask: AskEvent, answer: str, citations: list[dict]) -> SemanticEntry:

    state = answer_scope(ask.tenant, ask.locale, ask.question, ask)
    if not state.eligibility.eligible:
        raise ReviewError(f"this question is not shared across customers ({state.eligibility.reason}): "
                          "a cached answer would never be served for it")
    cached = CachedAnswer(answer=answer, citations=citations, intent=state.eligibility.intent, created=time.time(),
                          model=state.spec.model, prompt_version=state.spec.prompt_version,
                          source_request=str(ask.request_id), question=ask.question)
    entry = semantic_layer.store(pipeline.semantic_scope(state), question=ask.question,
                                  normalized_question=state.normalized,
                                  vector=embed_query(ask.question, cache=question_scope(ask.tenant_id)),
                                  answer=cached, exact_key=state.key, source=SemanticEntry.Source.STAFF,
                                  source_ask=ask)
    exact_layer.store(state.key, cached, ask.tenant_id)
    return entry


# --------------------------------------------------------------------------- second opinion

def second_opinion(sample: SampledHit) -> ReviewItem | None:
    """Answer a sampled semantic hit's question afresh (retrieval + generation, never served or
    stored) and flag the hit for review when the two answers disagree: the fresh one finds no
    answer, cites none of the same articles, or means something else (answer embeddings)."""

    decision = sample.decision
    ask = decision.ask
    entry = entry_of(decision)
    cached_answer = entry.answer if entry is not None else ask.answer
    cached_cites = {c.get("article_id") for c in (entry.citations if entry is not None else ask.citations)}
    state = answer_scope(ask.tenant, ask.locale, ask.question, ask)
    for _ in pipeline.answer_fresh(state):
        pass
    if state.status != AskEvent.Status.ANSWERED:
        log.info("second opinion for sample %s unavailable: %s", sample.pk, state.error)
        return None
    problems = []
    if not state.covered:
        problems.append("the fresh answer found nothing in the knowledge base")
    else:
        fresh_cites = {c.get("article_id") for c in state.citations}
        if cached_cites and fresh_cites and not cached_cites & fresh_cites:
            problems.append(f"cites {sorted(fresh_cites)} instead of {sorted(cached_cites)}")
        a, b = embed_texts([cached_answer, state.answer])
        agreement = float(np.dot(a, b))
        if agreement < settings.SECOND_OPINION_MIN_AGREEMENT:
            problems.append(f"answers agree only {agreement:.2f} (< {settings.SECOND_OPINION_MIN_AGREEMENT:.2f})")
    if not problems:
        return None
    note = "Second opinion disagrees: " + "; ".join(problems) + f"\n\nFresh answer:\n{state.answer}"
    return review_open(decision, ReviewItem.Source.AUTO_FLAG, note=note[:4000])
