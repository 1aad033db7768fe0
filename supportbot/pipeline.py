"""The Ask pipeline: one function a step, in the order a question travels.

    conversation -> resolution -> guards -> exact answer cache -> semantic answer cache -> retrieval
           -> generation -> admission -> record

``ask_events`` is the pipeline; it yields ``("delta", text)`` while an answer is
being written and ends with ``("done", AskOutcome)``. Streaming views forward the
deltas; ``ask`` collects them. If the consumer stops early (a client went away),
the answer is recorded as interrupted and never admitted to a cache.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import hmac
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import AsyncIterator, Iterator

import numpy as np
from django.conf import settings
from django.db import DatabaseError, transaction

from caching import admission, guards, learning
from caching.answer_checks import asked as asking
from caching.keys import AnswerSpec, canonical_json, digest
from caching.layers import exact_layer, search_layer, semantic_layer
from caching.layers.base import CachedAnswer
from caching.layers.exact import exact_key
from caching.layers.search import search_key
from caching.layers.semantic import SemanticScope
from caching.models import AskEvent, CacheDecision
from caching.modes import hold_uncalibrated
from caching.thresholds import judge_threshold, threshold_state
from core import metrics
from core.cachelayer import LayerResult
from core.localcache import MISSING, LocalCache
from core.models import Tenant
from generation.base import GenerationError, GenerationResult, Passage
from generation.prompt import TenantPrompt, not_covered_text
from generation.verifier import verify
from ingestion.textsearch import text_search_config
from retrieval.embeddings import EmbedStats, embed_texts, question_scope
from retrieval.generations import GenerationMismatch, query_embedder
from retrieval.search import (SearchHit, article_hits, fuse, index_version, query_terms, search_hybrid, search_version,
                              words_terms)
from retrieval.services import active_generation_cached
from retrieval.subject import article_lexemes, spelled, subject_of
from supportbot import answerability, inflight, serving, tracing
from supportbot.answerability.features import named_terms
from supportbot.answerers import Answer, AnswerRequest, get_answerer
from supportbot.conversation import (Conversation, How, Resolution, asked_part, clarify_text, conditions,
                                     customers_words, dependence, grounded, grounded_in, last_reply, WORD_EDGES,
                                     resolve, resolved_normalized, without_words)
from supportbot.conversation_model import model_rewriter
from supportbot.hit_sampling import DecisionRef
from supportbot.inflight import InFlightRefused
from supportbot.questions import AskRejected, clean_question, normalize_question
from supportbot.records import HitRecordWriter, commit_asynchronously, copy_insert, pks_allocate
from supportbot.signals import decisions_recorded

log = logging.getLogger(__name__)


UNAVAILABLE_TEXT = ("Sorry, I can't answer right now. Please try again in a moment, or contact our support "
                    "team and a person will help you.")


@dataclass(frozen=True)
class Asker:
    """Who is asking, and where. ``customer`` is an authenticated customer id or None (anonymous)."""

    tenant: Tenant
    locale: str
    customer: str | None = None
    client: str = ""  # who the in-flight caps count (``ratelimit.client_key``); "" outside a web request
    ref: str = ""  # the customer's ``customer_ref`` when only that is known (the chat page's session keeps no id)


@dataclass
class AskOutcome:
    request_id: str
    status: str
    answer: str
    citations: list[dict]
    layer: str
    reason: str
    model: str
    timings_ms: dict
    handoff: str = ""
    decisions: list[dict] = field(default_factory=list)
    answerer: str = ""  # "extractive" (quoted help-centre text) | "model"
    related: list[dict] = field(default_factory=list)  # a hand-off's related articles: links, not the answer

    def to_api(self, *, timing_breakdown: bool = False) -> dict:
        """What the caller sees: the served layer only, never a decision's reason (a guard's reason
        quotes the cached question, another customer's words); only the total time unless the
        caller's API key was granted the breakdown, whose steps tell which shared caches answered."""
        return {
            "answer": self.answer,
            "citations": [{k: c[k] for k in ("article_id", "title", "url", "version")} for c in self.citations],
            "request_id": self.request_id,
            "status": self.status,
            "cache": {"layer": self.layer},
            "model": self.model,
            "answerer": self.answerer,
            "handoff": self.handoff,
            "related": [{k: r[k] for k in ("article_id", "title", "url")} for r in self.related],
            "timings_ms": self.timings_ms if timing_breakdown else {"total": self.timings_ms.get("total")},
        }


@dataclass
class AskState:
    asker: Asker
    question: str  # the resolved question: what guards, keys, retrieval and the answerer read
    normalized: str
    streamed: bool
    resolution: Resolution | None = None  # the customer's message, and how it became ``question``
    # a rewrite in the customer's own words (``own_words``: worked out when retrieval or the answer first needs it,
    # never on a cache hit) and its vector
    own: str | None = None
    own_vector: np.ndarray | None = None
    # a follow-up answered from the article of the assistant's last reply (``continued``): its message, which the
    # answerer reads in that article instead of the conversation's words
    continued: str = ""
    # the passages found for the assistant's last reply, by article (``reply_articles``: searched once a request)
    reply_found: dict | None = None
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.perf_counter)
    timings: dict = field(default_factory=dict)
    layers: list[LayerResult] = field(default_factory=list)
    eligibility: guards.Eligibility | None = None
    spec: AnswerSpec | None = None
    key: str = ""
    scope: SemanticScope | None = None
    vector: object = None
    embed_stats: EmbedStats = field(default_factory=EmbedStats)
    passages: list[Passage] = field(default_factory=list)
    article_pks: dict = field(default_factory=dict)  # chunk id -> article pk of each passage
    cited_explicitly: bool = False
    pending_semantic: CachedAnswer | None = None  # admitted; written with the record
    assist: CachedAnswer | None = None
    near_miss: LayerResult | None = None  # a semantic candidate the judge was unsure about, for the verifier
    served: CachedAnswer | None = None
    result: GenerationResult | None = None
    answer: str = ""
    citations: list[dict] = field(default_factory=list)
    status: str = AskEvent.Status.ANSWERED
    layer: str = AskEvent.ServingLayer.NONE
    reason: str = ""
    error: str = ""
    admitted: bool = False
    covered: bool = True
    answerability: answerability.Verdict | None = None  # whether a passage answers the question
    related: list[dict] = field(default_factory=list)
    trace: object = None  # the Ask's span while tracing is on (supportbot.tracing)
    slot: inflight.Slot | None = None  # the in-flight slot of a fresh answer (``hold_slot``)
    finished: bool = False  # ``ask_begin`` served and recorded it (a cache hit)
    request_ahead: tuple | None = None  # (``answer_request``'s result,) made in ``ask_begin_rest``'s hop

    def lap(self, name: str, since: float) -> None:
        self.timings[name] = round((time.perf_counter() - since) * 1000, 2)


# --------------------------------------------------------------------------- the pipeline

