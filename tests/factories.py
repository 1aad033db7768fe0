"""Test data in one place."""
from __future__ import annotations

from core.models import Tenant
from ingestion.parsing import ParsedArticle
from ingestion.services import article_upsert
from supportbot import services


def demo_load() -> dict[str, Tenant]:
    """The demo tenants, ingested (once) and indexed."""
    loaded = services.demo_load(skip_ingested=True)
    return {slug: Tenant.objects.get(pk=t.pk) for slug, t in loaded.tenants.items()}


def tenant(slug: str = "tenant-x", locales=("en",), **fields) -> Tenant:
    defaults = {"name": slug.title(), "locales": list(locales), "default_locale": locales[0]}
    defaults.update(fields)
    return Tenant.objects.create(slug=slug, **defaults)


def article(t: Tenant, external_id: str, body: str, *, title: str | None = None, locale: str = "en",
            url: str | None = None):
    parsed = ParsedArticle(external_id, title or external_id.replace("-", " ").title(), locale,
                           url or f"https://help.example/{t.slug}/{locale}/{external_id}", body)
    return article_upsert(t, parsed)
