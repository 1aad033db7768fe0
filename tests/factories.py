"""Test data in one place."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings

from ingestion.parsing import ParsedArticle
from ingestion.services import article_upsert, ingest_directory
from retrieval.services import index_sync
from supportbot.models import Tenant
from supportbot.services import tenants_load


def demo_load() -> dict[str, Tenant]:
    """Idempotent: creates the demo tenants, ingests their articles, indexes what changed."""
    root = Path(settings.KB_DEMO_DIR)
    tenants = {t.slug: t for t in tenants_load(root / "tenants.json")}
    if not all(t.articles.exists() for t in tenants.values()):
        for t in tenants.values():
            ingest_directory(root / t.slug, t)
    index_sync()
    return {slug: Tenant.objects.get(pk=t.pk) for slug, t in tenants.items()}


def tenant(slug: str = "tenant-x", locales=("en",), **fields) -> Tenant:
    defaults = {"name": slug.title(), "locales": list(locales), "default_locale": locales[0]}
    defaults.update(fields)
    return Tenant.objects.create(slug=slug, **defaults)


def article(t: Tenant, external_id: str, body: str, *, title: str | None = None, locale: str = "en",
            url: str | None = None):
    parsed = ParsedArticle(external_id, title or external_id.replace("-", " ").title(), locale,
                           url or f"https://help.example/{t.slug}/{locale}/{external_id}", body)
    return article_upsert(t, parsed)