def ask_events(asker: Asker, raw_question, *, streamed: bool = False, prepared: AskState | None = None,
               prefetched: dict | None = None) -> Iterator[tuple[str, object]]:
    """``prepared``: the question already through ``prepare`` (under the same tenant, locale and
    streaming); ``prefetched``: Redis values read ahead (``prefetch_keys``), by key."""
    if (prepared is not None and prepared.asker.tenant is asker.tenant and prepared.asker.locale == asker.locale
            and prepared.streamed == streamed):
        state = prepared
        state.asker = asker  # the same tenant and locale; now with the authenticated customer
    else:
        state = start(asker, raw_question, streamed)
    finished = refused = False
    try:
        served = None if state.resolution.clarify else lookup(state, prefetched)
        if served is not None:
            serve_cached(state, served)
            yield "delta", state.answer
        elif state.resolution.clarify:
            clarify(state)
            yield "delta", state.answer
        else:
            try:
                hold_slot(state)
            except InFlightRefused:
                refused = True  # a 429, like a rate limit: nothing was answered, nothing is recorded
                raise
            yield from answer_fresh(state)
            admit(state)
        finished = True
    except GeneratorExit:
        state.status, state.error = AskEvent.Status.INTERRUPTED, "client disconnected"
        raise
    finally:
        inflight.release(state.slot)
        if not finished and state.status == AskEvent.Status.ANSWERED:
            state.status, state.error = AskEvent.Status.INTERRUPTED, state.error or "aborted"
        if not refused:
            record(state)
    yield "done", outcome(state)


def ask(asker: Asker, raw_question, *, prepared: AskState | None = None, prefetched: dict | None = None) -> AskOutcome:
    for kind, value in ask_events(asker, raw_question, prepared=prepared, prefetched=prefetched):
        if kind == "done":
            return value
    raise RuntimeError("the pipeline ended without an outcome")


# --------------------------------------------------------------------------- the async entry (ASGI)

def ask_begin(asker: Asker, raw_question, *, streamed: bool = False, prepared: AskState | None = None,
              prefetched: dict | None = None, exact_only: bool = False, request_ahead: bool = False) -> AskState:
    """The async server's blocking first part, in one hop to a pool thread: ``start`` (or the
    ``prepared`` state), the lookups, then for a hit the whole Ask (served and recorded:
    ``state.finished``), for a miss its in-flight slot (``InFlightRefused`` over a cap, nothing
    recorded). ``ask_events_async(begun=state)`` goes on from here. ``exact_only``: stop after a
    missed exact lookup (not finished, no slot yet); ``ask_begin_rest`` goes on, on another lane,
    so the exact hits' lane never waits for a semantic lookup. ``request_ahead``: for a miss, its
    retrieval and answerability check too (``answer_request``) in the same hop: a hop to the pool
    is a thread switch and a turn of the loop, and a fresh ask made five of them."""
    if (prepared is not None and prepared.asker.tenant is asker.tenant and prepared.asker.locale == asker.locale
            and prepared.streamed == streamed):
        state = prepared
        state.asker = asker
    else:
        state = start(asker, raw_question, streamed)
    try:
        if state.resolution.clarify:
            served = None
        elif exact_only:
            if state.eligibility is None:
                check_eligibility(state)
            served = exact_lookup(state, prefetched)
            if served is None:
                return state
        else:
            served = lookup(state, prefetched)
    except BaseException:
        state.status, state.error = AskEvent.Status.INTERRUPTED, "aborted"
        record(state)
        raise
    return _begun(state, served, request_ahead)


def ask_begin_rest(state: AskState, *, request_ahead: bool = False) -> AskState:
    """``ask_begin`` after an ``exact_only`` one missed: the semantic lookup, then a hit or the slot.
    ``request_ahead``: as ``ask_begin``'s."""
    try:
        served = semantic_lookup(state)
    except BaseException:
        state.status, state.error = AskEvent.Status.INTERRUPTED, "aborted"
        record(state)
        raise
    return _begun(state, served, request_ahead)


def _begun(state: AskState, served: CachedAnswer | None, request_ahead: bool = False) -> AskState:
    if state.resolution.clarify:  # a message that needs context it did not come with: nothing looked up
        clarify(state)
        record(state)
        state.finished = True
    elif served is not None:
        serve_cached(state, served)
        record(state)
        state.finished = True
    else:
        hold_slot(state)
        if request_ahead:
            try:
                state.request_ahead = (answer_request(state),)
            except BaseException:
                _end_fresh(state, interrupted=True)
                raise
    return state


async def ask_events_async(asker: Asker, raw_question, *, streamed: bool = False, prepared: AskState | None = None,
                           prefetched: dict | None = None,
                           begun: AskState | None = None) -> AsyncIterator[tuple[str, object]]:
    """``ask_events`` for the event loop: the same events and records. The blocking steps run in
    the pool (``serving.blocking``), the answer streams from the answerer's ``astream``; closing
    the iterator or cancelling its task (the customer left) closes the model's stream, records the
    Ask as interrupted and caches nothing. No stream lasts past ``STREAM_MAX_DURATION_S``."""
    if begun is None:
        begun = await serving.blocking(ask_begin, asker, raw_question, streamed=streamed, prepared=prepared,
                                       prefetched=prefetched, request_ahead=True)
    state = begun
    if state.finished:
        yield "delta", state.answer
        yield "done", outcome(state)
        return
    streamed_all = False
    try:
        deadline = asyncio.get_running_loop().time() + settings.STREAM_MAX_DURATION_S
        async with contextlib.aclosing(answer_fresh_async(state, deadline)) as events:
            async for event in events:
                yield event
        streamed_all = True
    except (GeneratorExit, asyncio.CancelledError):
        state.status, state.error = AskEvent.Status.INTERRUPTED, "client disconnected"
        raise
    finally:
        # admission, the record and the slot in one hop; shielded: a second cancellation must not
        # lose the record or keep the slot
        await asyncio.shield(serving.blocking(_end_fresh, state, admit_first=streamed_all,
                                              interrupted=not streamed_all))
    yield "done", outcome(state)


def _end_fresh(state: AskState, *, admit_first: bool = False, interrupted: bool = False) -> None:
    """A fresh answer's end: admission when it was written to its end, then its record, then its slot."""
    try:
        if admit_first:
            try:
                admit(state)
            except BaseException:
                interrupted = True
                raise
    finally:
        if interrupted and state.status == AskEvent.Status.ANSWERED:
            state.status, state.error = AskEvent.Status.INTERRUPTED, state.error or "aborted"
        try:
            record(state)
        finally:
            inflight.release(state.slot)


async def ask_async(asker: Asker, raw_question, *, prepared: AskState | None = None, prefetched: dict | None = None,
                    begun: AskState | None = None) -> AskOutcome:
    """``ask`` for the event loop."""
    async with contextlib.aclosing(ask_events_async(asker, raw_question, prepared=prepared, prefetched=prefetched,
                                                    begun=begun)) as events:
        async for kind, value in events:
            if kind == "done":
                return value
    raise RuntimeError("the pipeline ended without an outcome")


# --------------------------------------------------------------------------- steps

