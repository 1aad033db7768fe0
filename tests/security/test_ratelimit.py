"""Rate limits per client and per tenant: a clear 429 with Retry-After, counted in Redis."""
from __future__ import annotations

import threading

import pytest

from caching.models import AskEvent
from tests.security.conftest import api_post

BODY = {"question": "What is your return policy?"}


@pytest.fixture
def limits(settings):
    settings.RATELIMIT_ENABLED = True
    settings.RATELIMIT_WINDOW_S = 3600  # fixed windows: a long one keeps a test from straddling two
    settings.RATELIMIT_CLIENT_REQUESTS = 3
    settings.RATELIMIT_TENANT_REQUESTS = 5
    return settings


@pytest.mark.redis_cluster
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


@pytest.mark.redis_cluster
def test_tenant_ceiling_holds_across_addresses_and_an_api_key_keeps_its_own_budget(client, demo, keys, limits,
                                                                                  dead_model):
    limits.RATELIMIT_API_KEY_REQUESTS = 2
    statuses = [api_post(client, "acme", BODY, REMOTE_ADDR=f"10.0.0.{i}").status_code for i in range(5)]
    assert 429 not in statuses  # five addresses, one request each: the tenant's public ceiling is full
    response = api_post(client, "acme", BODY, REMOTE_ADDR="10.0.0.99")
    assert response.status_code == 429 and response.json()["error"]["scope"] == "tenant"
    # the tenant's backend is not locked out by anonymous traffic, and is held to its own budget
    assert [api_post(client, "acme", BODY, key=keys["acme"]).status_code in (200, 503) for _ in range(2)] == [True] * 2
    over = api_post(client, "acme", BODY, key=keys["acme"])
    assert over.status_code == 429 and over.json()["error"]["scope"] == "client"
    # another tenant's ceiling is its own
    assert api_post(client, "initech", BODY, REMOTE_ADDR="10.0.0.99").status_code in (200, 503)


def test_ipv6_addresses_count_by_their_64_network(client, demo, limits, dead_model):
    limits.RATELIMIT_TENANT_REQUESTS = 1000
    same_64 = [f"2001:db8:1:2::{i:x}" for i in range(1, 21)]  # 20 addresses of one subscriber
    statuses = [api_post(client, "acme", BODY, REMOTE_ADDR=a).status_code for a in same_64]
    assert statuses[:3].count(429) == 0 and set(statuses[3:]) == {429}
    other_64 = api_post(client, "acme", BODY, REMOTE_ADDR="2001:db8:1:3::1")
    assert other_64.status_code in (200, 503)  # a neighbour's network is not punished
    from django.test import RequestFactory

    from supportbot import ratelimit

    for address, network in (("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
                             ("::ffff:192.0.2.7", "192.0.2.7"), ("192.0.2.7", "192.0.2.7"), ("junk", "junk")):
        assert ratelimit.client_address(RequestFactory().get("/", REMOTE_ADDR=address)) == network


def test_signed_in_customers_behind_one_address_each_have_their_own_budget(client, demo, limits, dead_model):
    from supportbot.auth import customer_token_issue

    limits.RATELIMIT_TENANT_REQUESTS = 1000
    acme = demo["acme"]
    for customer in ("cust-a", "cust-b"):  # one office, one address, two customers
        token = customer_token_issue(acme, customer)
        codes = [api_post(client, "acme", BODY, token=token).status_code for _ in range(4)]
        assert codes[:3].count(429) == 0 and codes[3] == 429, customer
    # an invalid token is refused, counted against the address (which the customers did not use)
    assert api_post(client, "acme", BODY, token="v1.e30.AAAA").status_code == 401


@pytest.mark.redis_cluster
def test_feedback_has_a_limit_of_its_own(client, demo, limits, dead_model):
    limits.RATELIMIT_FEEDBACK_REQUESTS = 2
    limits.RATELIMIT_TENANT_REQUESTS = 1000
    asked = api_post(client, "acme", BODY).json()["request_id"]
    codes = [client.post("/api/t/acme/feedback", data={"request_id": asked, "helpful": True},
                         content_type="application/json").status_code for _ in range(3)]
    assert codes[:2] == [200, 200] and codes[2] == 429
    refused = client.post("/api/t/acme/feedback", data={"request_id": asked, "helpful": False},
                          content_type="application/json")
    assert refused.json()["error"]["scope"] == "feedback"
    # feedback did not spend the client's questions: two more asks fit under the client limit of 3
    assert [api_post(client, "acme", BODY).status_code in (200, 503) for _ in range(2)] == [True, True]
    # the chat page's feedback form is limited too, and nothing is recorded past the limit
    from caching.models import Feedback

    chat = [client.post(f"/t/acme/feedback/{asked}", {"helpful": "no"}, REMOTE_ADDR="10.9.9.9").status_code
            for _ in range(3)]
    assert chat[:2] == [200, 200] and chat[2] == 429
    assert Feedback.objects.get(ask__request_id=asked).helpful is False


@pytest.mark.redis_cluster
def test_an_exact_hit_is_still_one_redis_round_trip_for_every_kind_of_client(client, demo, keys, limits,
                                                                             monkeypatch):
    """The limiter's script reads the tenant's revision and the exact entry along with the counters."""
    from redis.connection import AbstractConnection

    from supportbot.auth import customer_token_issue
    from tests.supportbot.test_chat import seed_answer

    limits.RATELIMIT_CLIENT_REQUESTS = limits.RATELIMIT_TENANT_REQUESTS = 1000
    # Inside a test's transaction the hit's record is written by the request itself; its sampling
    # (daily counters in Redis) is the record writer's work in production, so it is off here.
    limits.SAMPLE_RATES = {"exact": 0.0, "semantic": 0.0, "shadow": 0.0}
    limits.SAMPLE_MIN_PER_INTENT_DAY = 0
    acme = demo["acme"]
    seed_answer(acme, BODY["question"])
    sent: list[bytes] = []
    original = AbstractConnection.send_packed_command

    request_thread = threading.get_ident()  # the test client runs the view here; the record writer does not

    def spy(self, command, check_health=True):
        if threading.get_ident() != request_thread:
            return original(self, command, check_health)
        packed = b"".join(command) if isinstance(command, (list, tuple)) else command
        parts = packed.split(b"\r\n")
        sent.extend(parts[i + 2].upper() for i, p in enumerate(parts[:-2])
                    if p.startswith(b"*") and parts[i + 1].startswith(b"$"))
        return original(self, command, check_health)

    token = customer_token_issue(acme, "cust-rt")
    for how in ({}, {"key": keys["acme"]}, {"token": token}, {"REMOTE_ADDR": "2001:db8::1"}):
        api_post(client, "acme", BODY, **how)  # this process now holds the tenant and its keys
        monkeypatch.setattr(AbstractConnection, "send_packed_command", spy)
        sent.clear()
        answer = api_post(client, "acme", BODY, **how).json()
        monkeypatch.setattr(AbstractConnection, "send_packed_command", original)
        assert answer["cache"]["layer"] == "exact", how
        assert [c for c in sent if c not in {b"PING", b"CLIENT", b"HELLO", b"SELECT"}] == [b"EVALSHA"], (how, sent)


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
