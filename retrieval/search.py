"""Hybrid search over the active index generation: pgvector similarity and PostgreSQL full-text
search in the locale's language, fused by reciprocal rank.

The embedding model ranks passages by meaning but knows one language well (all-MiniLM-L6-v2:
English) and blurs exact terms (product, plan and error names, order-number formats); full-text
search, stemmed and stop-worded with the chunk's text-search configuration
(``ingestion.textsearch``), finds exactly those words. Each ranking gives its top
``RETRIEVAL_CANDIDATES``; a passage scores ``sum(1 / (RETRIEVAL_RRF_K + rank))`` over the rankings it
is in (Cormack et al., SIGIR 2009), so neither ranking's scale has to be calibrated against the other.
The vector ranking's first passage always keeps a place in the top k: "How long does delivery to Canada take?"
shares "long", "take", "delivery" and "Canada" with the return policy, and the full-text ranking's votes for
such passages pushed out the one section the embedding found far more similar (Canada's delivery times).

A passage is evidence when its cosine similarity reaches ``RETRIEVAL_MIN_SIMILARITY`` or when it
contains at least ``RETRIEVAL_MIN_TERM_COVERAGE`` of the question's search terms: a full-text match
alone is evidence too. ``RETRIEVAL_VERSION`` names this method; it is part of the search-result cache
key and the answer spec, so results of another method are never served from a cache.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, replace

import numpy as np
from django.conf import settings
from django.core.signals import setting_changed
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import Case, Count, F, FloatField, Q, Value, When
from django.dispatch import receiver
from pgvector.django import CosineDistance

from core.redis_client import RedisUnavailable, get_redis, redis_available, redis_failed
from ingestion.textsearch import text_search_config
from retrieval.models import ChunkEmbedding, IndexGeneration

RETRIEVAL_VERSION = "hybrid-rrf-4"  # bump when the way passages are found or ranked changes


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    article_pk: int
    article_id: str  # external id
    title: str
    url: str
    version: int
    heading: str
    text: str
    similarity: float  # cosine similarity of question and passage
    term_coverage: float = 0.0  # share of the question's search terms the passage contains
    score: float = 0.0  # fused rank score (higher first)
    evidence: bool = True  # similar enough, or matching enough of the question's terms

    def to_dict(self) -> dict:
        return asdict(self)


def search_chunks(generation: IndexGeneration, tenant_id: int, locale: str, vector: np.ndarray, k: int) -> list[SearchHit]:
    """Top-k chunks of one tenant and locale by cosine similarity.

    The HNSW index is shared by all tenants; pgvector 0.8's iterative scan
    (``hnsw.iterative_scan``, set on every connection in settings) keeps scanning
    until k rows pass the tenant/locale filter."""
    rows = (_scope(generation, tenant_id, locale)
            .annotate(distance=CosineDistance("embedding", vector))
            .order_by("distance")[:k])
    return [_hit(r, float(1.0 - r.distance)) for r in rows]


def _scope(generation: IndexGeneration, tenant_id: int, locale: str):
    return (ChunkEmbedding.objects.filter(generation=generation, tenant_id=tenant_id, locale=locale)
            .select_related("chunk__article_version", "article"))


def _hit(row: ChunkEmbedding, similarity: float) -> SearchHit:
    version = row.chunk.article_version
    return SearchHit(chunk_id=row.chunk_id, article_pk=row.article_id, article_id=row.article.external_id,
                     title=version.title, url=version.url, version=version.version, heading=row.chunk.heading,
                     text=row.chunk.text, similarity=similarity)


def query_terms(config: str, question: str) -> list[str]:
    """The question's search terms: its words as the text-search configuration stems them, stop words out."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT tsvector_to_array(to_tsvector(%s::regconfig, %s))", [config, question])
        return list(cursor.fetchone()[0] or [])


def words_terms(config: str, words) -> dict[str, list[str]]:
    """``query_terms`` of each of ``words`` (words or whole texts), in one round trip: word -> its search terms,
    in the order the words come."""
    words = list(dict.fromkeys(words))
    if not words:
        return {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT w, tsvector_to_array(to_tsvector(%s::regconfig, w)) "
                       "FROM unnest(%s::text[]) WITH ORDINALITY AS u(w, n) ORDER BY n", [config, words])
        return {w: list(terms or []) for w, terms in cursor.fetchall()}