def start(asker: Asker, raw_question, streamed: bool) -> AskState:
    """Validate before anything is looked up or stored, then resolve the conversation's last
    message into the question every later step reads (``supportbot.conversation``).
    ``raw_question``: a question (a one-message conversation), a validated ``Conversation``, or
    a ``Resolution`` made earlier (staff acting on a recorded Ask's resolved question)."""
    if asker.locale not in asker.tenant.locales:
        raise AskRejected("unknown_locale", f"locale must be one of {sorted(asker.tenant.locales)}")
    if isinstance(raw_question, Resolution):
        resolution = raw_question
    else:
        conversation = (raw_question if isinstance(raw_question, Conversation) else
                        Conversation.single(clean_question(raw_question))).spelled_out(asker.locale)
        resolution = resolve(conversation, asker.locale, rewriter=model_rewriter(asker.tenant.slug))
    question = resolution.question
    return AskState(asker=asker, question=question, normalized=resolved_normalized(resolution), streamed=streamed,
                    resolution=resolution)


def prepare(asker: Asker, raw_question, *, streamed: bool = False) -> AskState:
    """The first steps, which read nothing: validation, guards and the exact key."""
    state = start(asker, raw_question, streamed)
    check_eligibility(state)
    return state


def prefetch_keys(state: AskState) -> tuple[str, ...]:
    """The Redis keys the exact lookup of a prepared question reads (none for a bypass), so a
    caller making a round trip anyway can read them along and pass them back as ``prefetched``."""
    if not state.eligibility.eligible:
        return ()
    return exact_layer.read_keys(state.key, state.asker.tenant.pk)


def lookup(state: AskState, prefetched: dict | None = None) -> CachedAnswer | None:
    """Guards, then the exact and the semantic answer caches; the served answer or None."""
    if state.eligibility is None:
        check_eligibility(state)
    return exact_lookup(state, prefetched) or semantic_lookup(state)


def hold_slot(state: AskState) -> None:
    """A fresh answer takes an in-flight slot of its client and tenant (``supportbot.inflight``),
    released when the Ask ends; InFlightRefused over a cap."""
    tenant = state.asker.tenant
    state.slot = inflight.acquire(tenant.pk, tenant.slug, state.asker.client, state.request_id)


def offer_answer(asker: Asker, raw_question, answer: str, passages: list[Passage], article_pks: dict[int, int],
                 completion_tokens: int = 50, checks: bool = True) -> AskState:
    """Admit an answer written elsewhere (evaluation) through the normal guards and admission,
    as if the model had just answered it completely and cited every passage. ``checks=False``
    leaves out admission's content checks (``caching.answer_checks``: facts, yes/no, wording,
    relevance), for tests of other layers that offer placeholder text rather than answers."""
    state = start(asker, raw_question, streamed=False)
    check_eligibility(state)
    state.passages, state.article_pks = passages, article_pks
    state.result = GenerationResult(text=answer, finish_reason="stop", model=state.spec.model, prompt_tokens=0,
                                    completion_tokens=completion_tokens, cached_tokens=None, ttft_ms=None,
                                    total_ms=0.0)
    state.answer = answer
    state.citations = unique_citations(citation(p, article_pks[p.chunk_id]) for p in passages)
    if state.vector is None and state.eligibility.eligible:
        state.vector = embed_question(state)
    admit(state, checks=checks)
    record(state)
    return state


@tracing.step("guards")
def check_eligibility(state: AskState) -> None:
    """Personal, action and time-dependent questions bypass the shared answer caches; so does a
    message the conversation could not resolve confidently (every shared cache: answers, search
    results, the question's embedding)."""
    t = time.perf_counter()
    state.eligibility = guards.classify(state.question)
    r = state.resolution
    if r is not None and not r.cacheable and state.eligibility.eligible:
        state.eligibility = dataclasses.replace(state.eligibility, eligible=False, rule="conversation",
                                                reason=f"conversation: {r.how}: {r.detail}"[:300])
    state.spec = answer_spec(state)
    state.key = exact_key(state.spec)
    e = state.eligibility
    state.layers.append(LayerResult("eligibility", "miss" if e.eligible else "bypass", reason=e.reason, intent=e.intent))
    state.lap("guards", t)


@tracing.step("exact")
def exact_lookup(state: AskState, prefetched: dict | None = None) -> CachedAnswer | None:
    if not state.eligibility.eligible:
        state.layers.append(LayerResult("exact", "bypass", reason=state.eligibility.reason))
        return None
    t = time.perf_counter()
    result = exact_layer.lookup(state.key, state.asker.tenant.pk, prefetched)
    state.layers.append(result)
    state.lap("exact", t)
    if result.hit:
        state.layer, state.reason = AskEvent.ServingLayer.EXACT, result.reason
        return result.value
    return None


@tracing.step("semantic")
def semantic_lookup(state: AskState) -> CachedAnswer | None:
    tenant = state.asker.tenant
    reads = reads_only(state)
    if not state.eligibility.eligible and not reads:
        state.layers.append(LayerResult("semantic", "bypass", reason=state.eligibility.reason))
        return None
    if state.resolution is not None and state.resolution.exact_only:
        state.layers.append(LayerResult("semantic", "bypass", reason="conversation: a rewrite carrying the "
                                        "conversation's words is looked up by the exact cache only"))
        return None
    if tenant.semantic_mode == Tenant.SemanticMode.OFF:
        state.layers.append(LayerResult("semantic", "skipped", reason="semantic cache off for this tenant"))
        return None
    t = time.perf_counter()
    try:
        state.vector = embed_question(state)
    except GenerationMismatch as exc:  # mid-upgrade: this process cannot embed like the index
        state.layers.append(LayerResult("semantic", "skipped", reason=f"embedding model mismatch: {exc}"[:300]))
        return None
    state.lap("embed", t)
    t = time.perf_counter()
    scope = semantic_scope(state)
    result = semantic_layer.lookup(scope, state.question, state.vector, tenant.semantic_mode, soft_reads=reads)
    if reads:
        result.reason = f"{result.reason}; read only: {state.eligibility.reason}"[:300]
    after = time.perf_counter()
    judge_after(state, scope, result, reads)
    hold_uncalibrated(result, threshold_state(model=(scope.embedding_model, scope.embedding_version)))
    result.lookup_ms += (time.perf_counter() - after) * 1000  # an alias or second stage is part of the lookup
    state.layers.append(result)
    state.lap("semantic", t)
    if result.hit:
        state.layer, state.reason = AskEvent.ServingLayer.SEMANTIC, result.reason
        return result.value
    if result.disposition == "assist":
        state.assist = result.value
    return None


def reads_only(state: AskState) -> bool:
    """Whether the question only reads the semantic cache: only soft rules refused it
    (``guards.soft_only``, ``SEMANTIC_SOFT_READS``). It reads the cache's general answers (the
    vetoes and a strict match decide), and writes no shared cache."""
    if state.resolution is not None and not state.resolution.cacheable:
        return False
    return not state.eligibility.eligible and settings.SEMANTIC_SOFT_READS and guards.soft_only(state.question)


