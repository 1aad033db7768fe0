"""Reads of tenants for the request path, from the process-local revisioned cache.

Every API request needs its tenant row and, with an ``Authorization`` header, the tenant's
API keys. ``tenant_directory_get`` serves both from ``core.localcache`` so a cache hit
makes no database query; any save of a tenant or of one of its keys (``supportbot.receivers``)
bumps the tenant's revision, so a policy-version bump, a mode switch or a revoked key takes
effect on the next request in every process."""
from __future__ import annotations

from dataclasses import dataclass, field

from core.localcache import MISSING, LocalCache, RevisionedCache
from core.models import Tenant, TenantApiKey

tenant_cache: RevisionedCache["TenantEntry | None"] = RevisionedCache("tenant")


@dataclass(frozen=True)
class TenantEntry:
    """The tenant directory's entry: a tenant as the request path sees it. Shared between threads: never mutate it."""

    tenant: Tenant
    api_keys: dict[str, TenantApiKey] = field(default_factory=dict)  # prefix -> active key


def _tenant_entry_load(tenant_id: int) -> TenantEntry | None:
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return None
    keys = {k.prefix: k for k in TenantApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True)}
    return TenantEntry(tenant, keys)


# The cache is scoped by tenant id (its revision carries the tenant's hash tag); requests name the
# slug. A slug's id is remembered here and checked against the entry found under it: a renamed or
# deleted tenant bumps its own revision, its entry then no longer carries the slug, and the slug
# is resolved again.
_slug_ids: LocalCache[int] = LocalCache("tenant slugs", max_entries=tenant_cache.max_entries)


def _slug_id(slug: str) -> int | None:
    tenant_id = _slug_ids.lookup(slug)
    if tenant_id is MISSING:
        tenant_id = Tenant.objects.filter(slug=slug).values_list("pk", flat=True).first()
        if tenant_id is not None:  # an unknown slug is not kept: a flood of made-up names fills nothing
            _slug_ids.put(slug, tenant_id)
    return tenant_id


def tenant_directory_get(slug: str, *, rev=MISSING) -> TenantEntry | None:
    """The tenant with this slug and its active API keys; None for an unknown slug.

    ``rev``: the revision of the tenant ``tenant_directory_peek`` returned, if the caller already
    read it (``tenant_cache.rev_key(tenant.pk)``)."""
    if not isinstance(slug, str) or not slug or len(slug) > 50:
        return None
    for _ in range(2):
        tenant_id = _slug_id(slug)
        if tenant_id is None:
            return None
        entry = tenant_cache.get(tenant_id, lambda: _tenant_entry_load(tenant_id), rev=rev)
        if entry is not None and entry.tenant.slug == slug:
            return entry
        _slug_ids.forget(slug)  # renamed or deleted: the slug may name another tenant now
        rev = MISSING
    return None


def tenant_directory_peek(slug: str) -> TenantEntry | None:
    """This process's copy of the tenant, unchecked (None if it has none): the caller must
    confirm it with ``tenant_directory_get(slug, rev=...)`` before relying on it."""
    tenant_id = _slug_ids.lookup(slug)
    value = tenant_cache.peek(tenant_id) if tenant_id is not MISSING else MISSING
    return None if value is MISSING or value is None or value.tenant.slug != slug else value