class _AnyTerm(SearchQuery):
    """A tsquery matching a passage with any of the terms. The terms come out of the configuration
    already (``query_terms``), so they are cast, not parsed and stemmed a second time."""

    template = "(%(expressions)s)::tsquery"

    def __init__(self, terms: list[str]):
        super().__init__(" | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms))


def term_weights(scope, groups: dict[str, list[str]]) -> tuple[dict[str, float], dict[str, int]]:
    """How much each search term says, as its inverse document frequency among the scope's passages,
    ``ln((N + 1) / (df + 0.5))``: a word in every passage of the tenant ("order", "Acme") says little,
    a rare one (a product, plan or error name) or one no passage has says much. ``groups``: each term
    with the words that count as it (itself, and compound parts, see ``compound_alternatives``).
    Returns the weights and the document frequencies."""
    counts = scope.aggregate(n=Count("pk"), **{
        f"t{i}": Count("pk", filter=Q(chunk__search_vector=_AnyTerm(alternatives)))
        for i, alternatives in enumerate(groups.values())})
    df = {t: counts[f"t{i}"] for i, t in enumerate(groups)}
    return {t: math.log((counts["n"] + 1) / (df[t] + 0.5)) for t in groups}, df


def scope_words_sql() -> tuple[str, str]:
    """SQL over the words of a scope's chunks: the FROM part (``ce``: a chunk's embedding row, ``w.lexeme``:
    one word of the chunk's text-search vector) and the WHERE part of the scope (three parameters:
    generation, tenant, locale)."""
    meta, q = ChunkEmbedding._meta, connection.ops.quote_name
    chunk = meta.get_field("chunk").related_model._meta
    words = (f"{q(meta.db_table)} ce "
             f"JOIN {q(chunk.db_table)} c ON c.{q(chunk.pk.column)} = ce.{q(meta.get_field('chunk').column)} "
             f"CROSS JOIN LATERAL unnest(tsvector_to_array(c.{q(chunk.get_field('search_vector').column)})) "
             f"AS w(lexeme)")
    scope = (f"ce.{q(meta.get_field('generation').column)} = %s AND ce.{q(meta.get_field('tenant').column)} = %s "
             f"AND ce.{q(meta.get_field('locale').column)} = %s")
    return words, scope


def compound_alternatives(generation_id: int, tenant_id: int, locale: str, terms: list[str]) -> dict[str, list[str]]:
    """For languages that glue words together (German: "Standardversand", "Erstattungsreferenz"), the
    scope's words that an unknown question word ends with, or that end with it: the compound's head
    carries its meaning ("Versand", "Referenz"). Words shorter than ``MIN_COMPOUND_PART`` are never parts.
    One scan of the scope's words, made only for question words no passage has and long ones (``LONG_COMPOUND``)."""
    if not terms:
        return {}
    words, scope = scope_words_sql()
    sql = (f"SELECT DISTINCT w.lexeme, t.term FROM {words} "
           f"JOIN unnest(%s::text[]) AS t(term) ON w.lexeme <> t.term AND ("
           f"(length(w.lexeme) >= %s AND right(t.term, length(w.lexeme)) = w.lexeme) OR "
           f"(length(w.lexeme) >= %s AND length(t.term) - length(w.lexeme) >= %s "
           f"AND left(t.term, length(w.lexeme)) = w.lexeme) OR "
           f"(length(t.term) >= %s AND right(w.lexeme, length(t.term)) = t.term)) "
           f"WHERE {scope}")
    with connection.cursor() as cursor:
        cursor.execute(sql, [terms, MIN_COMPOUND_PART, MIN_COMPOUND_PART, MIN_COMPOUND_PART, MIN_COMPOUND_PART,
                             generation_id, tenant_id, locale])
        out: dict[str, list[str]] = {}
        for lexeme, term in cursor.fetchall():
            out.setdefault(term, []).append(lexeme)
    return {t: sorted(v) for t, v in out.items()}


MIN_COMPOUND_PART = 5
# A question word this long is read as a compound of its parts as well, even where some passage has it whole.
LONG_COMPOUND = 2 * MIN_COMPOUND_PART


def text_matches(generation: IndexGeneration, tenant_id: int, locale: str, question: str, vector: np.ndarray,
                 limit: int) -> list[SearchHit]:
    """The chunks of a tenant and locale containing any of the question's search terms, best first:
    by the weighted share of the terms they contain (``term_weights``), then by ``ts_rank_cd``
    (terms closer together, in the heading rather than the text); each with its cosine similarity."""
    config = text_search_config(locale)
    terms = query_terms(config, question)
    if not terms:
        return []
    scope = ChunkEmbedding.objects.filter(generation=generation, tenant_id=tenant_id, locale=locale)
    groups = {t: [t] for t in terms}
    weights, df = term_weights(scope, groups)
    if config in settings.TEXT_SEARCH_COMPOUNDS:
        # a word no passage has, and a long compound whatever the passages have: "Standardversand" is said whole
        # only in the Plus article, while the shipping article says "Standard" under "Versandkosten"
        expanded = compound_alternatives(generation.pk, tenant_id, locale,
                                         [t for t in terms if not df[t] or len(t) >= LONG_COMPOUND])
        if expanded:
            groups.update({t: [t, *parts] for t, parts in expanded.items()})
            weights, df = term_weights(scope, groups)
    total = sum(weights.values())
    query = _AnyTerm([w for alternatives in groups.values() for w in alternatives])
    matched = sum((Case(When(chunk__search_vector=_AnyTerm(groups[t]), then=Value(w)), default=Value(0.0),
                        output_field=FloatField()) for t, w in weights.items()), start=Value(0.0))
    rows = (_scope(generation, tenant_id, locale)
            .filter(chunk__search_vector=query)
            .annotate(matched=matched, rank=SearchRank(F("chunk__search_vector"), query, cover_density=True),
                      distance=CosineDistance("embedding", vector))
            .order_by("-matched", "-rank", "pk")[:limit])
    return [replace(_hit(r, float(1.0 - r.distance)), term_coverage=float(r.matched) / total) for r in rows]


def search_version() -> str:
    """``RETRIEVAL_VERSION`` and every setting that changes which passages a search returns: part of
    the search-result cache key and of the answer spec's retrieval version. Computed once per
    ``RETRIEVAL_VERSION`` until one of those settings changes (every exact hit asks for it)."""
    version = _search_versions.get(RETRIEVAL_VERSION)
    if version is None:
        version = _search_versions[RETRIEVAL_VERSION] = _search_version(
            RETRIEVAL_VERSION, settings.RETRIEVAL_MIN_SIMILARITY, settings.RETRIEVAL_MIN_TERM_COVERAGE,
            settings.RETRIEVAL_CANDIDATES, settings.RETRIEVAL_RRF_K, json.dumps(settings.TEXT_SEARCH_CONFIGS, sort_keys=True),
            json.dumps(sorted(settings.TEXT_SEARCH_COMPOUNDS)))
    return version


def _search_version(*parts) -> str:
    return f"{parts[0]}:" + hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]