def judge_after(state: AskState, scope: SemanticScope, result: LayerResult, reads: bool = False) -> None:
    """What follows the learned judge: the tenant's recalibrated threshold (it only ever tightens
    the judge's own), then, for a miss, an alias the verifier approved for this question, then the
    optional second stage for a candidate the judge was unsure about. A near miss that is still a
    miss is queued for the verifier when the Ask is recorded (``caching.learning``), unless the
    question only ``reads``: an approved pair would store it as an alias."""
    tenant, mode = state.asker.tenant, state.asker.tenant.semantic_mode
    threshold = judge_threshold(tenant.pk, result.judge_version) if result.judge_version else None
    p = result.judge_probability
    if result.disposition in ("hit", "shadow_hit") and threshold is not None and p is not None and p < threshold:
        result.disposition, result.value, result.saved_tokens, result.saved_ms = "miss", None, 0, 0.0
        result.reason = f"judge probability {p:.3f} below {tenant.slug}'s recalibrated threshold {threshold:.2f}"
    if result.disposition not in ("miss", "assist"):
        return
    if semantic_layer.alias_lookup(scope, state.normalized, result, mode):
        return
    if not learning.unsure(result, threshold):
        return
    if settings.JUDGE_SECOND_STAGE_ENABLED:
        entry = semantic_layer.candidate_entry(scope, result)
        if entry is not None:
            verdict = verify(tenant.slug, entry.question, entry.answer, state.question,
                             timeout_s=settings.JUDGE_SECOND_STAGE_TIMEOUT_S)
            state.timings["second_stage"] = round(verdict.ms, 2)
            if verdict.approved and semantic_layer.entry_serve(
                    scope, entry, result, mode, f"second stage: the verifier approved (judge {p:.3f})"):
                return
            result.reason = f"{result.reason}; second stage: {verdict.detail}"[:300]
    if not reads:
        state.near_miss = result


def serve_cached(state: AskState, cached: CachedAnswer) -> None:
    state.served = cached
    state.answer, state.citations = cached.answer, cached.citations


@tracing.step("retrieval")
def retrieve(state: AskState) -> None:
    """Top-k passages of the tenant and locale (search-result cache first)."""
    t = time.perf_counter()
    generation = active_generation_cached()
    if generation is None:
        raise RetrievalUnavailable("the knowledge base has not been indexed yet")
    tenant = state.asker.tenant
    k = settings.RETRIEVAL_TOP_K
    shared = state.eligibility is not None and state.eligibility.eligible
    if shared:
        key = search_key(state.normalized, tenant.pk, state.asker.locale, k, generation.pk, index_version(tenant.pk))
        cached = search_layer.lookup(key)
    else:  # a personal question's results are nobody else's to find, and say nothing to anyone
        key, cached = "", LayerResult(search_layer.name, "bypass", reason="search cache not used: "
                                      + (state.eligibility.reason if state.eligibility else "not classified"))
    state.layers.append(cached)
    if cached.hit:
        hits: list[SearchHit] = cached.value
    else:
        if state.vector is None:
            te = time.perf_counter()
            state.vector = embed_question(state)
            state.lap("embed", te)
        hits = search_hybrid(generation, tenant.pk, state.asker.locale, state.question, state.vector, k)
        if own_words(state):  # a rewrite: also in the customer's own words (``conversation.customers_words``)
            hits = fuse(hits, search_hybrid(generation, tenant.pk, state.asker.locale, own_words(state),
                                            own_vector(state), k), k)
        placed = asking.places_as_countries(state.question, state.asker.locale)
        if placed != state.question:  # the customer's town said by its region or country, as the articles say it
            # ("I live in Basel": the countries not delivered to)
            hits = fuse(hits, search_hybrid(generation, tenant.pk, state.asker.locale, placed,
                                            embed_text(state, placed), k), k)
        told, asks = asking.asks_of(state.question)
        for ask in asks:  # a question of several asks: each ask's best passage too ("..., and how long must the
            ask = f"{told} {ask}".strip()  # new password be?" is answered by the "Password rules", not the reset steps)
            best = search_hybrid(generation, tenant.pk, state.asker.locale, ask, embed_text(state, ask), 1)
            hits = hits + [h for h in best if h.chunk_id not in {x.chunk_id for x in hits}]
        if cached.disposition == "miss":
            failed = search_layer.store(key, hits)
            if failed:
                cached.reason = f"{cached.reason}; not stored ({failed})"
    usable = with_plan_section(generation, tenant.pk, state.asker.locale, state.question, state.vector,
                               [h for h in hits if h.evidence])
    state.passages = [
        Passage(number=i, chunk_id=h.chunk_id, article_id=h.article_id, title=h.title, url=h.url,
                version=h.version, text=h.text, similarity=h.similarity, heading=h.heading)
        for i, h in enumerate(usable, start=1)
    ]
    state.article_pks = {h.chunk_id: h.article_pk for h in usable}
    state.lap("retrieval", t)


def with_plan_section(generation, tenant_id: int, locale: str, question: str, vector, hits: list[SearchHit]
                      ) -> list[SearchHit]:
    """``hits`` and, for a question that names a plan or membership that no hit of the first hit's article names
    ("Premier member here. What does freight cost for me?"), the section of that article that names it ("Shipping
    with a Pro or Premier plan: ... Freight for $39 instead of $79"): a plan's own figures are often in a section of
    their own, which the question's other words ("freight", "over 50 lb") rank below the general figures."""
    plan = asking.cases_in(question).get("plan")
    if not plan or not hits or vector is None or any(
            _names_plan(h, plan) for h in hits if h.article_pk == hits[0].article_pk):
        return hits
    taken = {h.chunk_id for h in hits}
    section = next((h for h in article_hits(generation, tenant_id, locale, hits[0].article_pk, vector)
                    if h.chunk_id not in taken and _names_plan(h, plan)), None)
    return hits + [section] if section else hits


def _names_plan(hit: SearchHit, plan: str) -> bool:
    return plan in asking.all_cases_in(f"{hit.heading}\n{hit.text}").get("plan", ())


class _Writing:
    """What the answerer has written of a fresh answer so far (``answer_fresh`` and its async twin):
    the text shown, and its ``Answer`` once it ends."""

    def __init__(self, state: AskState):
        self.state, self.started = state, time.perf_counter()
        self.pieces: list[str] = []
        self.answer: Answer | None = None

    def take(self, item: str | Answer) -> str:
        """One item of the answerer's stream: the text to show now ("" for none)."""
        if isinstance(item, Answer):
            self.answer = item
            return ""
        if item:
            self.pieces.append(item)
            if "ttft" not in self.state.timings:
                self.state.lap("ttft", self.started)
        return item

    def failed(self, exc: GenerationError) -> str:
        return generation_failed(self.state, self.pieces, exc, self.started)

    def ended(self) -> None:
        answer_written(self.state, self.answer, self.started)


def answer_fresh(state: AskState) -> Iterator[tuple[str, str]]:
    """Retrieval then generation, streaming the model's text as it comes."""
    request = answer_request(state)
    if request is None:
        yield "delta", state.answer
        return
    writing = _Writing(state)
    try:
        for item in tracing.generation_stream(state, get_answerer().stream(request)):
            if delta := writing.take(item):
                yield "delta", delta
    except GenerationError as exc:
        yield "delta", writing.failed(exc)
        return
    writing.ended()


