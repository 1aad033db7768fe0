"""Who is asking: per-tenant API keys and signed customer tokens.

The pipeline takes ``Asker(tenant, locale, customer)``; ``customer`` is an
authenticated customer id or None. This module is the only place a customer id
becomes trusted, so the rule is stated once:

* **Anonymous by default.** A request with no credentials is anonymous. A
  ``"customer"`` field without a valid API key is rejected with 401
  (``customer_requires_api_key``) rather than silently ignored, so an integrator
  who forgot the key notices at once instead of leaking personal questions into
  anonymous traffic.
* **API key** (``Authorization: Bearer ask_<prefix>_<secret>``): a tenant's
  server-to-server credential, valid for that tenant only. A key-holding caller
  may name the customer it acts for (``"customer"``), since the tenant's own
  backend authenticated that customer. A wrong, revoked or other tenant's key is
  401, never a downgrade to anonymous.
* **Customer token** (``X-Customer-Token`` on the API; on the chat page, POSTed once
  to ``/t/<tenant>/sign-in``, which keeps the customer in the server-side session):
  ``v1.<claims>.<mac>`` with claims ``{"t": tenant, "c": customer, "exp": unix time}``
  and, for a single-use token, ``"j": <random id>``; HMAC-SHA256 under a per-tenant key
  derived from ``SECRET_KEY``. The tenant's backend mints one with its API key
  (``POST /api/t/<tenant>/customer-token``) and hands it to the customer's browser.
  Tokens are bound to one tenant and short-lived (``CUSTOMER_TOKEN_TTL_S``); an
  invalid one is 401. A single-use token's id is remembered in Redis until it expires,
  so it is accepted once. A token is never accepted in a URL: an address ends up in
  access logs, browser history and Referer headers, and a link that signs a browser in
  lets anyone sign a victim in as themselves (login CSRF).

Keys are stored as SHA-256 hashes (a key is 32 random bytes, so a slow hash adds
nothing) and compared in constant time.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.models import ApiKeyScope, Tenant, TenantApiKey, api_key_default_scopes
from core.redis_client import get_redis, mark_redis_down
from supportbot.selectors import tenant_cache

KEY_PREFIX = "ask"
TOKEN_VERSION = "v1"
CUSTOMER_ID_MAX = 128
# Printable, no whitespace or control characters; covers e-mail-like, numeric and uuid ids.
_CUSTOMER_ID = re.compile(r"^[A-Za-z0-9._:@+\-]{1,%d}$" % CUSTOMER_ID_MAX)
_KEY = re.compile(r"^ask_([A-Za-z0-9]{12})_([A-Za-z0-9_\-]{20,100})$")


class AuthError(Exception):
    """The caller's credentials are not acceptable: 401 (or 400 for malformed input)."""

    def __init__(self, code: str, message: str, status: int = 401):
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


@dataclass(frozen=True)
class Caller:
    """The authenticated view of a request: the customer id (None: anonymous) and the client key
    used for rate limits (the API key prefix, else the network address)."""

    customer: str | None
    api_key: TenantApiKey | None = None

    @property
    def authenticated(self) -> bool:
        return self.api_key is not None


# --------------------------------------------------------------------------- API keys

def key_hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


@transaction.atomic
def api_key_create(tenant: Tenant, name: str, *, timing_breakdown: bool = False,
                   scopes: list[str] | None = None) -> tuple[TenantApiKey, str]:
    """A new key for ``tenant``; the raw key is returned once and never stored. ``scopes``: what it may
    do (default ``api_key_default_scopes``); ``timing_breakdown`` adds the ``timings`` scope (answers to
    this key carry the per-step timings, staff tooling only)."""
    scopes = list(api_key_default_scopes() if scopes is None else scopes)
    unknown = set(scopes) - set(ApiKeyScope.values)
    if unknown:
        raise ValueError(f"unknown API key scopes {sorted(unknown)}; choose from {ApiKeyScope.values}")
    if timing_breakdown and ApiKeyScope.TIMINGS not in scopes:
        scopes.append(ApiKeyScope.TIMINGS.value)
    prefix = secrets.token_hex(6)  # 12 hex chars: unique index, shown in the admin
    raw = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    row = TenantApiKey.objects.create(tenant=tenant, name=name[:100], prefix=prefix, key_hash=key_hash(raw),
                                      scopes=scopes)
    return row, raw


@transaction.atomic
def api_key_revoke(prefix: str) -> int:
    """Revoke a key; every process refuses it from its next request on (the tenant's revision is bumped)."""
    rows = list(TenantApiKey.objects.select_for_update().select_related("tenant")
                .filter(prefix=prefix, revoked_at__isnull=True))
    TenantApiKey.objects.filter(pk__in=[r.pk for r in rows]).update(revoked_at=timezone.now())
    for row in rows:
        tenant_cache.bump(row.tenant_id)
    return len(rows)


