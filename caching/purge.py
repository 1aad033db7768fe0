"""Citation-based purges: every cached answer names the article versions behind it, so a
changed article removes exactly the entries that cite it.

- ``purge_citing`` runs on every change event (queued on commit by ``caching.receivers``):
  it removes every entry citing the article from the exact, semantic and search layers
  through each layer's reverse index, and records a ``PurgeRecord``.
- ``purge_retrieving`` runs once new or changed articles are searchable: it removes the
  answers that cite none of them but whose question now retrieves one (new knowledge).
- ``purge_sweep`` (nightly) catches what an event missed (a worker was down, a publish
  failed): entries whose cited versions are no longer current. It checks versions, so
  entries written after a change (citing the new version) stay.
- ``semantic_expired_cleanup`` retires expired semantic entries and deletes long-dead ones;
  Redis entries expire by TTL on their own.
- A tenant's policy-version bump needs none of this: the version is part of every key.
"""
from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from caching.churn import churn_add
from caching.layers import exact_layer, search_layer, semantic_layer
from caching.models import EntryCitation, PurgeRecord, SemanticEntry
from core import metrics
from core.jobs import job_run
from ingestion.models import Article
from retrieval.embeddings import embed_texts, question_scope
from retrieval.generations import query_embedder
from retrieval.search import search_hybrid
from retrieval.services import active_generation

log = logging.getLogger(__name__)

LAYERS = {"exact": exact_layer, "semantic": semantic_layer, "search": search_layer}


def purge_citing(article_pk: int, version: int | None = None, trigger: str = PurgeRecord.Trigger.MANUAL,
                 *, layers: tuple[str, ...] = ("semantic", "exact", "search")) -> PurgeRecord:
    """Remove every cached entry that cites the article, in every layer; record what went.

    Idempotent (a second run removes nothing). Raises if Redis is unreachable, after the
    database layer is done, so the task retries the rest."""
    started = time.perf_counter()
    article = Article.objects.filter(pk=article_pk).only("pk", "tenant_id").first()
    # The article's tenant names the shard of its reverse indexes; a deleted one is looked for everywhere.
    removed = {name: LAYERS[name].purge_article(article_pk, article.tenant_id if article else None)
               for name in layers}
    record = PurgeRecord.objects.create(
        article=article, article_pk=article_pk, tenant_id=article.tenant_id if article else None, version=version,
        trigger=trigger, removed_exact=removed.get("exact", 0), removed_semantic=removed.get("semantic", 0),
        removed_search=removed.get("search", 0), duration_ms=(time.perf_counter() - started) * 1000,
    )
    log.info("purge %s", record)
    purges_count([record])
    return record


# --------------------------------------------------------------------------- new knowledge

