"""The per-tenant prefix-cache salt.

A model server reuses KV-cache blocks only between requests that carry the same
``cache_salt``. Salting per tenant closes the timing side channel (a fast first
token would reveal that another tenant recently sent the same prefix). The salt
is derived server side from a secret and the tenant slug, never taken from
client input, so nobody can pick another tenant's salt.
"""
from __future__ import annotations

import hashlib
import hmac

from django.conf import settings


def cache_salt(tenant_slug: str) -> str:
    """HMAC-SHA256(CACHE_SALT_SECRET, tenant_slug) as hex."""
    if not tenant_slug:
        raise ValueError("a cache salt needs a tenant slug")
    secret = settings.CACHE_SALT_SECRET.encode("utf-8")
    return hmac.new(secret, tenant_slug.encode("utf-8"), hashlib.sha256).hexdigest()