def api_key_check(tenant: Tenant, raw_key: str, active_keys: dict[str, TenantApiKey] | None = None) -> TenantApiKey:
    """The active key row of ``tenant`` matching ``raw_key``; AuthError otherwise.

    ``active_keys``: the tenant's active keys by prefix (``selectors.TenantEntry``); read from
    the database without it."""
    match = _KEY.match(raw_key or "")
    if not match:
        raise AuthError("invalid_api_key", "the API key is malformed")
    if active_keys is None:
        row = TenantApiKey.objects.filter(prefix=match.group(1), tenant=tenant, revoked_at__isnull=True).first()
    else:
        row = active_keys.get(match.group(1))
    # Compare the hash even when no row matched, so a wrong prefix costs the same time as a wrong secret.
    expected = row.key_hash if row is not None else "0" * 64
    valid = hmac.compare_digest(expected, key_hash(raw_key))
    if row is None or not valid or row.revoked_at is not None or row.tenant_id != tenant.pk:
        raise AuthError("invalid_api_key", "the API key is not valid for this tenant")
    return row


def bearer_token(request) -> str | None:
    """The raw bearer credential, None without an Authorization header."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise AuthError("invalid_authorization", "use 'Authorization: Bearer <api key>'")
    return value.strip()


# --------------------------------------------------------------------------- customer tokens

def _tenant_token_key(tenant_slug: str) -> bytes:
    """A per-tenant signing key derived from SECRET_KEY: a token of one tenant never verifies for another."""
    return hmac.new(settings.SECRET_KEY.encode("utf-8"), f"customer-token:{tenant_slug}".encode("utf-8"),
                    hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def customer_id_clean(value) -> str:
    if not isinstance(value, str) or not _CUSTOMER_ID.match(value):
        raise AuthError("invalid_customer", f"customer must be 1-{CUSTOMER_ID_MAX} characters of letters, digits "
                        "and . _ : @ + -", status=400)
    return value


def customer_token_issue(tenant: Tenant, customer: str, ttl_s: int | None = None, *, single_use: bool = False,
                         now: float | None = None) -> str:
    """A token naming ``customer`` of ``tenant``; ``single_use``: accepted once (``customer_token_redeem``)."""
    ttl = settings.CUSTOMER_TOKEN_TTL_S if ttl_s is None else int(ttl_s)
    ttl = max(1, min(ttl, settings.CUSTOMER_TOKEN_MAX_TTL_S))
    claims = {"c": customer_id_clean(customer), "exp": int((now or time.time()) + ttl), "t": tenant.slug}
    if single_use:
        claims["j"] = secrets.token_urlsafe(16)
    body = _b64(json.dumps(claims, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    mac = hmac.new(_tenant_token_key(tenant.slug), f"{TOKEN_VERSION}.{body}".encode("ascii"), hashlib.sha256)
    return f"{TOKEN_VERSION}.{body}.{_b64(mac.digest())}"


def customer_token_check(tenant: Tenant, token: str, *, now: float | None = None) -> tuple[str, int]:
    """(customer id, expiry) of a valid token for ``tenant``; AuthError otherwise. Reads nothing:
    a request that acts on a token redeems it (``customer_token_redeem``)."""
    return _customer_token_claims(tenant, token, now=now)[:2]


def _customer_token_claims(tenant: Tenant, token: str, *, now: float | None = None) -> tuple[str, int, str | None]:
    """(customer id, expiry, single-use id or None) of a valid token for ``tenant``."""
    if not isinstance(token, str) or len(token) > 1024 or token.count(".") != 2:
        raise AuthError("invalid_customer_token", "the customer token is malformed")
    version, body, mac = token.split(".")
    if version != TOKEN_VERSION:
        raise AuthError("invalid_customer_token", "the customer token is malformed")
    expected = hmac.new(_tenant_token_key(tenant.slug), f"{version}.{body}".encode("ascii", "replace"),
                        hashlib.sha256).digest()
    try:
        given = _unb64(mac)
        claims = json.loads(_unb64(body))
    except (ValueError, UnicodeDecodeError):
        raise AuthError("invalid_customer_token", "the customer token is malformed") from None
    if not hmac.compare_digest(expected, given):
        raise AuthError("invalid_customer_token", "the customer token is not valid for this tenant")
    if not isinstance(claims, dict) or claims.get("t") != tenant.slug or not isinstance(claims.get("exp"), int):
        raise AuthError("invalid_customer_token", "the customer token is not valid for this tenant")
    if claims["exp"] <= (now or time.time()):
        raise AuthError("expired_customer_token", "the customer token has expired")
    jti = claims.get("j")
    if jti is not None and (not isinstance(jti, str) or not 1 <= len(jti) <= 64):
        raise AuthError("invalid_customer_token", "the customer token is malformed")
    return customer_id_clean(claims.get("c")), claims["exp"], jti


def _used_token_key(tenant: Tenant, jti: str) -> str:
    return f"ctok:used:{tenant.slug}:{jti}"


def customer_token_redeem(tenant: Tenant, token: str) -> tuple[str, int]:
    """``customer_token_check``, and a single-use token is spent: its id is remembered in Redis
    until the token expires, and a second use is 401 ``used_customer_token``. While Redis is
    unavailable a single-use token cannot be checked and is refused (503): accepting it could
    accept it twice. Tokens without an id are not looked up."""
    customer, exp, jti = _customer_token_claims(tenant, token)
    if jti is None:
        return customer, exp
    try:
        first = get_redis().set(_used_token_key(tenant, jti), 1, nx=True, exat=exp)
    except Exception:  # noqa: BLE001 - fail closed: a cluster error, a timeout, anything but a clear answer
        mark_redis_down()
        raise AuthError("customer_token_unverifiable", "single-use customer tokens cannot be checked right now; "
                        "try again shortly", status=503) from None
    if not first:
        raise AuthError("used_customer_token", "this single-use customer token was already used")
    return customer, exp


# --------------------------------------------------------------------------- the API's rule

def api_key_from_request(request, tenant: Tenant, active_keys: dict[str, TenantApiKey] | None = None
                         ) -> TenantApiKey | None:
    """The request's valid API key for ``tenant``; None without one; AuthError for a bad one."""
    raw_key = bearer_token(request)
    return api_key_check(tenant, raw_key, active_keys) if raw_key is not None else None