def purge_retrieving(article_pks, trigger: str = "") -> list[PurgeRecord]:
    """Remove the cached answers whose question now retrieves one of these new or changed articles.

    Runs once the articles are searchable (``index_refreshed``). A citation purge cannot see these
    answers: they cite other articles, yet a fresh answer would now read the new text (a new article
    on the question's topic, or an edit that adds a fact). Each active semantic entry of the
    articles' tenant and locale is searched again as the Ask path searches (``search_hybrid``, with
    the entry's stored question vector); an exact entry without a semantic twin is searched by its
    question, and a rewrite by the customer's own words too (``CachedAnswer.searched``). An entry
    whose top-k evidence holds one of the articles is purged (semantic) or deleted (exact). Retired
    articles need none of this: their citers went with the citation purge, and an answer that did
    not cite one has none of its facts. Search results are not touched here:
    the re-index bumped the tenant's index version, so every older result is unreachable.
    Returns one ``PurgeRecord`` (trigger ``retrieval``) per article that cost an entry."""
    articles = list(Article.objects.filter(pk__in=list(article_pks), status=Article.Status.ACTIVE)
                    .select_related("tenant"))
    generation = active_generation()
    if generation is None or not articles:
        return []
    embedder, k = query_embedder(), settings.RETRIEVAL_TOP_K
    scopes: dict[tuple[int, str], set[int]] = defaultdict(set)
    for a in articles:
        scopes[(a.tenant_id, a.locale)].add(a.pk)
    records = []
    for (tenant_id, locale), pks in sorted(scopes.items()):
        started = time.perf_counter()
        removed_semantic, removed_exact = Counter(), Counter()

        def retrieved(question: str, vector) -> int | None:
            found = [h.article_pk for h in search_hybrid(generation, tenant_id, locale, question, vector, k)
                     if h.article_pk in pks]
            return found[0] if found else None

        entries = (SemanticEntry.objects.filter(tenant_id=tenant_id, locale=locale, status=SemanticEntry.Status.ACTIVE,
                                                embedding_model=embedder.name, embedding_version=embedder.version)
                   .values_list("pk", "question", "embedding", "exact_key"))
        doomed_entries, doomed_keys = [], []
        for pk, question, vector, key in entries.iterator(chunk_size=500):
            article_pk = retrieved(question, vector)
            if article_pk is not None:
                doomed_entries.append(pk)
                removed_semantic[article_pk] += 1
                if key:
                    doomed_keys.append(key)
                    removed_exact[article_pk] += 1
        # Exact entries with no active semantic twin (the tenant's semantic mode is off, say). Their
        # locale is not stored with them: one of another locale may be searched here too, and at worst
        # goes early (a miss), never late.
        # A rewrite whose retrieval also searched the customer's own words (``CachedAnswer.searched``) is
        # searched by those words too: an article found only by them would have changed its answer.
        twins = dict(SemanticEntry.objects.filter(tenant_id=tenant_id, status=SemanticEntry.Status.ACTIVE)
                     .exclude(exact_key="").values_list("exact_key", "pk"))
        searches, gone = [], set(doomed_keys)  # (key, what to search)
        for key, value in exact_layer.entries(tenant_id):
            if value is None or key in gone:
                continue
            if key not in twins and value.get("question"):
                searches.append((key, value["question"]))
            if value.get("searched"):
                searches.append((key, value["searched"]))
        for i in range(0, len(searches), 200):
            batch = searches[i:i + 200]
            vectors = embed_texts([q for _, q in batch], embedder=embedder, cache=question_scope(tenant_id))
            for (key, question), vector in zip(batch, vectors):
                article_pk = retrieved(question, vector) if key not in gone else None
                if article_pk is not None:
                    gone.add(key)
                    doomed_keys.append(key)
                    removed_exact[article_pk] += 1
                    if key in twins:
                        doomed_entries.append(twins[key])
                        removed_semantic[article_pk] += 1
        with transaction.atomic():
            SemanticEntry.objects.filter(pk__in=doomed_entries, status=SemanticEntry.Status.ACTIVE).update(
                status=SemanticEntry.Status.PURGED)
        exact_layer.delete_keys(doomed_keys)
        per_article_ms = (time.perf_counter() - started) * 1000 / len(pks)
        for article_pk in sorted(set(removed_semantic) | set(removed_exact)):
            records.append(PurgeRecord.objects.create(
                article_id=article_pk, article_pk=article_pk, tenant_id=tenant_id,
                version=next(a.version for a in articles if a.pk == article_pk), trigger=PurgeRecord.Trigger.RETRIEVAL,
                removed_exact=removed_exact[article_pk], removed_semantic=removed_semantic[article_pk],
                duration_ms=per_article_ms))
        log.info("purge_retrieving %s/%s (%s): %d semantic, %d exact entries of %d articles", tenant_id, locale,
                 trigger, sum(removed_semantic.values()), sum(removed_exact.values()), len(pks))
    purges_count(records)
    return records


def purges_count(records) -> None:
    """The purges in the metrics: runs by cause, entries removed by layer and cause."""
    for record in records:
        metrics.PURGES.labels(record.trigger).inc()
        for layer in ("exact", "semantic", "search"):
            metrics.PURGED_ENTRIES.labels(layer, record.trigger).inc(getattr(record, f"removed_{layer}"))


# --------------------------------------------------------------------------- the nightly sweep

def _current_versions(article_pks) -> dict[int, int]:
    """Active articles' current versions; a retired or deleted article is absent (every citation of it is stale)."""
    pks = sorted(set(article_pks))
    out: dict[int, int] = {}
    for i in range(0, len(pks), 5000):
        out.update(Article.objects.filter(pk__in=pks[i:i + 5000], status=Article.Status.ACTIVE)
                   .values_list("pk", "version"))
    return out