_search_versions: dict[str, str] = {}  # RETRIEVAL_VERSION -> search_version(), until a setting changes


@receiver(setting_changed)
def _forget_search_versions(*, setting: str, **kwargs) -> None:
    if setting.startswith(("RETRIEVAL_", "TEXT_SEARCH_")):
        _search_versions.clear()


def is_evidence(hit: SearchHit) -> bool:
    return (hit.similarity >= settings.RETRIEVAL_MIN_SIMILARITY
            or hit.term_coverage >= settings.RETRIEVAL_MIN_TERM_COVERAGE)


def rrf_scores(*rankings: list[SearchHit]) -> dict[int, float]:
    """Each passage's reciprocal-rank score, ``sum(1 / (RETRIEVAL_RRF_K + rank))`` over the rankings it is in."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1.0 / (settings.RETRIEVAL_RRF_K + rank)
    return scores


def search_hybrid(generation: IndexGeneration, tenant_id: int, locale: str, question: str, vector: np.ndarray,
                  k: int) -> list[SearchHit]:
    """The top-k evidence passages of a tenant and locale by reciprocal rank fusion of the vector and
    the full-text rankings (see the module docstring)."""
    n = max(k, settings.RETRIEVAL_CANDIDATES)
    by_vector = search_chunks(generation, tenant_id, locale, vector, n)
    by_text = text_matches(generation, tenant_id, locale, question, vector, n)
    scores = rrf_scores(by_vector, by_text)
    hits: dict[int, SearchHit] = {}
    for hit in (*by_vector, *by_text):
        if hit.chunk_id not in hits or hit.term_coverage:  # the full-text row carries the coverage
            hits[hit.chunk_id] = hit

    def scored(hit: SearchHit) -> SearchHit:
        return replace(hit, score=scores[hit.chunk_id], evidence=is_evidence(hit))

    out = []
    for hit in sorted(hits.values(), key=lambda h: (-scores[h.chunk_id], -h.similarity, h.chunk_id)):
        hit = scored(hit)
        if hit.evidence:
            out.append(hit)
        if len(out) == k:
            break
    # the passage most similar in meaning always has a place: full-text ranks by shared words, and a question's
    # words that say what kind of fact it wants ("how long does ... take") fill that ranking with passages that
    # happen to have them, pushing the one passage about the asked thing out of the fused top k
    if out and by_vector and by_vector[0].chunk_id not in {h.chunk_id for h in out}:
        top = scored(hits[by_vector[0].chunk_id])
        if top.evidence:
            out = out[:k - 1] + [top]
    return out


def article_texts(generation: IndexGeneration, tenant_id: int, locale: str, article_ids) -> dict[str, str]:
    """The whole text (headings and passages, in order) of each of the articles (by external id) in a tenant's
    scope, in one query."""
    out: dict[str, list[str]] = {}
    rows = (ChunkEmbedding.objects.filter(generation=generation, tenant_id=tenant_id, locale=locale,
                                          article__external_id__in=list(article_ids))
            .order_by("article_id", "chunk_id").values_list("article__external_id", "chunk__heading", "chunk__text"))
    for article_id, heading, text in rows:
        out.setdefault(article_id, []).append(f"{heading}\n{text}")
    return {article_id: "\n".join(parts) for article_id, parts in out.items()}


def article_hits(generation: IndexGeneration, tenant_id: int, locale: str, article_pk: int,
                 vector: np.ndarray) -> list[SearchHit]:
    """Every chunk of one article in a tenant's scope, most similar to ``vector`` first."""
    rows = (_scope(generation, tenant_id, locale).filter(article_id=article_pk)
            .annotate(distance=CosineDistance("embedding", vector)).order_by("distance"))
    return [_hit(r, float(1.0 - r.distance)) for r in rows]


