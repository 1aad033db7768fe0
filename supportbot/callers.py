"""Who is asking: one service call per request resolves the tenant, the caller (API key, customer
token, or the chat page's session) and the rate limit, and returns what the view needs to ask (an
``Admitted`` with its ``pipeline.Asker``) or a ``Refusal`` to render. The views parse, call this,
ask, and render: ``api_asker``/``api_caller`` for the JSON API, ``chat_asker``, ``chat_sign_in``
and ``chat_pending_take`` for the chat page (its pending questions live in the session).

The rate limiter's round trip also reads the tenant's revision and, for the Ask API, the exact
cache's keys of the question (``read_along``), so an exact hit costs one Redis round trip: a
process that has the tenant already works from its copy; if the copy was stale, the key is
checked again against the current row before anything else happens.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from core.localcache import MISSING
from core.models import Tenant, TenantApiKey
from supportbot import auth, chat_thread, ratelimit
from supportbot.pipeline import Asker, customer_ref
from supportbot.questions import AskRejected
from supportbot.selectors import tenant_cache, tenant_directory_get, tenant_directory_peek


@dataclass(frozen=True)
class Refusal:
    """Why the request stops here: a 4xx with a code and a message (``retry_after_s`` on a 429)."""

    code: str
    message: str
    status: int
    extra: dict = field(default_factory=dict)
    retry_after_s: int | None = None
    tenant: Tenant | None = None  # when it was known: the chat page renders the tenant's own page


@dataclass(frozen=True)
class Admitted:
    """The request may go on: who asks (``asker``; None until the body named a locale and customer),
    with which key, and the values read along with the rate limits (None when they were not read)."""

    tenant: Tenant
    key: TenantApiKey | None
    read: dict | None = None
    asker: Asker | None = None

    @property
    def timing_breakdown(self) -> bool:
        return self.key is not None and self.key.timing_breakdown


def locale_for(tenant: Tenant, value) -> str:
    """The requested locale, or the tenant's default; AskRejected for one the tenant does not have."""
    if value in (None, ""):
        return tenant.default_locale
    if not isinstance(value, str) or value not in tenant.locales:
        raise AskRejected("unknown_locale", f"locale must be one of {sorted(tenant.locales)}")
    return value


def locale_or_default(tenant: Tenant, value) -> str:
    """The requested locale, or the tenant's default for a missing or unknown one (pages, not questions)."""
    try:
        return locale_for(tenant, value)
    except AskRejected:
        return tenant.default_locale


def rate_limit_refusal(verdict: ratelimit.Verdict, tenant: Tenant | None = None) -> Refusal | None:
    if verdict.allowed:
        return None
    return Refusal("rate_limited", f"Too many questions; please wait {verdict.retry_after_s} seconds and try again.",
                   429, {"scope": verdict.scope, "retry_after_s": verdict.retry_after_s}, verdict.retry_after_s,
                   tenant)


UNKNOWN_TENANT = Refusal("unknown_tenant", "no such tenant", 404)


def api_caller(request, tenant_slug: str, *, key_required: bool = False,
               read_along: Callable[[object], tuple] | None = None, action: str = "ask",
               scope: str = "ask") -> Admitted | Refusal:
    """The tenant, the caller's API key (if any) and the rate limits of an API request. A key without
    ``scope`` (``TenantApiKey.scopes``) is refused with 403 ``api_key_scope``.
    ``read_along(entry) -> keys``: Redis keys the view will read under that tenant copy, read in
    the same round trip (their values in ``Admitted.read``)."""
    copy = tenant_directory_peek(tenant_slug)
    if copy is not None:
        key, refused = _api_key(request, copy, key_required, scope)
        if refused is None:
            extra = tuple(read_along(copy)) if read_along is not None else ()
            verdict = ratelimit.check(copy.tenant.pk, _rate_client(request, copy.tenant, key), action=action,
                                      read=(tenant_cache.rev_key(copy.tenant.pk), *extra))
            current = tenant_directory_get(tenant_slug, rev=verdict.read[0] if verdict.read is not None else MISSING)
            if current is copy:
                values = dict(zip(extra, verdict.read[1:])) if verdict.read is not None else None
                return rate_limit_refusal(verdict) or Admitted(copy.tenant, key, values)
            if current is None:
                return UNKNOWN_TENANT
            if not verdict.allowed:
                return rate_limit_refusal(verdict)
            key, refused = _api_key(request, current, key_required, scope)  # counted once already
            if refused is None:
                return Admitted(current.tenant, key)
            return _refused_key(request, current.tenant, refused, action)
    # no copy here, or the copy refused the key: decide on the current row
    entry = tenant_directory_get(tenant_slug)
    if entry is None:
        return UNKNOWN_TENANT
    key, refused = _api_key(request, entry, key_required, scope)
    if refused is not None:
        return _refused_key(request, entry.tenant, refused, action)
    verdict = ratelimit.check(entry.tenant.pk, _rate_client(request, entry.tenant, key), action=action)
    return rate_limit_refusal(verdict) or Admitted(entry.tenant, key)


def api_asker(request, tenant_slug: str, body: Callable[[], dict], *,
              read_along: Callable[[object], tuple] | None = None) -> Admitted | Refusal:
    """``api_caller``, then who asks: the body's locale and customer (its ``customer`` field with the
    tenant's API key, or a customer token), checked. ``body()`` parses the request body (AskRejected
    on bad input)."""
    admitted = api_caller(request, tenant_slug, read_along=read_along)
    if isinstance(admitted, Refusal):
        return admitted
    try:
        fields = body()
        caller = auth.api_caller(request, admitted.tenant, admitted.key, fields.get("customer"))
        asker = Asker(admitted.tenant, locale_for(admitted.tenant, fields.get("locale")), caller.customer,
                      ratelimit.client_key(request, admitted.key, customer=caller.customer))
    except (AskRejected, auth.AuthError) as exc:
        return Refusal(exc.code, exc.message, exc.status)
    return Admitted(admitted.tenant, admitted.key, admitted.read, asker)


