"""Staff actions on tenants (thresholds and review live in ``caching``)."""
from __future__ import annotations

from django.db import transaction

from caching.audit import audit
from core.models import Tenant


@transaction.atomic
def semantic_mode_set(tenant: Tenant, mode: str, user) -> Tenant:
    if mode not in Tenant.SemanticMode.values:
        raise ValueError(f"unknown semantic mode {mode!r}")
    tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
    previous = tenant.semantic_mode
    if previous != mode:
        tenant.semantic_mode = mode
        tenant.save(update_fields=["semantic_mode", "updated_at"])
        audit(user, "semantic_mode_set", tenant, previous=previous, mode=mode)
    return tenant
