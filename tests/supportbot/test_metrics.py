"""``/metrics`` after real Asks through the API: a miss answered by a model that speaks vLLM's
protocol, an exact hit and a semantic hit, counted per tenant and layer; and who may scrape."""
from __future__ import annotations

import json

import pytest
from prometheus_client.parser import text_string_to_metric_families

from core.models import Tenant
from tests.caching.helpers import SSE, scripted_model

ANSWER = "Unused items can be returned within 30 days of delivery [1]."


def answer_with_usage(text: str, prompt_tokens: int, cached_tokens: int) -> tuple[int, dict, bytes]:
    events = [
        {"model": "scripted-model", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"model": "scripted-model", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 12,
                                  "prompt_tokens_details": {"cached_tokens": cached_tokens}}},
    ]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    return 200, SSE, body


def scrape(client, **headers) -> dict[tuple, float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def ask(client, question: str) -> dict:
    response = client.post("/api/t/acme/ask", data=json.dumps({"question": question}), content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def test_counters_after_a_miss_an_exact_hit_and_a_semantic_hit(client, acme):
    acme.semantic_mode = Tenant.SemanticMode.SERVE
    acme.save(update_fields=["semantic_mode"])
    before = scrape(client)
    with scripted_model(answer_with_usage(ANSWER, prompt_tokens=900, cached_tokens=640)) as server:
        miss = ask(client, "What is your return policy?")
        exact = ask(client, "What is your return policy?")
        semantic = ask(client, "return policy details")
    assert len(server.requests) == 1
    assert [miss["cache"]["layer"], exact["cache"]["layer"], semantic["cache"]["layer"]] == ["none", "exact", "semantic"]
    after = scrape(client)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    t = {"tenant": "acme"}
    assert delta("ask_requests_total", layer="none", status="answered", **t) == 1
    assert delta("ask_requests_total", layer="exact", status="answered", **t) == 1
    assert delta("ask_requests_total", layer="semantic", status="answered", **t) == 1
    assert delta("ask_request_duration_seconds_count", layer="exact", **t) == 1
    assert delta("ask_request_duration_seconds_count", layer="none", **t) == 1
    # exact: looked up three times, hit once; semantic: looked up by the miss and the paraphrase, hit once
    assert delta("ask_cache_lookups_total", layer="exact", **t) == 3
    assert delta("ask_cache_hits_total", layer="exact", **t) == 1
    assert delta("ask_cache_lookups_total", layer="semantic", **t) == 2
    assert delta("ask_cache_hits_total", layer="semantic", **t) == 1
    assert delta("ask_cache_decisions_total", layer="semantic", disposition="miss", **t) == 1
    assert delta("ask_cache_decisions_total", layer="admission", disposition="stored", **t) == 1
    assert delta("ask_cache_lookup_duration_seconds_count", layer="exact", **t) == 3
    assert delta("ask_cache_lookup_duration_seconds_count", layer="retrieval", **t) == 1
    # the model's usage: cached-token share = cached / prompt tokens, from two counters
    m = {"tenant": "acme", "model": "scripted-model"}
    assert delta("ask_model_prompt_tokens_total", **m) == 900
    assert delta("ask_model_cached_prompt_tokens_total", **m) == 640
    assert delta("ask_model_completion_tokens_total", **m) == 12
    assert delta("ask_model_requests_total", backend="vllm", outcome="ok") == 1
    # read at scrape time from the broker
    assert ("ask_celery_queue_depth", (("queue", "purge"),)) in after
    assert value(after, "ask_redis_up", role="cache") == 1


def test_an_admission_refusal_is_counted_by_reason_code(client, acme):
    before = scrape(client)
    with scripted_model(("Unused items can be returned within 30 days of delivery [1]", "length")):
        assert ask(client, "How do returns work?")["cache"]["layer"] == "none"
    after = scrape(client)
    labels = (("reason", "truncated"), ("tenant", "acme"))
    assert after[("ask_admission_refusals_total", labels)] - before.get(("ask_admission_refusals_total", labels), 0) == 1


def test_without_a_token_only_loopback_clients_may_scrape(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.0.0.7").status_code == 404
    assert client.post("/metrics").status_code == 405
    settings.PRODUCTION = True
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 404


def test_with_a_token_every_scrape_must_bear_it(client, settings):
    settings.METRICS_TOKEN = "s3cret-token"
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token", REMOTE_ADDR="10.0.0.7").status_code == 200


@pytest.mark.parametrize("reason, code", [
    ("not an answer (not_covered)", "not_an_answer"),
    ("ungrounded facts: $5, help@example.com", "ungrounded_facts"),
    ("truncated: finish reason 'length'", "truncated"),
    ("incomplete: asks for a duration for Canada; the answer states none", "incomplete"),
    ("uncited", "uncited"),
])
def test_reason_codes_are_bounded(reason, code):
    from core.metrics import reason_code

    assert reason_code(reason) == code


def feedback(client, request_id: str, helpful: bool) -> None:
    response = client.post("/api/t/acme/feedback", data=json.dumps({"request_id": request_id, "helpful": helpful}),
                           content_type="application/json")
    assert response.status_code == 200, response.content


def test_customers_no_is_counted_by_the_layer_that_served(client, acme):
    """The alert compares "No" on cached answers with "No" on fresh ones (AskCachedAnswersDisliked)."""
    before = scrape(client)
    with scripted_model(answer_with_usage(ANSWER, prompt_tokens=900, cached_tokens=0)):
        fresh = ask(client, "What is your return policy?")
        cached = ask(client, "What is your return policy?")
    assert (fresh["cache"]["layer"], cached["cache"]["layer"]) == ("none", "exact")
    feedback(client, fresh["request_id"], True)
    feedback(client, cached["request_id"], False)
    feedback(client, cached["request_id"], False)  # the same verdict again is not a second one
    after = scrape(client)

    def delta(**labels):
        return value(after, "ask_feedback_total", tenant="acme", **labels) - value(before, "ask_feedback_total",
                                                                                 tenant="acme", **labels)

    assert delta(layer="none", helpful="yes") == 1
    assert delta(layer="exact", helpful="no") == 1
    assert delta(layer="none", helpful="no") == delta(layer="exact", helpful="yes") == 0
