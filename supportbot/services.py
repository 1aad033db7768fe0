"""Writes for tenants: the demo setup."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from core.models import Tenant
from ingestion.services import ingest_directory
from retrieval.services import SyncReport, index_sync

TENANT_FIELDS = ("name", "locales", "default_locale", "handoff_text", "instructions", "few_shot")


@transaction.atomic
def tenants_load(path: Path) -> list[Tenant]:
    """Create or update tenants from a JSON list (idempotent; policy version and mode are left alone).

    A row's ``semantic_mode`` applies only when the tenant is created (the demo tenants start in
    serve mode so the demo shows hits; a tenant created without one starts in shadow)."""
    rows = json.loads(Path(path).read_text())
    tenants = []
    for row in rows:
        fields = {k: row[k] for k in TENANT_FIELDS}
        tenant, _ = Tenant.objects.update_or_create(
            slug=row["slug"], defaults=fields,
            create_defaults={**fields, **({"semantic_mode": row["semantic_mode"]} if "semantic_mode" in row else {})})
        tenants.append(tenant)
    return tenants


def demo_dir() -> Path:
    return Path(settings.KB_DEMO_DIR)


@dataclass
class DemoLoad:
    tenants: dict[str, Tenant]
    reports: dict  # slug -> ingestion.services.IngestReport (only for the tenants ingested)
    sync: SyncReport


def demo_load(*, skip_ingested: bool = False) -> DemoLoad:
    """Create or update the demo tenants, ingest their knowledge base and index what changed
    (idempotent). ``skip_ingested``: leave tenants that have articles as they are (test setup)."""
    root = demo_dir()
    tenants = {t.slug: t for t in tenants_load(root / "tenants.json")}
    reports = {slug: ingest_directory(root / slug, t) for slug, t in tenants.items()
               if not (skip_ingested and t.articles.exists())}
    return DemoLoad(tenants, reports, index_sync())
