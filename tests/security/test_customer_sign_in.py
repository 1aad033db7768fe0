"""Customer tokens never travel in a URL, and no other site can sign a visitor in (login CSRF).

The embedding flow: the tenant's backend mints a token with its API key, its page posts it to
``/t/<tenant>/sign-in`` from one of the tenant's ``embed_origins``; our own page may post it with
its CSRF token. A ``?customer_token=`` link is refused and changes nothing."""
from __future__ import annotations

import pytest
from django.test import Client

from caching.models import AskEvent
from core.models import Tenant
from supportbot import auth, pipeline
from tests.security.conftest import api_answer, api_post

SHOP = "https://shop.acme.example"
GENERAL = "What is your return policy?"


@pytest.fixture
def acme_shop(demo):
    acme = demo["acme"]
    Tenant.objects.filter(pk=acme.pk).update(embed_origins=[SHOP])
    acme.refresh_from_db()
    from supportbot.selectors import tenant_cache

    tenant_cache.bump(acme.pk)
    return acme


def _ask_scope(browser: Client, tenant: str = "acme") -> tuple[str, str]:
    """Who the chat page records the browser's next question as: (scope, customer_ref)."""
    browser.get(f"/t/{tenant}/")
    asked = browser.post(f"/t/{tenant}/ask", {"question": GENERAL, "locale": "en"},
                         HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert asked.status_code == 200
    event = AskEvent.objects.latest("created_at")
    return event.scope, event.customer_ref


def _browser() -> Client:
    """A browser that enforces CSRF like a real one, with the chat page's CSRF cookie."""
    browser = Client(enforce_csrf_checks=True)
    browser.get("/t/acme/")
    return browser


def test_a_token_in_the_address_is_refused_and_signs_nobody_in(acme_shop, dead_model):
    browser = _browser()
    token = auth.customer_token_issue(acme_shop, "attacker")
    response = browser.get(f"/t/acme/?customer_token={token}")
    assert response.status_code == 400
    assert response["Referrer-Policy"] == "no-referrer"
    assert "not accepted in the address" in response.content.decode()
    assert _ask_scope(browser) == ("anonymous", "")
    # a customer already signed in stays who they are: a link cannot switch them
    ok = browser.post("/t/acme/sign-in", {"customer_token": auth.customer_token_issue(acme_shop, "victim")},
                      HTTP_ORIGIN=SHOP)
    assert ok.status_code == 303
    browser.get(f"/t/acme/?customer_token={token}")
    assert _ask_scope(browser)[1] == pipeline.customer_ref(pipeline.Asker(acme_shop, "en", "victim"))


def test_the_tenants_site_signs_a_customer_in_by_post(acme_shop, dead_model):
    browser = Client(enforce_csrf_checks=True)  # arrives from the shop: no cookie of ours yet
    token = auth.customer_token_issue(acme_shop, "cust-5")
    response = browser.post("/t/acme/sign-in", {"customer_token": token, "locale": "de"}, HTTP_ORIGIN=SHOP)
    assert response.status_code == 303 and response["Location"] == "/t/acme/?locale=de"
    assert browser.get(response["Location"]).status_code == 200
    assert _ask_scope(browser) == ("customer", pipeline.customer_ref(pipeline.Asker(acme_shop, "en", "cust-5")))


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "https://shop.acme.example.evil.example",
                                    "http://shop.acme.example", None])
def test_a_post_from_any_other_site_is_refused_like_a_forged_form(acme_shop, dead_model, origin):
    browser = _browser()
    token = auth.customer_token_issue(acme_shop, "attacker")  # a real token of the attacker's own account
    extra = {"HTTP_ORIGIN": origin} if origin else {}
    response = browser.post("/t/acme/sign-in", {"customer_token": token}, **extra)
    assert response.status_code == 403
    assert _ask_scope(browser) == ("anonymous", "")


def test_one_tenants_site_cannot_sign_in_to_another_tenant(acme_shop, dead_model):
    browser = Client(enforce_csrf_checks=True)
    token = auth.customer_token_issue(Tenant.objects.get(slug="initech"), "cust-1")
    assert browser.post("/t/initech/sign-in", {"customer_token": token}, HTTP_ORIGIN=SHOP).status_code == 403


