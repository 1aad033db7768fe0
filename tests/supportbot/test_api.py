import json

import pytest

from caching.models import AskEvent, CacheDecision

URL = "/api/t/{}/ask"


def post(client, tenant, body, content_type="application/json"):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(URL.format(tenant), data=data, content_type=content_type)


@pytest.mark.parametrize("body, status, code", [
    ({"question": ""}, 400, "empty_question"),
    ({"question": "   \n\t "}, 400, "empty_question"),
    ({"question": "x" * 2001}, 400, "question_too_long"),
    ({"question": 42}, 400, "invalid_question"),
    ({"question": None}, 400, "invalid_question"),
    ({"question": ["a"]}, 400, "invalid_question"),
    ({}, 400, "missing_question"),
    ({"question": "hi", "locale": "fr"}, 400, "unknown_locale"),
    ({"question": "hi", "locale": 3}, 400, "unknown_locale"),
    ({"question": "hi", "stream": "yes"}, 400, "invalid_stream"),
    ({"question": "hi", "extra": 1}, 400, "unknown_field"),
    ({"question": "?!?!"}, 400, "invalid_question"),
    ({"question": "hello\x00world"}, 400, "invalid_question"),
    (b"not json", 400, "invalid_json"),
    (b"[1, 2]", 400, "invalid_json"),
    (b"\xff\xfe\xfa", 400, "invalid_encoding"),
    (b"[" * 50000 + b"]" * 50000, 413, "body_too_large"),
])
def test_bad_input_is_rejected_and_nothing_is_stored(client, acme, body, status, code):
    response = post(client, "acme", body)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert AskEvent.objects.count() == 0 and CacheDecision.objects.count() == 0


def test_wrong_content_type_is_415(client, acme):
    response = client.post(URL.format("acme"), data={"question": "hi"})
    assert response.status_code == 415
    assert AskEvent.objects.count() == 0


def test_unknown_tenant_is_404(client, demo):
    response = post(client, "nobody", {"question": "What is your return policy?"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "unknown_tenant"


def test_get_is_not_allowed(client, acme):
    assert client.get(URL.format("acme")).status_code == 405


@pytest.mark.slow
def test_end_to_end_ask_returns_a_cited_answer_from_the_right_tenant(client, demo, model_server, settings):
    settings.GENERATION_MAX_TOKENS = 60  # the CPU model is slow; a short answer proves the path
    acme, initech = demo["acme"], demo["initech"]
    response = post(client, "acme", {"question": "How many days do I have to return an item?"})
    assert response.status_code == 200, response.content
    body = response.json()
    event = AskEvent.objects.get(request_id=body["request_id"])
    assert body["status"] in ("answered", "not_covered"), (event.error_reason, event.timings)
    assert set(body) >= {"answer", "citations", "request_id", "cache", "timings_ms"}
    assert body["cache"]["layer"] == "none"
    if body["status"] == "answered":
        assert body["citations"], body
        acme_ids = set(acme.articles.values_list("external_id", flat=True))
        assert {c["article_id"] for c in body["citations"]} <= acme_ids
        assert all(c["url"].startswith("https://help.acme") for c in body["citations"])
    event = AskEvent.objects.get(request_id=body["request_id"])
    assert event.tenant == acme and event.model and event.total_ms > 0
    assert event.prompt_tokens > 0
    assert initech.asks.count() == 0
