"""Writes to the knowledge base: upsert articles as versions, chunk them, retire removed ones."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from core.models import Tenant
from ingestion.models import Article, ArticleVersion, Chunk
from ingestion.parsing import ArticleParseError, ParsedArticle, chunk_markdown, content_hash, parse_file
from ingestion.signals import article_changed
from ingestion.textsearch import search_vectors_write

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"created={len(self.created)} updated={len(self.updated)} unchanged={len(self.unchanged)} "
                f"retired={len(self.retired)} errors={len(self.errors)}")


def _emit_changed(article: Article, old_version: int, new_version: int | None, trigger: str) -> None:
    transaction.on_commit(lambda: article_changed.send(
        sender=Article, article_id=article.pk, tenant_id=article.tenant_id,
        old_version=old_version, new_version=new_version, trigger=trigger,
    ))


def _write_version(article: Article) -> ArticleVersion:
    """Snapshot the article's current content as its version and chunk it."""
    version = ArticleVersion.objects.create(
        article=article, version=article.version, title=article.title, url=article.url,
        body=article.body, content_hash=article.content_hash,
    )
    Chunk.objects.filter(article=article, is_current=True).update(is_current=False)
    pieces = chunk_markdown(article.title, article.body, settings.CHUNK_MAX_CHARS)
    Chunk.objects.bulk_create([
        Chunk(article_version=version, article=article, ordinal=i, heading=p.heading, text=p.text,
              content_hash=p.content_hash, is_current=article.status == Article.Status.ACTIVE)
        for i, p in enumerate(pieces)
    ])
    search_vectors_write(Chunk.objects.filter(article_version=version), article.locale)
    return version


@transaction.atomic
def article_upsert(tenant: Tenant, parsed: ParsedArticle, trigger: str = "ingest") -> tuple[Article, str]:
    """Create or update one article; returns (article, "created" | "updated" | "unchanged")."""
    if parsed.locale not in tenant.locales:
        raise ArticleParseError(f"{parsed.source_path}: locale {parsed.locale!r} is not one of "
                                f"{tenant.slug}'s locales {tenant.locales}")
    article = (Article.objects.select_for_update()
               .filter(tenant=tenant, locale=parsed.locale, external_id=parsed.external_id).first())
    digest = parsed.content_hash
    if article is None:
        article = Article.objects.create(
            tenant=tenant, locale=parsed.locale, external_id=parsed.external_id, title=parsed.title,
            url=parsed.url, body=parsed.body, content_hash=digest, version=1, source_path=parsed.source_path,
        )
        _write_version(article)
        _emit_changed(article, 0, 1, trigger)
        return article, "created"
    if article.content_hash == digest and article.status == Article.Status.ACTIVE:
        return article, "unchanged"
    old_version = article.version
    article.title, article.url, article.body = parsed.title, parsed.url, parsed.body
    article.content_hash, article.version = digest, old_version + 1
    article.status, article.source_path = Article.Status.ACTIVE, parsed.source_path
    article.save()
    _write_version(article)
    _emit_changed(article, old_version, article.version, trigger)
    return article, "updated"


@transaction.atomic
def article_edit(article: Article, *, title: str, body: str, url: str, trigger: str = "admin") -> str:
    """Staff edited an article: a changed text becomes a new version and a change event."""
    parsed = ParsedArticle(article.external_id, title, article.locale, url, body, article.source_path)
    return article_upsert(article.tenant, parsed, trigger=trigger)[1]


@transaction.atomic
def article_retire(article: Article, trigger: str = "ingest") -> None:
    article = Article.objects.select_for_update().get(pk=article.pk)
    if article.status == Article.Status.RETIRED:
        return
    article.status = Article.Status.RETIRED
    article.save(update_fields=["status", "updated_at"])
    Chunk.objects.filter(article=article, is_current=True).update(is_current=False)
    _emit_changed(article, article.version, None, trigger)


def ingest_directory(path: Path, tenant: Tenant, *, retire_missing: bool = True) -> IngestReport:
    """Ingest every ``*.md`` under path as the tenant's complete knowledge base.

    A file that does not parse is reported and skipped (it changes nothing); articles
    of the tenant that are no longer present are retired, unless a file failed to parse
    (a broken file must not look like a deletion)."""
    report = IngestReport()
    files = sorted(p for p in Path(path).rglob("*.md") if p.name.lower() != "readme.md")
    seen: set[tuple[str, str]] = set()
    for f in files:
        try:
            parsed = parse_file(f)
            if (parsed.locale, parsed.external_id) in seen:
                raise ArticleParseError(f"{f}: duplicate id {parsed.external_id!r} for locale {parsed.locale}")
            seen.add((parsed.locale, parsed.external_id))
            article, outcome = article_upsert(tenant, parsed)
        except (ArticleParseError, OSError) as exc:
            report.errors.append(str(exc))
            continue
        getattr(report, outcome).append(f"{parsed.locale}/{parsed.external_id}")
    if retire_missing and not report.errors:
        for article in Article.objects.filter(tenant=tenant, status=Article.Status.ACTIVE):
            if (article.locale, article.external_id) not in seen:
                article_retire(article)
                report.retired.append(f"{article.locale}/{article.external_id}")
    return report