# --------------------------------------------------------------------------- the chat page

PENDING_KEY = "pending_asks"  # session: ask id -> the question waiting for its stream, and who asked it
MAX_PENDING = 5


def chat_asker(request, tenant_slug: str, locale=None, *, action: str = "ask") -> Admitted | Refusal:
    """Who asks on the chat page: the tenant, the customer its session signed in
    (``auth.session_customer``; None: anonymous), counted against the rate limits of ``action``
    (``"ask"`` or ``"feedback"``; the customer's budget, else the address's), and the locale.
    Refusals: unknown tenant (404), rate limited (429), unknown locale (400)."""
    entry = tenant_directory_get(tenant_slug)
    if entry is None:
        return UNKNOWN_TENANT
    tenant = entry.tenant
    customer = auth.session_customer(request, tenant)
    client = ratelimit.client_key(request, customer=customer)
    verdict = ratelimit.check(tenant.pk, client, action=action)
    refused = rate_limit_refusal(verdict, tenant)
    if refused is not None:
        return refused
    try:
        locale = locale_for(tenant, locale)
    except AskRejected as exc:
        return Refusal(exc.code, exc.message, exc.status, tenant=tenant)
    return Admitted(tenant, None, asker=Asker(tenant, locale, customer, client, ref=customer or ""))


def chat_sign_in(request, tenant: Tenant, token: str, locale=None) -> Admitted | Refusal:
    """Sign the chat page's session in as the customer a token names (the view has checked where
    the post came from). Counted against the address; the session's pending questions are dropped
    (they were asked as someone else), and a refused token signs the session out. Refusals: rate
    limited (429), the token's AuthError (401, or 503 while a single-use token cannot be checked)."""
    verdict = ratelimit.check(tenant.pk, ratelimit.client_key(request))
    refused = rate_limit_refusal(verdict, tenant)
    if refused is not None:
        return refused
    request.session.pop(PENDING_KEY, None)
    chat_thread.thread_clear(request)  # the thread was asked as someone else
    try:
        ref = auth.session_sign_in(request, tenant, token,
                                   lambda customer: customer_ref(Asker(tenant, tenant.default_locale, customer)))
    except auth.AuthError as exc:
        return Refusal(exc.code, exc.message, exc.status, tenant=tenant)
    return Admitted(tenant, None, asker=Asker(tenant, locale_or_default(tenant, locale), ref, ref=ref))


def chat_pending_add(request, asker: Asker, question: str) -> str:
    """Keep a question for its stream (``chat_pending_take``); the session holds the newest few."""
    ask_id = secrets.token_urlsafe(12)
    pending = request.session.get(PENDING_KEY, {})
    pending = dict(list(pending.items())[-(MAX_PENDING - 1):])
    pending[ask_id] = {"tenant": asker.tenant.slug, "locale": asker.locale, "question": question,
                       "ref": asker.ref}  # the customer's pseudonym, never their id
    request.session[PENDING_KEY] = pending
    return ask_id


def chat_pending_take(request, tenant_slug: str, ask_id: str) -> tuple[Asker, str] | Refusal:
    """Who asked the session's pending question ``ask_id``, and the question; taken, so it streams
    once. Refusals (404): unknown tenant; no such question in this session for this tenant."""
    entry = tenant_directory_get(tenant_slug)
    if entry is None:
        return UNKNOWN_TENANT
    tenant = entry.tenant
    pending = dict(request.session.get(PENDING_KEY, {}))
    item = pending.pop(ask_id, None)
    if item is None or item["tenant"] != tenant.slug or "ref" not in item:  # no "ref": kept before pseudonyms
        return Refusal("unknown_question", "no such question", 404, tenant=tenant)
    request.session[PENDING_KEY] = pending
    ref = item["ref"] or None
    return Asker(tenant, item["locale"], ref, ratelimit.client_key(request, customer=ref), ref=ref or ""), item["question"]


# --------------------------------------------------------------------------- helpers

def _api_key(request, entry, key_required: bool, scope: str):
    """(the request's valid API key or None, None), or (None, the AuthError)."""
    try:
        key = auth.api_key_from_request(request, entry.tenant, entry.api_keys)
        if key is None and key_required:
            raise auth.AuthError("api_key_required", "send the tenant's API key (Authorization: Bearer ...)")
        if key is not None and not key.allows(scope):
            raise auth.AuthError("api_key_scope", f"this API key may not do this (it lacks the {scope!r} scope)", 403)
    except auth.AuthError as exc:
        return None, exc
    return key, None


def _refused_key(request, tenant: Tenant, refused: auth.AuthError, action: str) -> Refusal:
    """A refused key: failed attempts count against the address."""
    verdict = ratelimit.check(tenant.pk, ratelimit.client_key(request), action=action)
    return rate_limit_refusal(verdict) or Refusal(refused.code, refused.message, refused.status)


def _rate_client(request, tenant: Tenant, key) -> str:
    """The API caller as the rate limiter counts it: the key, else the customer of a valid token
    (checked again, and redeemed, once the request is let through), else the address."""
    token = request.META.get("HTTP_X_CUSTOMER_TOKEN") if key is None else None
    customer = None
    if token:
        try:
            customer = auth.customer_token_check(tenant, token)[0]
        except auth.AuthError:
            pass  # refused after the limiter, counted against the address
    return ratelimit.client_key(request, key, customer=customer)
