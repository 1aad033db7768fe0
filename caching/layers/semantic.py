"""Guarded semantic answer cache in pgvector.

Hard filters first (tenant, locale, every version, active, unexpired), then the
nearest neighbours, nearest first; a candidate is served only when ``guards.judge``
accepts it (both questions eligible, similarity over the cosine floor, no veto, and
the learned judge's calibrated probability over its threshold, or a strict match), no other
candidate with another answer is about as close (``_rival``: the ambiguity check), and every
version it cites is still current. The decision records the judge's version and its probability
for the best candidate (the served one, else the one it rated highest)."""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone
from pgvector import Vector

from caching import guards
from caching.churn import churn_add
from caching.citations import stale_citations
from caching.layers.base import CachedAnswer
from caching.models import EntryCitation, PairVerification, SemanticEntry
from caching.thresholds import current_thresholds
from core import budgets
from core.cachelayer import CacheScope, LayerResult, LayerStats

CANDIDATES = guards.CANDIDATES
# The reason of a refusal because another candidate with another answer is about as close.
AMBIGUOUS = "ambiguous"


def _same_answer(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _rival(rows: list[SemanticEntry], chosen: SemanticEntry, question: str, new_sig: dict, thresholds: dict,
           locale: str, soft_reads: bool = False) -> tuple[SemanticEntry, float] | None:
    """The ambiguity check (a ratio test): another candidate of the lookup whose answer differs from
    ``chosen``'s and whose question is not the same as ``chosen``'s (``guards.same_question``: two
    entries for one question, worded apart, answer it alike), and either nearer to the question
    than ``chosen`` (whatever refused it: the judge, the floor or a veto) or within
    ``SEMANTIC_AMBIGUITY_MARGIN`` below it and refused by nothing but the judge (eligible, over the
    floor, no veto: ``guards.contender``); with its cosine, or None. A negative margin turns the
    check off. A nearer entry counts even when a veto refused it: on BANKING77 with the judge
    serving, counting vetoed nearer entries removed 10 hits of which 9 were wrong answers (the
    vetoes had refused the right intent's entry on a difference that does not change the answer).
    When two cached answers are about as close, the question is as likely the other's:
    in a cache of many neighbouring entries (BANKING77's 77 intents) most wrong answers were served
    so, and neither the judge's probability nor the strict match sees the other entry."""
    margin = settings.SEMANTIC_AMBIGUITY_MARGIN
    if margin < 0:
        return None
    floor = 1.0 - float(chosen.distance) - margin
    for row in rows:
        similarity = 1.0 - float(row.distance)
        if row is chosen or similarity < floor or _same_answer(row.answer, chosen.answer):
            continue
        if guards.same_question(row.question, chosen.question, row.signature, chosen.signature):
            continue  # two entries for one question: either answer is right
        if similarity > 1.0 - float(chosen.distance):
            return row, similarity  # nearer: a rival whatever refused it
        if guards.contender(question, row.question, similarity, new_sig=new_sig, cached_sig=row.signature,
                            thresholds=thresholds, locale=locale, soft_reads=soft_reads):
            return row, similarity
    return None


@dataclass(frozen=True)
class SemanticScope:
    """The hard filters: an entry outside them is never even a candidate."""

    tenant_id: int
    locale: str
    prompt_version: str
    model: str
    model_revision: str
    policy_version: int
    retrieval_version: str
    embedding_model: str
    embedding_version: str

    def filters(self) -> dict:
        return dict(tenant_id=self.tenant_id, locale=self.locale, prompt_version=self.prompt_version,
                    model=self.model, model_revision=self.model_revision, policy_version=self.policy_version,
                    retrieval_version=self.retrieval_version, embedding_model=self.embedding_model,
                    embedding_version=self.embedding_version)


def _cached_answer(entry: SemanticEntry) -> CachedAnswer:
    return CachedAnswer(answer=entry.answer, citations=entry.citations, intent=entry.intent,
                        created=entry.created_at.timestamp(), model=entry.model, prompt_version=entry.prompt_version,
                        source_request=str(entry.source_request or ""), entry_id=entry.pk, question=entry.question)


@functools.lru_cache(maxsize=8)
def _candidates_sql(filter_names: tuple[str, ...]) -> str:
    """The nearest active, unexpired entries in a scope, with what their source Ask cost.

    Written once per scope shape rather than by the ORM on every lookup: building that query
    (ten filters, a join, an annotation) cost a semantic hit a millisecond or two. Only the
    columns a lookup reads are selected (``raw`` defers the rest); the plan is the same HNSW
    index scan with iterative filtering (``bench.cache_latency`` prints it)."""
    meta, q = SemanticEntry._meta, connection.ops.quote_name
    ask = meta.get_field("source_ask").related_model._meta

    def col(name: str) -> str:
        return "e." + q(meta.get_field(name).column)

    selected = ", ".join(col(n) for n in ("id", "question", "answer", "citations", "intent", "signature", "model",
                                          "prompt_version", "created_at", "source_ask"))
    where = " AND ".join([f"{col('status')} = %s", f"{col('expires_at')} > %s",
                          *(f"{col(n)} = %s" for n in filter_names)])
    return (f"SELECT {selected}, {col('embedding')} <=> %s::vector AS distance, "
            f"a.{q(ask.get_field('request_id').column)} AS source_request, "
            f"a.{q(ask.get_field('prompt_tokens').column)} + a.{q(ask.get_field('completion_tokens').column)} "
            f"AS source_tokens, (a.{q(ask.get_field('timings').column)} ->> 'generation')::float AS source_generation_ms "
            f"FROM {q(meta.db_table)} e LEFT JOIN {q(ask.db_table)} a ON a.{q(ask.pk.column)} = {col('source_ask')} "
            f"WHERE {where} ORDER BY distance LIMIT %s")


def candidates_query(scope: SemanticScope, vector: np.ndarray, k: int = CANDIDATES) -> tuple[str, list]:
    """The SQL and parameters of ``candidates``."""
    filters = scope.filters()
    return _candidates_sql(tuple(filters)), [Vector(vector).to_text(), SemanticEntry.Status.ACTIVE, timezone.now(),
                                             *filters.values(), k]


def candidates(scope: SemanticScope, vector: np.ndarray, k: int = CANDIDATES) -> list[SemanticEntry]:
    """The scope's ``k`` nearest active, unexpired entries, nearest first (``distance``: cosine)."""
    return list(SemanticEntry.objects.raw(*candidates_query(scope, vector, k)))


class SemanticLayer:
    name = "semantic"

    def lookup(self, scope: SemanticScope, question: str, vector: np.ndarray, mode: str, *,
               soft_reads: bool = False) -> LayerResult:
        """The served entry, a shadow hit, an assist or a miss for ``question``. ``soft_reads``: a
        question only soft eligibility rules refused is judged as if eligible (``guards.judge``); the
        caller never stores its answer."""
        started = time.perf_counter()
        result = LayerResult(self.name, "miss", filters=scope.filters())
        rows = candidates(scope, vector)
        if not rows:
            result.reason = "no candidate in scope"
            result.lookup_ms = (time.perf_counter() - started) * 1000
            return result
        thresholds = current_thresholds()
        new_sig = guards.signature(question)
        # a float cross-encoder scores the candidates the judge will be asked about in one forward pass;
        # an int8 one scores each pair when it is judged (a hit stops at its first serving candidate)
        judge = guards.learned_judge()
        if judge is not None and judge.wants_prefetch:
            guards.prefetch(question, [(row.question, float(1.0 - row.distance), row.signature) for row in rows],
                            thresholds, locale=scope.locale, learned=judge, soft_reads=soft_reads)
        best = None
        for row in rows:
            similarity = float(1.0 - row.distance)
            judgement = guards.judge(question, row.question, similarity, new_sig=new_sig,
                                     cached_sig=row.signature, thresholds=thresholds, locale=scope.locale,
                                     judge_serves=settings.SEMANTIC_JUDGE_SERVES,
                                     judge_min_similarity=settings.SEMANTIC_JUDGE_MIN_SIMILARITY, soft_reads=soft_reads)
            if best is None or (judgement.probability is not None and (
                    best[2].probability is None or judgement.probability > best[2].probability)):
                best = (row, similarity, judgement)
            if judgement.serve:
                rival = _rival(rows, row, question, new_sig, thresholds, scope.locale, soft_reads)
                if rival is not None:
                    other, other_similarity = rival
                    judgement = replace(
                        judgement, serve=False,
                        reason=f"{AMBIGUOUS}: entry {other.pk} ({other.question[:60]!r}, similarity "
                               f"{other_similarity:.3f}) has another answer and is within "
                               f"{settings.SEMANTIC_AMBIGUITY_MARGIN:.2f} of this one ({similarity:.3f}); would have "
                               f"served: {judgement.reason}")
                    best = (row, similarity, judgement)
                    break  # the candidates further away are no less ambiguous
                stale = stale_citations(scope.tenant_id, row.citations)
                if stale:
                    SemanticEntry.objects.filter(pk=row.pk).update(status=SemanticEntry.Status.PURGED)
                    judgement = replace(judgement, serve=False, reason="cited article changed")
                    if best[0] is row:  # the stale row was the best so far: it must not be served below
                        best = (row, similarity, judgement)
                    continue
                best = (row, similarity, judgement)
                break
        row, similarity, judgement = best
        result.candidate, result.candidate_question = str(row.pk), row.question
        result.similarity, result.threshold = similarity, judgement.threshold
        result.signature_difference, result.intent = judgement.difference, judgement.intent
        result.judge_version, result.judge_probability = judgement.judge_version, judgement.probability
        result.entry_age_s = (timezone.now() - row.created_at).total_seconds()
        result.reason = judgement.reason
        if judgement.serve:
            if mode == "shadow":
                result.disposition = "shadow_hit"
                result.reason = f"shadow: would serve ({judgement.reason})"
            else:
                result.disposition, result.value = "hit", _cached_answer(row)
                # what the hit saved: the model call that wrote the entry
                result.saved_tokens = row.source_tokens or 0
                result.saved_ms = float(row.source_generation_ms or 0.0)
                # the entry's hit count is added after the Ask's record is written (``count_hits``), off the hit's path
        elif mode == "assist" and similarity >= settings.SEMANTIC_ASSIST_MIN_SIMILARITY:
            result.disposition, result.value = "assist", _cached_answer(row)
            result.reason = f"assist: near hit given to the model as context ({judgement.reason})"
        result.lookup_ms = (time.perf_counter() - started) * 1000
        return result

    @transaction.atomic
    def count_hits(self, hits: dict[int, int]) -> None:
        """Add served hits to entries' counts, ``{entry pk: hits}``. The rows are locked in key
        order first: two processes counting overlapping hits at once never deadlock."""
        if not hits:
            return
        list(SemanticEntry.objects.select_for_update().filter(pk__in=list(hits)).order_by("pk").values_list("pk"))
        by_count: dict[int, list[int]] = {}
        for pk, n in hits.items():
            by_count.setdefault(n, []).append(pk)
        now = timezone.now()
        for n, pks in by_count.items():
            SemanticEntry.objects.filter(pk__in=pks).update(hit_count=F("hit_count") + n, last_hit_at=now)

    def entry_new(self, scope: SemanticScope, *, question: str, normalized_question: str, vector: np.ndarray,
                  answer: CachedAnswer, exact_key: str, source=SemanticEntry.Source.GENERATED,
                  source_ask=None) -> SemanticEntry:
        """The entry ``store`` writes, not yet saved (``bench.semantic_scale`` builds its rows from it,
        so a new column reaches the bench by itself)."""
        return SemanticEntry(
            tenant_id=scope.tenant_id, locale=scope.locale, question=question,
            normalized_question=normalized_question, embedding=vector, embedding_model=scope.embedding_model,
            embedding_version=scope.embedding_version, answer=answer.answer, citations=answer.citations,
            intent=answer.intent, signature=guards.signature(question), judge_version=guards.judge_version(),
            exact_key=exact_key,
            prompt_version=scope.prompt_version, model=scope.model, model_revision=scope.model_revision,
            policy_version=scope.policy_version, retrieval_version=scope.retrieval_version, source=source,
            source_ask=source_ask, expires_at=timezone.now() + timedelta(seconds=settings.SEMANTIC_CACHE_TTL_S),
        )

    @transaction.atomic
    def store(self, scope: SemanticScope, *, question: str, normalized_question: str, vector: np.ndarray,
              answer: CachedAnswer, exact_key: str, source=SemanticEntry.Source.GENERATED,
              source_ask=None) -> SemanticEntry:
        # One live entry per normalised question in a scope: the newest verified answer wins.
        SemanticEntry.objects.filter(status=SemanticEntry.Status.ACTIVE, normalized_question=normalized_question,
                                     **scope.filters()).update(status=SemanticEntry.Status.RETIRED)
        entry = self.entry_new(scope, question=question, normalized_question=normalized_question, vector=vector,
                               answer=answer, exact_key=exact_key, source=source, source_ask=source_ask)
        entry.save(force_insert=True)
        EntryCitation.objects.bulk_create([
            EntryCitation(entry=entry, article_id=c["article_pk"], version=c["version"]) for c in answer.citations
        ])
        self._cap(scope.tenant_id, entry.pk)
        self._budget(scope.tenant_id, entry.pk)
        return entry

    def _budget(self, tenant_id: int, newest: int) -> int:
        """Past the tenant's byte budget (``core.budgets``: question, answer, citations and vector of
        its active entries), retire its oldest entries, never the newest one, and count them as evicted."""
        table = SemanticEntry._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"""UPDATE {table} SET status = %s WHERE id IN (
                      SELECT id FROM (
                        SELECT id, SUM(octet_length(question) + octet_length(normalized_question) + octet_length(answer)
                                       + octet_length(citations::text) + 4 * vector_dims(embedding))
                               OVER (ORDER BY created_at DESC, id DESC) AS running
                        FROM {table} WHERE tenant_id = %s AND status = %s) sized
                      WHERE running > %s AND id <> %s)""",
                [SemanticEntry.Status.RETIRED, tenant_id, SemanticEntry.Status.ACTIVE,
                 budgets.budget_bytes(tenant_id, "semantic"), newest])
            evicted = cursor.rowcount
        if evicted:
            churn_add(tenant_id, self.name, evicted=evicted)
        return evicted

    def _cap(self, tenant_id: int, newest: int) -> int:
        """Past ``SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT`` active entries, retire the tenant's least
        recently used ones (last hit, else creation) and count them as evicted."""
        active = SemanticEntry.objects.filter(tenant_id=tenant_id, status=SemanticEntry.Status.ACTIVE)
        over = active.count() - settings.SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT
        if over <= 0:
            return 0
        doomed = list(active.exclude(pk=newest).order_by(Coalesce("last_hit_at", "created_at"), "pk")
                      .values_list("pk", flat=True)[:over])
        evicted = SemanticEntry.objects.filter(pk__in=doomed, status=SemanticEntry.Status.ACTIVE).update(
            status=SemanticEntry.Status.RETIRED)
        churn_add(tenant_id, self.name, evicted=evicted)
        return evicted

    def tenant_size(self, tenant_id: int) -> int:
        return SemanticEntry.objects.filter(tenant_id=tenant_id, status=SemanticEntry.Status.ACTIVE).count()

    def purge_article(self, article_pk: int, tenant_id: int | None = None) -> int:
        ids = EntryCitation.objects.filter(article_id=article_pk).values("entry_id")
        return SemanticEntry.objects.filter(pk__in=ids, status=SemanticEntry.Status.ACTIVE).update(
            status=SemanticEntry.Status.PURGED)

    def purge_scope(self, scope: CacheScope) -> int:
        """Retire the tenant's active entries, or only those one of ``scope.request_ids`` produced.
        (Erasure deletes a customer's entries outright with the records that quote them:
        ``supportbot.retention.entries_forget``.)"""
        entries = SemanticEntry.objects.filter(tenant_id=scope.tenant_id, status=SemanticEntry.Status.ACTIVE)
        if scope.customer:
            entries = entries.filter(source_ask__request_id__in=scope.request_ids)
        return entries.update(status=SemanticEntry.Status.RETIRED)

    def stats(self, tenant_id: int) -> LayerStats:
        return LayerStats(self.name, self.tenant_size(tenant_id))

    # ----------------------------------------------------------------- after the judge (issue 12)

    def alias_lookup(self, scope: SemanticScope, normalized_question: str, result: LayerResult, mode: str) -> bool:
        """Serve the entry the verifier approved for this very question (an alias of it), while the
        entry itself may be served: active, unexpired, in this scope and citing current versions.
        On success ``result`` becomes the hit (or shadow would-hit)."""
        alias = (PairVerification.objects
                 .filter(verdict=PairVerification.Verdict.APPROVED, tenant_id=scope.tenant_id,
                         normalized_question=normalized_question, entry__status=SemanticEntry.Status.ACTIVE,
                         entry__expires_at__gt=timezone.now(),
                         **{f"entry__{k}": v for k, v in scope.filters().items()})
                 .select_related("entry__source_ask").order_by("-verified_at").first())
        if alias is None:
            return False
        return self.entry_serve(scope, alias.entry, result, mode,
                                f"alias of entry {alias.entry_id}: the verifier approved this question for it")

    def candidate_entry(self, scope: SemanticScope, result: LayerResult) -> SemanticEntry | None:
        """The decision's candidate, if it may still be served in this scope."""
        if not result.candidate.isdigit():
            return None
        return (SemanticEntry.objects.filter(pk=int(result.candidate), status=SemanticEntry.Status.ACTIVE,
                                             expires_at__gt=timezone.now(), **scope.filters())
                .select_related("source_ask").first())

    def entry_serve(self, scope: SemanticScope, entry: SemanticEntry, result: LayerResult, mode: str,
                    why: str) -> bool:
        """Make ``result`` a hit on ``entry`` (a shadow would-hit in shadow mode), unless a cited
        article changed since (then the entry is purged, as in ``lookup``)."""
        if stale_citations(scope.tenant_id, entry.citations):
            SemanticEntry.objects.filter(pk=entry.pk).update(status=SemanticEntry.Status.PURGED)
            result.reason = f"{result.reason}; {why}, but a cited article changed"[:300]
            return False
        if result.candidate != str(entry.pk):  # the judge's score was of another candidate, not of this pair
            result.judge_probability, result.similarity = None, None
        result.candidate, result.candidate_question = str(entry.pk), entry.question
        result.entry_age_s = (timezone.now() - entry.created_at).total_seconds()
        if mode == "shadow":
            result.disposition, result.reason = "shadow_hit", f"shadow: would serve ({why})"[:300]
            return True
        ask = entry.source_ask
        entry.source_request = ask.request_id if ask else ""
        result.disposition, result.value, result.reason = "hit", _cached_answer(entry), why[:300]
        result.saved_tokens = (ask.prompt_tokens + ask.completion_tokens) if ask else 0
        result.saved_ms = float((ask.timings or {}).get("generation") or 0.0) if ask else 0.0
        return True
