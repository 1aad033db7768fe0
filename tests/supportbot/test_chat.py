import json

import pytest

from caching.models import AskEvent
from supportbot import pipeline


def seed_answer(tenant, question, answer="You can return items within 30 days [1]."):
    """Admit a verified answer citing the tenant's return-policy article, as if the model had written it."""
    from generation.base import Passage

    art = tenant.articles.get(external_id="return-policy", locale="en")
    chunk = art.chunks.filter(is_current=True).first()
    passage = Passage(1, chunk.pk, art.external_id, art.title, art.url, art.version, chunk.text, 0.9)
    state = pipeline.offer_answer(pipeline.Asker(tenant, "en"), question, answer, [passage], {chunk.pk: art.pk},
                                  checks=False)
    assert state.admitted, state.layers
    return art


def parse_sse(body: str) -> list[tuple[str, str]]:
    events = []
    for block in body.strip().split("\n\n"):
        lines = block.split("\n")
        name = next(l[7:] for l in lines if l.startswith("event: "))
        data = "\n".join(l[6:] for l in lines if l.startswith("data: "))
        events.append((name, data))
    return events


def test_chat_page_renders_with_form_and_locales(client, acme):
    response = client.get("/t/acme/")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Acme Outfitters" in html and 'name="question"' in html and "csrfmiddlewaretoken" in html
    assert "?locale=de" in html
    assert client.get("/t/nobody/").status_code == 404


def test_htmx_submit_returns_a_streaming_bubble_and_the_stream_serves_a_cached_answer(client, acme):
    seed_answer(acme, "What is your return policy?")
    response = client.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "sse-connect" in html and "What is your return policy?" in html
    stream_url = html.split('sse-connect="')[1].split('"')[0]
    stream = client.get(stream_url)
    assert stream["Content-Type"] == "text/event-stream"
    events = parse_sse(b"".join(stream.streaming_content).decode())
    deltas = [d for e, d in events if e == "delta"]
    assert deltas == ["You can return items within 30 days [1]."]  # a hit streams as one piece
    done = dict(events)["done"]
    assert "Return policy" in done and "saved answers (exact)" in done
    assert client.get(stream_url).status_code == 404  # a pending question streams once


def test_htmx_submit_with_bad_input_shows_a_form_error_and_stores_nothing(client, acme):
    response = client.post("/t/acme/ask", {"question": "   ", "locale": "en"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422 and b"empty" in response.content
    response = client.post("/t/acme/ask", {"question": "x" * 2001, "locale": "en"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    assert AskEvent.objects.count() == 0


def test_question_html_is_escaped_on_the_page(client, acme):
    response = client.post("/t/acme/ask", {"question": "<script>alert(1)</script> returns?", "locale": "en"},
                           HTTP_HX_REQUEST="true")
    assert b"<script>alert(1)" not in response.content
    assert b"&lt;script&gt;" in response.content


def test_api_stream_of_a_hit_is_one_delta_then_done(client, acme):
    seed_answer(acme, "What is your return policy?")
    response = client.post("/api/t/acme/ask", data=json.dumps({"question": "what is your return policy", "stream": True}),
                           content_type="application/json")
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    events = parse_sse(b"".join(response.streaming_content).decode())
    assert [e for e, _ in events] == ["delta", "done"]
    done = json.loads(events[-1][1])
    assert done["cache"]["layer"] == "exact" and done["citations"][0]["article_id"] == "return-policy"
    assert AskEvent.objects.get(request_id=done["request_id"]).streamed


def test_api_hit_contract(client, acme):
    seed_answer(acme, "What is your return policy?")
    body = client.post("/api/t/acme/ask", data=json.dumps({"question": "What is your return policy?"}),
                       content_type="application/json").json()
    assert body["answer"] == "You can return items within 30 days [1]."
    assert body["citations"] == [{"article_id": "return-policy", "title": body["citations"][0]["title"],
                                  "url": "https://help.acme-outfitters.example/en/return-policy", "version": 1}]
    assert body["cache"]["layer"] == "exact"
    assert set(body["timings_ms"]) >= {"total"}


def test_cached_answer_to_another_tenant_is_never_served(client, acme, initech):
    seed_answer(acme, "What is your return policy?")
    outcome_state = pipeline.start(pipeline.Asker(initech, "en"), "What is your return policy?", False)
    assert pipeline.lookup(outcome_state) is None
