"""Rate limits per client and per tenant: a clear 429 with Retry-After, counted in Redis."""
from __future__ import annotations

import pytest

from supportbot.models import AskEvent
from tests.security.conftest import api_post

BODY = {"question": "What is your return policy?"}


@pytest.fixture
def limits(settings):
    settings.RATELIMIT_ENABLED = True
    settings.RATELIMIT_WINDOW_S = 3600  # fixed windows: a long one keeps a test from straddling two
    settings.RATELIMIT_CLIENT_REQUESTS = 3
    settings.RATELIMIT_TENANT_REQUESTS = 5
    return settings


def test_client_limit_is_a_clear_429_with_retry_after_and_stores_nothing(client, demo, limits, dead_model):
    for _ in range(3):
        assert api_post(client, "acme", BODY).status_code in (200, 503)
    stored = AskEvent.objects.count()
    response = api_post(client, "acme", BODY)
    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "rate_limited" and error["scope"] == "client"
    assert 1 <= int(response["Retry-After"]) <= 3600 and error["retry_after_s"] == int(response["Retry-After"])
    assert AskEvent.objects.count() == stored
    # another tenant is counted apart
    assert api_post(client, "initech", BODY).status_code in (200, 503)


def test_tenant_limit_holds_across_clients_and_keys_count_apart_from_addresses(client, demo, keys, limits,
                                                                              dead_model):
    statuses = []
    for i in range(4):  # four addresses, one request each
        statuses.append(api_post(client, "acme", BODY, REMOTE_ADDR=f"10.0.0.{i}").status_code)
    for _ in range(2):  # an API key is its own client
        statuses.append(api_post(client, "acme", BODY, key=keys["acme"]).status_code)
    assert statuses[:5].count(429) == 0 and statuses[5] == 429
    response = api_post(client, "acme", BODY, REMOTE_ADDR="10.0.0.99")
    assert response.status_code == 429 and response.json()["error"]["scope"] == "tenant"


def test_chat_form_is_limited_too(client, demo, limits, dead_model):
    for _ in range(3):
        assert client.post("/t/acme/ask", {"question": "hi there", "locale": "en"},
                           HTTP_HX_REQUEST="true").status_code in (200, 422)
    response = client.post("/t/acme/ask", {"question": "hi there", "locale": "en"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 429 and response["Retry-After"]
    assert b"Too many questions" in response.content


def test_failed_authentication_counts_against_the_address(client, demo, limits):
    bad = "ask_000000000000_" + "x" * 40
    codes = [api_post(client, "acme", BODY, key=bad).status_code for _ in range(4)]
    assert codes == [401, 401, 401, 429]


def test_forwarded_for_is_only_trusted_behind_configured_proxies(client, demo, limits, dead_model):
    limits.RATELIMIT_CLIENT_REQUESTS = 1
    # untrusted: a client cannot dodge its limit by inventing X-Forwarded-For addresses
    assert api_post(client, "acme", BODY, HTTP_X_FORWARDED_FOR="1.1.1.1").status_code != 429
    assert api_post(client, "acme", BODY, HTTP_X_FORWARDED_FOR="2.2.2.2").status_code == 429
    limits.RATELIMIT_TRUSTED_PROXY_HOPS = 1
    assert api_post(client, "acme", BODY, HTTP_X_FORWARDED_FOR="spoof, 3.3.3.3").status_code != 429
    assert api_post(client, "acme", BODY, HTTP_X_FORWARDED_FOR="spoof2, 3.3.3.3").status_code == 429