async def answer_fresh_async(state: AskState, deadline: float) -> AsyncIterator[tuple[str, str]]:
    """``answer_fresh`` on the event loop: retrieval in the pool, the answerer's ``astream``; past
    ``deadline`` (the loop's clock) the answer stops as a timed-out generation."""
    if state.request_ahead is not None:
        (request,), state.request_ahead = state.request_ahead, None
    else:
        request = await serving.blocking(answer_request, state)
    if request is None:
        yield "delta", state.answer
        return
    writing = _Writing(state)
    try:
        async with contextlib.aclosing(get_answerer().astream(request)) as items, \
                serving.StreamDeadline(deadline) as limit:
            while True:
                try:
                    item = await limit.next(items)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    metrics.STREAMS_CUT.labels("max_duration").inc()
                    raise GenerationError("timeout", f"the stream passed {settings.STREAM_MAX_DURATION_S:.0f}s") from None
                if delta := writing.take(item):
                    yield "delta", delta
    except GenerationError as exc:
        yield "delta", writing.failed(exc)
        return
    writing.ended()


def answer_request(state: AskState) -> AnswerRequest | None:
    """Retrieval, then what the answerer gets; None when there is nothing to answer from (the
    state then holds the failure or the not-covered text)."""
    try:
        retrieve(state)
    except (RetrievalUnavailable, GenerationMismatch, DatabaseError) as exc:
        log.warning("retrieval failed: %s", exc)
        fail(state, f"retrieval: {exc}")
        return None
    if not state.passages:
        not_covered(state, "no passage similar enough")
        return None
    tenant = state.asker.tenant
    if state.vector is None:  # a search-cache hit with the semantic cache off: the answerer may need it
        state.vector = embed_question(state)
    embedder = query_embedder(cached=True)
    passages = check_answerable(state)
    if not passages:
        not_covered(state, state.answerability.reason)
        return None
    return AnswerRequest(
        tenant_slug=tenant.slug, tenant_prompt=tenant_prompt(tenant), passages=passages,
        # a rewrite: the customer's own words, with the meaning of the whole conversation and of those words
        # (a word typed with a slip of the keys read as the help centre writes it: "downlaod")
        question=spelled(active_generation_cached(), tenant.pk, state.asker.locale,
                         state.continued or own_words(state) or state.question),
        question_vector=(embed_text(state, state.continued) if state.continued
                         else blend(state.vector, own_vector(state)) if own_words(state) else state.vector),
        embed=lambda texts: embed_texts(texts, embedder=embedder),
        assist_answer=state.assist.answer if state.assist else None,
        history=tuple((t.role, t.content) for t in state.resolution.history) if state.resolution else (),
    )


def generation_failed(state: AskState, pieces: list[str], exc: GenerationError, since: float) -> str:
    """The answerer failed after ``pieces`` were shown: the text still to show."""
    state.lap("generation", since)
    if pieces:  # the model died mid-answer: what was shown is not an answer
        state.status, state.error = AskEvent.Status.INTERRUPTED, f"generation: {exc.reason}"
        state.answer = "".join(pieces)
        handoff_text = "\n\n" + UNAVAILABLE_TEXT
        state.answer += handoff_text
        return handoff_text
    fail(state, f"generation: {exc.reason}")
    return state.answer


def answer_written(state: AskState, answer: Answer, since: float) -> None:
    """The answerer's last item: the answer and its citations, or not covered."""
    state.lap("generation", since)
    state.result = answer.result
    if answer.not_covered:
        not_covered(state, answer.reason)
        return
    state.answer = answer.text
    state.citations = unique_citations(citation(p, state.article_pks[p.chunk_id]) for p in answer.citations)
    state.cited_explicitly = answer.cited_explicitly


@tracing.step("answerability")
def check_answerable(state: AskState) -> list[Passage]:
    """Whether a passage answers the question, before any answer is written (``supportbot.answerability``):
    the passages the answerer may use (those of the articles whose passage answers it), or none."""
    if not settings.ANSWERABILITY_CHECK:
        return state.passages
    t = time.perf_counter()
    embedder = query_embedder(cached=True)
    state.answerability = verdict = answerability.assess(
        generation=active_generation_cached(), tenant_id=state.asker.tenant.pk, locale=state.asker.locale,
        question=state.question, vector=state.vector, passages=state.passages,
        embed=lambda texts: embed_texts(texts, embedder=embedder))
    if own_words(state):  # a passage answering a rewrite in the customer's own words answers it too
        theirs = answerability.assess(
            generation=active_generation_cached(), tenant_id=state.asker.tenant.pk, locale=state.asker.locale,
            question=own_words(state), vector=own_vector(state), passages=state.passages,
            embed=lambda texts: embed_texts(texts, embedder=embedder))
        if theirs.answerable:
            best = verdict if verdict.answerable and verdict.probability >= theirs.probability else theirs
            state.answerability = verdict = replace(best, passing=verdict.passing | theirs.passing,
                                                    storable=verdict.storable | theirs.storable)
        elif not verdict.answerable:
            again = asked_subject(state, verdict, own_words(state), theirs.unseen_terms)
            if not again.answerable:  # the rewrite with the assistant's words too, less those no passage states:
                # shown, never cached (twenty-first session: an incomplete repair answer was admitted so)
                again = asked_subject(state, verdict, state.question, theirs.unseen_terms)
                again = replace(again, storable=frozenset()) if again.answerable else again
            state.answerability = verdict = again
    elif not verdict.answerable and state.resolution is not None and state.resolution.how == How.UNRESOLVED:
        state.answerability = verdict = asked_subject(state, verdict, state.question)  # "message | earlier turn | …"
    if verdict.doubted and state.resolution is not None and state.resolution.how in (How.REWRITTEN, How.UNRESOLVED):
        state.answerability = verdict = continued(state, verdict)
    state.lap("answerability", t)
    if not verdict.answerable:
        return []
    articles = {p.article_id for p in state.passages if p.chunk_id in verdict.passing}
    kept = [p for p in state.passages if p.article_id in articles]
    return [replace(p, number=i) for i, p in enumerate(kept, start=1)]  # numbered [1]..[n] as the answerer shows them