def test_our_own_page_signs_in_with_its_csrf_token(acme_shop, dead_model):
    browser = _browser()
    csrf = browser.cookies["csrftoken"].value
    token = auth.customer_token_issue(acme_shop, "cust-6")
    response = browser.post("/t/acme/sign-in", {"customer_token": token, "csrfmiddlewaretoken": csrf},
                            HTTP_ORIGIN="http://testserver")
    assert response.status_code == 303
    assert _ask_scope(browser)[0] == "customer"


def test_bad_expired_and_used_tokens_are_refused_and_sign_out(acme_shop, dead_model):
    browser = Client(enforce_csrf_checks=True)
    once = auth.customer_token_issue(acme_shop, "cust-7", single_use=True)
    assert browser.post("/t/acme/sign-in", {"customer_token": once}, HTTP_ORIGIN=SHOP).status_code == 303
    assert _ask_scope(browser)[0] == "customer"
    replay = browser.post("/t/acme/sign-in", {"customer_token": once}, HTTP_ORIGIN=SHOP)
    assert replay.status_code == 401 and "already used" in replay.content.decode()
    assert _ask_scope(browser) == ("anonymous", "")  # a refused token signs the customer out
    expired = auth.customer_token_issue(acme_shop, "cust-7", 1, now=1_000_000)
    for bad in (expired, "garbage", ""):
        assert browser.post("/t/acme/sign-in", {"customer_token": bad}, HTTP_ORIGIN=SHOP).status_code == 401


def test_tokens_are_short_lived_by_default(acme_shop, settings):
    import time

    _, exp = auth.customer_token_check(acme_shop, auth.customer_token_issue(acme_shop, "c"))
    assert exp <= time.time() + settings.CUSTOMER_TOKEN_TTL_S + 1 and settings.CUSTOMER_TOKEN_TTL_S <= 300
    _, capped = auth.customer_token_check(acme_shop, auth.customer_token_issue(acme_shop, "c", 10**9))
    assert capped <= time.time() + settings.CUSTOMER_TOKEN_MAX_TTL_S + 1


def test_single_use_tokens_on_the_api(client, acme_shop, keys, dead_model):
    minted = client.post("/api/t/acme/customer-token", data={"customer": "c1", "single_use": True},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {keys['acme']}")
    assert minted.status_code == 200 and minted.json()["single_use"] is True
    token = minted.json()["token"]
    first = api_answer(api_post(client, "acme", {"question": "Where is my order AO-123456?"}, token=token))
    assert AskEvent.objects.get(request_id=first["request_id"]).scope == "customer"
    again = api_post(client, "acme", {"question": "Where is my order AO-123456?"}, token=token)
    assert again.status_code == 401 and again.json()["error"]["code"] == "used_customer_token"
    # a reusable token stays reusable; nonsense in the mint request is refused
    reusable = auth.customer_token_issue(acme_shop, "c2")
    for _ in range(2):
        assert api_post(client, "acme", {"question": GENERAL}, token=reusable).status_code in (200, 503)
    bad = client.post("/api/t/acme/customer-token", data={"customer": "c1", "single_use": "yes"},
                      content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {keys['acme']}")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_single_use"


def test_single_use_tokens_are_refused_while_redis_is_down(acme_shop, own_redis, dead_model):
    own_redis.kill()
    once = auth.customer_token_issue(acme_shop, "cust-8", single_use=True)
    with pytest.raises(auth.AuthError) as err:
        auth.customer_token_redeem(acme_shop, once)
    assert err.value.status == 503
    # an ordinary token needs no Redis
    assert auth.customer_token_redeem(acme_shop, auth.customer_token_issue(acme_shop, "cust-8"))[0] == "cust-8"


def test_embed_origins_are_validated(acme):
    from django.core.exceptions import ValidationError

    for bad in ("shop.acme.example", "https://shop.acme.example/path", "https://Shop.example", "ftp://x.example",
                "https://user@shop.example"):
        acme.embed_origins = [bad]
        with pytest.raises(ValidationError):
            acme.full_clean()
    acme.embed_origins = ["https://shop.acme.example", "http://localhost:3000"]
    acme.full_clean()
