"""Customer identity: API keys per tenant, signed customer tokens, and the rule that an
unauthenticated caller is anonymous whatever it claims."""
from __future__ import annotations

import io
import time

import pytest
from django.conf import settings
from django.core.management import call_command

from caching.models import AskEvent
from core.models import TenantApiKey
from supportbot import auth, pipeline
from tests.security.conftest import api_answer, api_post

GENERAL = {"question": "What is your return policy?"}


def test_keys_are_stored_hashed_and_checked_per_tenant(demo):
    acme, initech = demo["acme"], demo["initech"]
    row, raw = auth.api_key_create(acme, "shop")
    assert raw.startswith(f"ask_{row.prefix}_") and raw not in (row.key_hash, row.prefix)
    assert TenantApiKey.objects.get(pk=row.pk).key_hash == auth.key_hash(raw)
    assert auth.api_key_check(acme, raw) == row
    for tenant, candidate in ((initech, raw), (acme, raw[:-1] + ("A" if raw[-1] != "A" else "B")), (acme, "nope")):
        with pytest.raises(auth.AuthError):
            auth.api_key_check(tenant, candidate)
    auth.api_key_revoke(row.prefix)
    with pytest.raises(auth.AuthError):
        auth.api_key_check(acme, raw)


def test_customer_tokens_are_bound_to_tenant_and_expire(demo):
    acme, initech = demo["acme"], demo["initech"]
    token = auth.customer_token_issue(acme, "cust-1", 60)
    assert auth.customer_token_check(acme, token)[0] == "cust-1"
    with pytest.raises(auth.AuthError):
        auth.customer_token_check(initech, token)  # another tenant's key
    with pytest.raises(auth.AuthError) as err:
        auth.customer_token_check(acme, token, now=time.time() + 61)
    assert err.value.code == "expired_customer_token"
    version, body, mac = token.split(".")
    import base64
    import json

    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    forged_body = base64.urlsafe_b64encode(json.dumps(dict(claims, c="cust-2")).encode()).rstrip(b"=").decode()
    for forged in (f"{version}.{forged_body}.{mac}", f"v2.{body}.{mac}", token + "x", "a.b", "", "." * 3):
        with pytest.raises(auth.AuthError):
            auth.customer_token_check(acme, forged)
    assert auth.customer_token_issue(acme, "c", 10**9).count(".") == 2  # capped, not refused
    _, exp = auth.customer_token_check(acme, auth.customer_token_issue(acme, "c", 10**9))
    assert exp <= time.time() + settings.CUSTOMER_TOKEN_MAX_TTL_S + 5


@pytest.mark.parametrize("headers, body, status, code", [
    ({}, dict(GENERAL, customer="cust-1"), 401, "customer_requires_api_key"),
    ({"key": "ask_000000000000_" + "x" * 40}, GENERAL, 401, "invalid_api_key"),
    ({"raw_auth": "Basic dXNlcjpwYXNz"}, GENERAL, 401, "invalid_authorization"),
    ({"other_tenant_key": True}, dict(GENERAL, customer="cust-1"), 401, "invalid_api_key"),
    ({"token": "v1.e30.AAAA"}, GENERAL, 401, "invalid_customer_token"),
    ({"own_key": True}, dict(GENERAL, customer="bad id with spaces"), 400, "invalid_customer"),
    ({"own_key": True}, dict(GENERAL, customer=42), 400, "invalid_customer"),
    ({"own_key": True, "token_for": "cust-2"}, dict(GENERAL, customer="cust-1"), 400, "customer_mismatch"),
])
def test_bad_credentials_are_refused_and_nothing_is_stored(client, demo, keys, headers, body, status, code):
    kwargs = {}
    if headers.get("key"):
        kwargs["key"] = headers["key"]
    if headers.get("own_key"):
        kwargs["key"] = keys["acme"]
    if headers.get("other_tenant_key"):
        kwargs["key"] = keys["initech"]
    if headers.get("token"):
        kwargs["token"] = headers["token"]
    if headers.get("token_for"):
        kwargs["token"] = auth.customer_token_issue(demo["acme"], headers["token_for"])
    if headers.get("raw_auth"):
        kwargs["HTTP_AUTHORIZATION"] = headers["raw_auth"]
    response = api_post(client, "acme", body, **kwargs)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert AskEvent.objects.count() == 0