def fuse(first: list[SearchHit], second: list[SearchHit], k: int) -> list[SearchHit]:
    """The top k of two searches' results by reciprocal rank (``rrf_scores``), as ``search_hybrid`` fuses its
    own two rankings; the first's order breaks ties, and a passage in both keeps the first's hit."""
    scores = rrf_scores(first, second)
    hits: dict[int, SearchHit] = {}
    for hit in (*first, *second):
        hits.setdefault(hit.chunk_id, hit)
    return sorted(hits.values(), key=lambda h: -scores[h.chunk_id])[:k]


def index_version(tenant_id: int) -> int:
    """Bumped whenever a tenant's vectors change, so results cached before a re-index
    (e.g. between a purge and the re-embedding of an edited article) are never read again."""
    if not redis_available():
        return 0
    try:
        return int(get_redis().get(f"idxv:{tenant_id}") or 0)
    except RedisUnavailable as exc:
        redis_failed(exc)
        return 0


def index_version_bump(tenant_ids) -> None:
    try:
        pipe = get_redis().pipeline(transaction=False)
        for tenant_id in set(tenant_ids):
            pipe.incr(f"idxv:{tenant_id}")
        pipe.execute()
    except RedisUnavailable as exc:
        redis_failed(exc)  # the search cache TTL bounds what a missed bump can cost