def _sweep_semantic() -> tuple[int, Counter]:
    stale = (EntryCitation.objects.filter(entry__status=SemanticEntry.Status.ACTIVE)
             .filter(Q(article__status=Article.Status.RETIRED) | ~Q(version=F("article__version")))
             .values_list("article_id", "entry_id"))
    by_article: dict[int, set[int]] = defaultdict(set)
    for article_pk, entry_id in stale:
        by_article[article_pk].add(entry_id)
    entry_ids = set().union(*by_article.values()) if by_article else set()
    with transaction.atomic():
        purged = set(SemanticEntry.objects.select_for_update()
                     .filter(pk__in=entry_ids, status=SemanticEntry.Status.ACTIVE).values_list("pk", flat=True))
        SemanticEntry.objects.filter(pk__in=purged).update(status=SemanticEntry.Status.PURGED)
    examined = SemanticEntry.objects.filter(status=SemanticEntry.Status.ACTIVE).count() + len(purged)
    return examined, Counter({pk: len(ids & purged) for pk, ids in by_article.items() if ids & purged})


def purge_sweep(*, task_id: str = "", attempt: int = 1):
    """Purge every cached entry citing an article version that is no longer current (trigger "sweep")."""
    with job_run("purge_sweep", task_id=task_id, attempt=attempt) as ctx:
        started = time.perf_counter()
        scanned_sem, semantic = _sweep_semantic()
        scanned_ans, exact = exact_layer.sweep(_current_versions)
        scanned_srch, search = search_layer.sweep(_current_versions)
        articles = set(semantic) | set(exact) | set(search)
        current = _current_versions(articles)
        tenants = dict(Article.objects.filter(pk__in=articles).values_list("pk", "tenant_id"))
        per_article_ms = (time.perf_counter() - started) * 1000 / max(1, len(articles))
        records = PurgeRecord.objects.bulk_create([
            PurgeRecord(article_id=pk if pk in tenants else None, article_pk=pk, tenant_id=tenants.get(pk),
                        version=current.get(pk), trigger=PurgeRecord.Trigger.SWEEP, removed_exact=exact[pk],
                        removed_semantic=semantic[pk], removed_search=search[pk], duration_ms=per_article_ms)
            for pk in sorted(articles)
        ])
        purges_count(records)
        ctx.record(scanned=scanned_sem + scanned_ans + scanned_srch, changed=len(articles),
                   removed=sum(semantic.values()) + sum(exact.values()) + sum(search.values()))
        ctx.run.detail.update({"semantic": sum(semantic.values()), "exact": sum(exact.values()),
                               "search": sum(search.values()), "articles": sorted(articles)[:200]})
    return ctx.run


# --------------------------------------------------------------------------- TTL and model clean-up

def semantic_expired_cleanup(*, task_id: str = "", attempt: int = 1):
    """Retire active semantic entries past their expiry; delete entries that stopped serving long ago
    (quarantined ones are evidence for staff review and stay, until ``supportbot.retention`` deletes
    them with the records after ``RECORD_RETENTION_DAYS``)."""
    with job_run("semantic_expired_cleanup", task_id=task_id, attempt=attempt) as ctx:
        now = timezone.now()
        expiring = list(SemanticEntry.objects.filter(status=SemanticEntry.Status.ACTIVE, expires_at__lte=now)
                        .values_list("pk", "tenant_id"))
        retired = SemanticEntry.objects.filter(pk__in=[pk for pk, _ in expiring],
                                               status=SemanticEntry.Status.ACTIVE).update(
            status=SemanticEntry.Status.RETIRED)
        for tenant_id, n in Counter(t for _, t in expiring).items():
            churn_add(tenant_id, semantic_layer.name, expired=n)
        cutoff = now - timedelta(days=settings.SEMANTIC_CACHE_RETENTION_DAYS)
        dead = SemanticEntry.objects.filter(
            status__in=[SemanticEntry.Status.RETIRED, SemanticEntry.Status.PURGED], expires_at__lt=cutoff)
        deleted = dead.filter(pk__in=dead.values("pk")[:50000]).delete()[1].get(SemanticEntry._meta.label, 0)
        ctx.record(changed=retired, removed=deleted)
        metrics.EVICTIONS.labels("semantic", "retention").inc(deleted)  # expiries: counted by churn_add
        ctx.run.detail.update({"retired_expired": retired, "deleted": deleted})
    return ctx.run


def semantic_retire_other_models(model_name: str, model_version: str) -> int:
    """After an embedding-model switch: entries embedded with another model can never be compared
    with new query vectors; retire them (their retrieval version is unreachable anyway)."""
    retired = (SemanticEntry.objects.filter(status=SemanticEntry.Status.ACTIVE)
               .exclude(embedding_model=model_name, embedding_version=model_version)
               .update(status=SemanticEntry.Status.RETIRED))
    metrics.EVICTIONS.labels("semantic", "model_switch").inc(retired)
    return retired