@pytest.mark.parametrize("how", ["key+customer", "token", "key+token"])
def test_authenticated_customers_are_recorded_under_their_reference(client, demo, keys, dead_model, how):
    acme = demo["acme"]
    token = auth.customer_token_issue(acme, "cust-7")
    kwargs = {"key": keys["acme"]} if "key" in how else {}
    body = dict(GENERAL, customer="cust-7") if "customer" in how else dict(GENERAL)
    if "token" in how:
        kwargs["token"] = token
    response = api_post(client, "acme", body, **kwargs)
    assert response.status_code in (200, 503), response.content
    event = AskEvent.objects.get(request_id=api_answer(response)["request_id"])
    assert event.scope == "customer"
    assert event.customer_ref == pipeline.customer_ref(pipeline.Asker(acme, "en", "cust-7"))
    assert "cust-7" not in event.customer_ref


def test_anonymous_api_caller_is_recorded_as_anonymous(client, demo, dead_model):
    response = api_post(client, "acme", GENERAL)
    event = AskEvent.objects.get(request_id=api_answer(response)["request_id"])
    assert (event.scope, event.customer_ref) == ("anonymous", "")


def test_customer_token_endpoint_needs_the_tenants_key(client, demo, keys):
    url = "/api/t/acme/customer-token"
    assert client.post(url, data={"customer": "c1"}, content_type="application/json").status_code == 401
    wrong = client.post(url, data={"customer": "c1"}, content_type="application/json",
                        HTTP_AUTHORIZATION=f"Bearer {keys['initech']}")
    assert wrong.status_code == 401
    ok = client.post(url, data={"customer": "c1", "ttl_s": 30}, content_type="application/json",
                     HTTP_AUTHORIZATION=f"Bearer {keys['acme']}")
    assert ok.status_code == 200
    assert auth.customer_token_check(demo["acme"], ok.json()["token"])[0] == "c1"
    assert ok.json()["expires_at"] <= time.time() + 31
    bad = client.post(url, data={"customer": ""}, content_type="application/json",
                      HTTP_AUTHORIZATION=f"Bearer {keys['acme']}")
    assert bad.status_code == 400


def test_chat_page_sign_in_sets_the_session_and_a_bad_token_signs_out(client, demo, dead_model):
    acme = demo["acme"]
    token = auth.customer_token_issue(acme, "cust-9")
    response = client.post("/t/acme/sign-in", {"customer_token": token, "locale": "de"})
    assert response.status_code == 303 and response["Location"] == "/t/acme/?locale=de"
    client.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en"})
    event = AskEvent.objects.latest("created_at")
    assert event.customer_ref == pipeline.customer_ref(pipeline.Asker(acme, "en", "cust-9"))
    # another tenant's page does not know this customer
    assert client.post("/t/initech/sign-in", {"customer_token": token}).status_code == 401
    client.post("/t/initech/ask", {"question": "What is your return policy?", "locale": "en"})
    assert AskEvent.objects.latest("created_at").scope == "anonymous"
    # a bad token for acme signs the customer out
    assert client.post("/t/acme/sign-in", {"customer_token": "garbage"}).status_code == 401
    client.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en"})
    assert AskEvent.objects.latest("created_at").scope == "anonymous"


def test_apikey_command_creates_lists_and_revokes(demo):
    out, err = io.StringIO(), io.StringIO()
    call_command("apikey", "create", "--tenant", "acme", "--name", "shop", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    row = auth.api_key_check(demo["acme"], raw)
    listing = io.StringIO()
    call_command("apikey", "list", "--tenant", "acme", stdout=listing)
    assert row.prefix in listing.getvalue() and raw not in listing.getvalue()
    call_command("apikey", "revoke", row.prefix, stdout=io.StringIO())
    with pytest.raises(auth.AuthError):
        auth.api_key_check(demo["acme"], raw)