def asked_subject(state: AskState, verdict, question: str, unseen_too: tuple[str, ...] = ()):
    """A rewrite whose both readings failed the check (``question``: the customer's own words), or an unresolved
    message's context question, read once more without the conversation's words that the help centre never
    states, when the assistant's last reply stated the help centre's own words (``conversation.grounded``,
    against the passages found for that reply): then the conversation is about a subject the help centre covers,
    and "lol", "way too big for my shelf" or "the trail maps look amazing" are chatter, not what is asked. The
    message's own words stay, but for its small talk ("Nice."): "how long does the battery last?" still needs a
    passage about a battery."""
    reply = last_reply(state.resolution)
    if not reply:
        return verdict
    generation, tenant_id, locale = active_generation_cached(), state.asker.tenant.pk, state.asker.locale
    articles = {a: " ".join(h.text for h in hits) for a, hits in reply_articles(state, reply).items()}
    config = text_search_config(state.asker.locale)
    # the search terms of the reply, of each article's passages and of every word ``without_words`` may ask about
    # (another is asked alone), in one query
    words = [w.strip(WORD_EDGES) for w in question.replace("(", " ").replace(")", " ").split()] + question.split()
    terms = words_terms(config, [reply, *articles.values(), *words])
    if not grounded(terms[reply], {a: set(terms[text]) for a, text in articles.items()}):
        return verdict
    unseen = set(verdict.unseen_terms) | set(unseen_too)
    asked = without_words(question, lambda w: bool(set(terms[w] if w in terms else query_terms(config, w)) & unseen))
    if asked == question:
        return verdict
    embedder = query_embedder(cached=True)
    third = answerability.assess(
        generation=generation, tenant_id=tenant_id, locale=locale, question=asked, vector=embed_text(state, asked),
        passages=state.passages, embed=lambda texts: embed_texts(texts, embedder=embedder))
    if not third.answerable:
        return verdict
    return replace(third, reason=f"{third.reason}; read without the conversation's words the help centre never "
                   f"states: {asked}"[:300])


def reply_articles(state: AskState, reply: str) -> dict[str, list[SearchHit]]:
    """The passages found for the assistant's last reply (``reply``), by article: searched once a request, for
    ``asked_subject`` and ``continued`` alike."""
    if state.reply_found is None:
        found: dict[str, list[SearchHit]] = {}
        for hit in search_hybrid(active_generation_cached(), state.asker.tenant.pk, state.asker.locale, reply,
                                 embed_text(state, reply), settings.RETRIEVAL_TOP_K):
            found.setdefault(hit.article_id, []).append(hit)
        state.reply_found = found
    return state.reply_found


def continued(state: AskState, verdict):
    """A follow-up the check hands off, answered from the article the assistant's last reply came from, when that
    article states most of what the message asks (``CONVERSATION_CONTINUED_SHARE`` of its subject terms' weight, of
    those the help centre states) and the message names nothing the help centre never names. The thread is the
    evidence: the reply was about that article, and "when i double click it in excel all the product names with ä and
    é turn into weird symbols" after "Dates use the ISO format ..." of the data export, or "those work the same,
    right?" after the return policy's answer, ask about that article in the customer's words, which the check reads
    as a subject the help centre never states. Shown, never cached (``storable`` empty): the answer rests on the
    conversation, not on the question's own words (twenty-fourth session)."""
    # a message that asks in its own words is answered by its own words, not by the thread's: one that points back
    # at the conversation with nothing of its own to point at ("when i double click it in excel"), or that compares
    # with what the thread was about ("those work the same, right?", "the same amount of time for that one?")
    pointing = dependence(state.resolution.message, state.asker.locale, alone=True)
    if not pointing.kind and dependence(state.resolution.message, state.asker.locale).word.casefold() not in _SAME:
        return verdict
    reply = last_reply(state.resolution)
    if not reply:
        return verdict
    generation, tenant_id, locale = active_generation_cached(), state.asker.tenant.pk, state.asker.locale
    found = reply_articles(state, reply)
    message = asked_part(state.resolution.message)
    config = text_search_config(locale)
    texts = {a: " ".join(h.text for h in hits) for a, hits in found.items()}
    terms = words_terms(config, [reply, *texts.values()])
    source = grounded_in(terms[reply], {a: set(terms[text]) for a, text in texts.items()})
    if source is None:
        return verdict  # the reply does not say the help centre's words: no article it came from
    first = found[source][0]
    subject = subject_of(generation, tenant_id, locale, message, [h.chunk_id for h in found[source]])
    unseen = set(subject.unseen())
    seen = {t: w for t, w in subject.weights.items() if t not in unseen}
    if not seen or named_terms(message, unseen):
        return verdict  # nothing of the help centre's asked, or a name it never states ("in Denver")
    lexemes = article_lexemes(generation, tenant_id, locale, [first.chunk_id]).get(first.chunk_id, frozenset())
    share = sum(w for t, w in seen.items() if t in lexemes) / sum(seen.values())
    if share < settings.CONVERSATION_CONTINUED_SHARE:
        return verdict
    # the article's passages most like the message (those retrieved were found for the conversation's words)
    vector = embed_text(state, message)  # once: a personal message's vector is not cached
    have = {p.chunk_id: p for p in state.passages}
    kept = [have.get(h.chunk_id) or Passage(number=0, chunk_id=h.chunk_id, article_id=h.article_id, title=h.title,
                                            url=h.url, version=h.version, text=h.text, similarity=h.similarity,
                                            heading=h.heading)
            for h in article_hits(generation, tenant_id, locale, first.article_pk,
                                  vector)[:settings.RETRIEVAL_TOP_K]]
    # the message alone, against that article: a rule of the check that hands it off (a property of a product, an
    # action, a name or a thing the help centre never states) still does; only the model's doubt about the
    # customer's words is what the thread answers
    embedder = query_embedder(cached=True)
    alone = answerability.assess(generation=generation, tenant_id=tenant_id, locale=locale, question=message,
                                 vector=vector, passages=kept,
                                 embed=lambda texts: embed_texts(texts, embedder=embedder))
    if not alone.answerable and not alone.doubted:
        return verdict
    for p in kept:
        if p.chunk_id not in have:
            state.passages.append(replace(p, number=len(state.passages) + 1))
            state.article_pks[p.chunk_id] = first.article_pk
    # the message as the customer wrote it, with the conditions the conversation stated ("in Germany") where a rewrite
    # carries them (``customers_words``)
    state.continued = own_words(state) or _with_told_cases(message, state.resolution, locale)
    return replace(verdict, answerable=True, chunk_id=kept[0].chunk_id, passing=frozenset(p.chunk_id for p in kept),
                   storable=frozenset(), reason=f"answerable: continues the last reply's article {source} "
                   f"({share:.2f} of the message's terms stated); {verdict.reason}"[:300])


# Words of a message comparing with what the conversation was about: it continues that subject
_SAME = ("same", "gleiche", "gleichen", "selbe", "selben")


# The kinds of condition (``conversation.conditions``) an earlier turn states that change a follow-up's answer
_CASE_KINDS = ("place", "tier")


def _with_told_cases(message: str, resolution: Resolution, locale: str) -> str:
    """A message with the customer's earlier turns that state where they are or their membership ("I live in
    Hamburg", "I'm a Plus member in the UK"), the town said by its country: what the answerer reads of the case."""
    told = [t.content for t in resolution.history
            if t.role == "user" and any(kind in _CASE_KINDS for kind in conditions(t.content).values())]
    return asking.places_as_countries(" ".join([message, *told[-2:]]), locale) if told else message


