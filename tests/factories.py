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


def cache_decision(t: Tenant, layer: str = "semantic", disposition: str = "hit", *, serving_layer: str = ""):
    """One recorded Ask with one cache decision (a served hit by default)."""
    from caching.models import AskEvent, CacheDecision

    ask = AskEvent.objects.create(tenant=t, locale="en", question="How do returns work?", status="answered",
                                  serving_layer=serving_layer or (layer if disposition == "hit" else "none"))
    return CacheDecision.objects.create(ask=ask, tenant=t, layer=layer, disposition=disposition)


def labelled_hit(t: Tenant, verdict: str, *, stratum: str = "semantic", user=None):
    """A sampled hit (stratum "shadow": a would-hit) with a staff label, through the labelling service."""
    from caching.models import SampledHit
    from supportbot.review import label_sample

    layer, disposition = ("semantic", "shadow_hit") if stratum == "shadow" else (stratum, "hit")
    decision = cache_decision(t, layer, disposition)
    sample = SampledHit.objects.create(decision=decision, tenant=t, stratum=stratum, why="rate")
    return label_sample(sample, verdict, "" if verdict == "correct" else "entity", user)