def api_caller(request, tenant: Tenant, key: TenantApiKey | None, claimed_customer=None) -> Caller:
    """Apply the module's rule to an API request. ``claimed_customer`` is the body's ``customer`` field."""
    token = request.META.get("HTTP_X_CUSTOMER_TOKEN")
    from_token = customer_token_redeem(tenant, token)[0] if token else None
    if claimed_customer is not None:
        if key is None:
            raise AuthError("customer_requires_api_key",
                            "a customer field needs the tenant's API key (Authorization: Bearer ...); "
                            "without one, send X-Customer-Token or ask anonymously")
        claimed = customer_id_clean(claimed_customer)
        if from_token is not None and from_token != claimed:
            raise AuthError("customer_mismatch", "customer and X-Customer-Token name different customers", 400)
        return Caller(customer=claimed, api_key=key)
    return Caller(customer=from_token, api_key=key)


SESSION_KEY = "customer_identity"


def session_customer(request, tenant: Tenant) -> str | None:
    """The chat page's signed-in customer for ``tenant`` (set by ``session_sign_in``) as their pseudonym
    (``customer_ref``: the session store never holds a customer id), None when absent or expired."""
    item = request.session.get(SESSION_KEY, {}).get(tenant.slug)
    if not item or item.get("exp", 0) <= time.time():
        return None
    return item.get("ref")  # a session signed in before the pseudonym (item "customer") is signed out


def session_sign_in(request, tenant: Tenant, token: str, pseudonym) -> str:
    """Redeem a customer token and remember the customer for this tenant's chat page for
    ``CUSTOMER_SESSION_TTL_S`` as ``pseudonym(customer id)`` (their ``customer_ref``), which it returns
    (AuthError if the token is not acceptable). The caller has checked where the token came from
    (``embed_origin_allowed`` or the CSRF token of our own form)."""
    try:
        customer, _ = customer_token_redeem(tenant, token)
    except AuthError:
        session_sign_out(request, tenant)
        raise
    exp = int(time.time()) + settings.CUSTOMER_SESSION_TTL_S
    ref = pseudonym(customer)
    identities = dict(request.session.get(SESSION_KEY, {}))
    if identities.get(tenant.slug, {}).get("ref") != ref:
        request.session.cycle_key()  # a new identity gets a new session id: no fixation
    identities[tenant.slug] = {"ref": ref, "exp": exp}
    request.session[SESSION_KEY] = identities
    return ref


def embed_origin_allowed(request, tenant: Tenant) -> bool:
    """True when the request's ``Origin`` is one of the tenant's own sites (``Tenant.embed_origins``):
    the customer's browser posts the token its backend minted, from the tenant's page. Browsers
    send ``Origin`` on every cross-site POST and scripts cannot forge it, so a page elsewhere
    cannot sign a visitor in as someone else."""
    origin = request.META.get("HTTP_ORIGIN", "")
    return bool(origin) and origin in (tenant.embed_origins or [])


def session_sign_out(request, tenant: Tenant) -> None:
    identities = dict(request.session.get(SESSION_KEY, {}))
    if identities.pop(tenant.slug, None) is not None:
        request.session[SESSION_KEY] = identities