@tracing.step("admission")
def admit(state: AskState, checks: bool = True) -> None:
    """Only verified answers enter the shared caches."""
    answerer = get_answerer()
    model_check = answerer.verify if settings.ADMISSION_MODEL_CHECK and hasattr(answerer, "verify") else None
    decision = admission.check(state, model_check=model_check, content_checks=checks)
    state.layers.append(decision)
    if decision.disposition != "stored":
        return
    cached = CachedAnswer(
        answer=state.answer, citations=state.citations, intent=state.eligibility.intent, created=time.time(),
        model=state.spec.model, prompt_version=state.spec.prompt_version, source_request=state.request_id,
        question=state.question, prompt_tokens=state.result.prompt_tokens,
        completion_tokens=state.result.completion_tokens,
        generation_ms=state.result.total_ms, searched=state.own or "",
    )
    state.layers.append(exact_layer.store(state.key, cached, state.asker.tenant.pk))
    if state.asker.tenant.semantic_mode != Tenant.SemanticMode.OFF and state.vector is not None:
        state.pending_semantic = cached
    state.admitted = True


def record(state: AskState) -> None:
    """Write the Ask, its decisions and (after admission) the semantic entry in one transaction.

    A cache hit writes nothing but its record, nor does a fresh answer that was not admitted
    and left no near miss: in a web request it goes to the background writer, which batches the
    records of many Asks into one transaction (``supportbot.records``)."""
    state.timings["total"] = round((time.perf_counter() - state.started) * 1000, 2)
    observe(state)
    alone = not state.admitted and state.pending_semantic is None and state.near_miss is None
    if (state.served is not None or alone) and hit_records.submit(state):
        return
    try:
        with transaction.atomic():
            event = ask_event(state)
            event.save(force_insert=True)
            pending = state.pending_semantic
            if pending is not None and state.status == AskEvent.Status.ANSWERED:
                semantic_layer.store(semantic_scope(state), question=state.question, normalized_question=state.normalized,
                                     vector=state.vector, answer=pending, exact_key=state.key, source_ask=event)
                state.layers.append(LayerResult("semantic", "stored", reason="admitted"))
            decisions = CacheDecision.objects.bulk_create([
                CacheDecision(ask=event, tenant=state.asker.tenant, **d.record_fields())
                for d in state.layers + embedding_and_prefix_decisions(state)
            ])
            decisions_recorded.send(sender=AskEvent, asks=[(event.tenant_id, decisions)])
            if state.near_miss is not None:
                learning.near_miss_queue(state.asker.tenant.pk, event.pk, state.question, state.normalized,
                                         state.near_miss)
    except DatabaseError:
        log.exception("could not record ask %s", state.request_id)
        if state.admitted:  # no answer in a cache without the record of where it came from
            exact_layer.delete(state.key)
        raise
    count_semantic_hits([state])


def record_hits(states: list[AskState]) -> None:
    """Write the records of many cache hits in one transaction (the background writer's batch)."""
    layers = [s.layers + embedding_and_prefix_decisions(s) for s in states]
    with transaction.atomic():
        ask_pks, decision_pks = pks_allocate([(AskEvent, len(states)), (CacheDecision, sum(map(len, layers)))])
        copy_insert(AskEvent, [ask_event_fields(s) for s in states], ask_pks)
        copy_insert(CacheDecision, [d.record_fields(ask_id=ask_pk, tenant_id=s.asker.tenant.pk)
                                    for s, ask_pk, ls in zip(states, ask_pks, layers) for d in ls], decision_pks)
        refs = iter(decision_pks)
        decisions_recorded.send(sender=AskEvent, asks=[
            (s.asker.tenant.pk, [DecisionRef(next(refs), d.layer, d.disposition, d.intent, d.reason) for d in ls])
            for s, ls in zip(states, layers)
        ])
    count_semantic_hits(states)


def _write_hits(states: list[AskState]) -> None:
    commit_asynchronously()
    record_hits(states)


hit_records = HitRecordWriter(_write_hits)


def observe(state: AskState) -> None:
    """Count the finished Ask in the metrics and close its trace (``core.metrics``, ``supportbot.tracing``)."""
    metrics.ask_observe(state.asker.tenant.slug, state.layer, state.status, state.timings["total"], state.timings,
                        state.layers + embedding_and_prefix_decisions(state), state.result,
                        state.spec.model if state.spec else "")
    tracing.ask_finish(state)


def count_semantic_hits(states: list[AskState]) -> None:
    """Add the semantic hits of these Asks to their entries' counts, once their records are in:
    a count that fails (a lock timeout, say) is logged and never costs a record."""
    hits = Counter(int(d.candidate) for s in states for d in s.layers if d.layer == "semantic" and d.hit)
    try:
        semantic_layer.count_hits(hits)
    except DatabaseError:
        log.warning("could not count %d semantic hits", sum(hits.values()), exc_info=True)


def ask_event(state: AskState) -> AskEvent:
    """The Ask's record (unsaved)."""
    return AskEvent(**ask_event_fields(state))


def ask_event_fields(state: AskState) -> dict:
    """The Ask's record as field values (``tenant_id``, not ``tenant``)."""
    result, spec, eligibility = state.result, state.spec, state.eligibility
    return dict(
        request_id=state.request_id, tenant_id=state.asker.tenant.pk, locale=state.asker.locale,
        scope="customer" if state.asker.customer else "anonymous",
        customer_ref=customer_ref(state.asker), question=state.question,
        normalized_question=state.normalized,
        message=state.resolution.message if state.resolution else state.question,
        resolution=state.resolution.how if state.resolution else "",
        resolution_detail=(state.resolution.detail if state.resolution else "")[:300], answer=state.answer, citations=state.citations,
        status=state.status, serving_layer=state.layer, cache_reason=state.reason[:300],
        intent=eligibility.intent if eligibility else "",
        category=eligibility.category if eligibility else "",
        model=spec.model if spec else "", model_revision=spec.model_revision if spec else "",
        prompt_version=spec.prompt_version if spec else "",
        prompt_tokens=result.prompt_tokens if result else 0,
        completion_tokens=result.completion_tokens if result else 0,
        cached_tokens=result.cached_tokens if result else None,
        finish_reason=result.finish_reason if result else "", error_reason=state.error[:200],
        ttft_ms=state.timings.get("ttft"), total_ms=state.timings["total"], timings=state.timings,
        streamed=state.streamed,
    )


def outcome(state: AskState) -> AskOutcome:
    return AskOutcome(
        request_id=state.request_id, status=state.status, answer=state.answer, citations=state.citations,
        layer=state.layer, reason=state.reason or cache_reason(state),
        model=(state.served.model if state.served else state.spec.model) if state.spec else "",
        answerer=state.spec.answerer if state.spec else "",
        timings_ms=state.timings, handoff=handoff(state), related=state.related,
        decisions=[{"layer": d.layer, "disposition": d.disposition, "reason": d.reason} for d in state.layers],
    )


# --------------------------------------------------------------------------- helpers

class RetrievalUnavailable(Exception):
    pass


def fail(state: AskState, why: str) -> None:
    state.status, state.error = AskEvent.Status.UNAVAILABLE, why
    state.answer, state.citations = UNAVAILABLE_TEXT, []


