"""Writes for tenants: the demo setup."""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.db import transaction

from supportbot.models import Tenant

TENANT_FIELDS = ("name", "locales", "default_locale", "handoff_text", "instructions", "few_shot")


@transaction.atomic
def tenants_load(path: Path) -> list[Tenant]:
    """Create or update tenants from a JSON list (idempotent; policy version and mode are left alone)."""
    rows = json.loads(Path(path).read_text())
    tenants = []
    for row in rows:
        tenant, _ = Tenant.objects.update_or_create(slug=row["slug"], defaults={k: row[k] for k in TENANT_FIELDS})
        tenants.append(tenant)
    return tenants


def demo_dir() -> Path:
    return Path(settings.KB_DEMO_DIR)
