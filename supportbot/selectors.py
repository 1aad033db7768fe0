"""Reads of tenants for the request path, from the process-local revisioned cache.

Every API request needs its tenant row and, with an ``Authorization`` header, the tenant's
API keys. ``tenant_directory_get`` serves both from ``core.localcache`` so a cache hit
makes no database query; any save of a tenant or of one of its keys (``supportbot.receivers``)
bumps the tenant's revision, so a policy-version bump, a mode switch or a revoked key takes
effect on the next request in every process."""
from __future__ import annotations

from dataclasses import dataclass, field

from core.localcache import MISSING, RevisionedCache
from core.models import Tenant, TenantApiKey

tenant_cache: RevisionedCache["TenantRecord | None"] = RevisionedCache("tenant")


@dataclass(frozen=True)
class TenantRecord:
    """A tenant as the request path sees it. Shared between threads: never mutate it."""

    tenant: Tenant
    api_keys: dict[str, TenantApiKey] = field(default_factory=dict)  # prefix -> active key


def _tenant_record_load(slug: str) -> TenantRecord | None:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        return None
    keys = {k.prefix: k for k in TenantApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True)}
    return TenantRecord(tenant, keys)


def tenant_directory_get(slug: str, *, rev=MISSING) -> TenantRecord | None:
    """The tenant with this slug and its active API keys; None for an unknown slug.

    ``rev``: the tenant's revision if the caller already read it (``tenant_cache.rev_key``)."""
    if not isinstance(slug, str) or not slug or len(slug) > 50:
        return None
    return tenant_cache.get(slug, lambda: _tenant_record_load(slug), rev=rev)


def tenant_directory_peek(slug: str) -> TenantRecord | None:
    """This process's copy of the tenant, unchecked (None if it has none): the caller must
    confirm it with ``tenant_directory_get(slug, rev=...)`` before relying on it."""
    value = tenant_cache.peek(slug)
    return None if value is MISSING else value