def clarify(state: AskState) -> None:
    """A message that needs a conversation it did not come with: ask for the context, look up and
    store nothing."""
    if state.eligibility is None:
        check_eligibility(state)  # recorded as a bypass: nothing is looked up
    state.status, state.reason = AskEvent.Status.NEEDS_CONTEXT, state.resolution.detail
    state.answer, state.citations = clarify_text(state.resolution, state.asker.locale), []


def not_covered(state: AskState, why: str) -> None:
    state.status, state.reason = AskEvent.Status.NOT_COVERED, why
    state.answer, state.citations = not_covered_text(state.asker.locale), []
    state.covered = False
    state.related = answerability.related_articles(state.passages)


def handoff(state: AskState) -> str:
    if state.status in (AskEvent.Status.ANSWERED, AskEvent.Status.NEEDS_CONTEXT):
        return ""
    return state.asker.tenant.handoff_text or "Contact our support team and a person will help you."


def cache_reason(state: AskState) -> str:
    for d in state.layers:
        if d.layer in ("semantic", "exact") and d.disposition in ("bypass", "skipped", "shadow_hit", "assist"):
            if d.layer == "exact" and any(s.layer == "semantic" and s.disposition != "bypass" for s in state.layers):
                continue  # a question that only reads the semantic cache: its lookup says why it missed
            return d.reason
    for d in reversed(state.layers):
        if d.layer == "semantic" and d.disposition == "miss":
            return d.reason
    return "miss"


def citation(p: Passage, article_pk: int) -> dict:
    return {"article_pk": article_pk, "article_id": p.article_id, "title": p.title, "url": p.url, "version": p.version}


def unique_citations(citations) -> list[dict]:
    """One citation per article version, in order of first use."""
    seen, out = set(), []
    for c in citations:
        if (c["article_pk"], c["version"]) not in seen:
            seen.add((c["article_pk"], c["version"]))
            out.append(c)
    return out


def customer_ref(asker: Asker) -> str:
    """The pseudonym recorded for a signed-in customer: HMAC-SHA256 under ``CUSTOMER_REF_SECRET`` of
    tenant and customer id, so records name no customer and one tenant's id never matches another's."""
    if not asker.customer:
        return ""
    if asker.ref:
        return asker.ref
    message = canonical_json({"tenant": asker.tenant.slug, "customer": asker.customer}).encode("utf-8")
    return hmac.new(settings.CUSTOMER_REF_SECRET.encode("utf-8"), message, hashlib.sha256).hexdigest()[:32]


def tenant_prompt(tenant: Tenant) -> TenantPrompt:
    examples = tuple((e.get("question", ""), e.get("answer", "")) for e in tenant.few_shot or [])
    return TenantPrompt(name=tenant.name, instructions=tenant.instructions, few_shot=examples)


def own_words(state: AskState) -> str:
    """A rule rewrite in the customer's own words (``conversation.customers_words``), or "": worked out once."""
    if state.own is None:
        state.own = customers_words(state.resolution) if state.resolution is not None else ""
    return state.own


def own_vector(state: AskState) -> np.ndarray:
    """The vector of ``own_words``, embedded once for retrieval, the answerability check and the answerer."""
    if state.own_vector is None:
        state.own_vector = embed_text(state, own_words(state))
    return state.own_vector


def blend(a, b) -> np.ndarray:
    """The unit vector halfway between two unit vectors: the meaning of both texts."""
    v = np.asarray(a, dtype=np.float32) + np.asarray(b, dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-9)


def embed_text(state: AskState, text: str):
    """A text's vector for the question, cached in the tenant's scope for a general question only."""
    e = state.eligibility
    scope = question_scope(state.asker.tenant.pk) if e is not None and e.eligible else None
    return embed_texts([text], embedder=query_embedder(cached=True), stats=state.embed_stats, cache=scope)[0]


def embed_question(state: AskState):
    """A general question's vector is cached in its tenant's scope; a personal one's is not cached."""
    return embed_text(state, state.question)


def retrieval_version() -> str:
    gen = active_generation_cached()
    return _retrieval_version(gen.pk if gen else None, gen.model_name if gen else "", gen.model_version if gen else "",
                              settings.RETRIEVAL_TOP_K, settings.RETRIEVAL_MIN_SIMILARITY, settings.CHUNK_MAX_CHARS,
                              search_version())


@functools.lru_cache(maxsize=64)
def _retrieval_version(generation, model, version, k, min_similarity, chunk, search) -> str:
    return digest({"generation": generation, "model": model, "version": version, "k": k,
                   "min_similarity": min_similarity, "chunk": chunk, "search": search})[:16]


_prompt_versions: LocalCache[str] = LocalCache("prompt versions")  # a text's hash never changes: no TTL


def tenant_prompt_version(tenant: Tenant) -> str:
    """A hash of the tenant's static prompt text (its name, instructions and examples), computed
    once per distinct text (a hit computes it on every request)."""
    memo = (tenant.name, tenant.instructions, repr(tenant.few_shot))
    version = _prompt_versions.lookup(memo)
    if version is MISSING:
        version = _prompt_versions.put(memo, digest([tenant.name, tenant.instructions, tenant.few_shot])[:16])
    return version


def answer_spec(state: AskState) -> AnswerSpec:
    answerer = get_answerer()
    writer = answerer.spec()
    tenant = state.asker.tenant
    return AnswerSpec(
        question=state.normalized, tenant=tenant.slug, tenant_id=tenant.pk, locale=state.asker.locale,
        answerer=answerer.name,
        model=writer.model, model_revision=writer.model_revision, prompt_version=writer.prompt_version,
        tenant_prompt_version=tenant_prompt_version(tenant),
        generation_params=writer.params, retrieval_version=retrieval_version(),
        policy_version=tenant.policy_version,
    )


def semantic_scope(state: AskState) -> SemanticScope:
    spec, embedder = state.spec, query_embedder(cached=True)
    return SemanticScope(
        tenant_id=state.asker.tenant.pk, locale=spec.locale, prompt_version=digest([spec.answerer, spec.prompt_version,
        spec.tenant_prompt_version, spec.generation_params])[:16], model=spec.model,
        model_revision=spec.model_revision, policy_version=spec.policy_version,
        retrieval_version=spec.retrieval_version, embedding_model=embedder.name, embedding_version=embedder.version,
    )


def embedding_and_prefix_decisions(state: AskState) -> list[LayerResult]:
    out = []
    s = state.embed_stats
    if s.uncached and s.uncached == s.requested:
        out.append(LayerResult("embedding", "bypass", reason="not cached (the question is not shared)"))
    elif s.requested:
        redis_down = s.cache_skipped or s.redis_errors > 0  # backing off, or it failed on this very call
        out.append(LayerResult("embedding", "hit" if s.cache_hits else ("skipped" if redis_down else "miss"),
                               reason=f"{s.cache_hits}/{s.requested} from cache"
                               + (f" ({s.redis_error or 'redis unavailable'})" if redis_down else "")))
    r = state.result
    if r is not None and r.cached_tokens is not None:
        out.append(LayerResult("prefix", "hit" if r.cached_tokens else "miss",
                               reason=f"{r.cached_tokens}/{r.prompt_tokens} prompt tokens cached",
                               saved_tokens=r.cached_tokens))
    return out
