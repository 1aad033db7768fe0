"""OpenTelemetry spans of the Ask path, caught by the SDK's in-memory exporter: one Ask is one
span tree whose step spans carry the decision records' attributes, and no question or answer
text unless ``TRACING_CAPTURE_TEXT`` allows it."""
from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from core.models import Tenant
from supportbot import pipeline, tracing
from tests.caching.helpers import scripted_model

QUESTION = "What is your return policy?"
PARAPHRASE = "return policy details"
ANSWER = "Unused items can be returned within 30 days of delivery [1]."


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure(provider)
    yield exporter
    tracing.configure(None)
    provider.shutdown()


def tree(exporter, request_id: str) -> tuple[object, dict[str, list]]:
    """The Ask span with this request id and its children by name."""
    finished = exporter.get_finished_spans()
    root = next(s for s in finished if s.name == "ask" and s.attributes["ask.request_id"] == request_id)
    children: dict[str, list] = {}
    for s in finished:
        if s.parent is not None and s.parent.span_id == root.context.span_id:
            assert s.context.trace_id == root.context.trace_id
            children.setdefault(s.name, []).append(s)
    return root, children


def all_text(exporter) -> str:
    return "\n".join(str(v) for s in exporter.get_finished_spans() for v in s.attributes.values())


def serve(tenant: Tenant) -> pipeline.Asker:
    tenant.semantic_mode = Tenant.SemanticMode.SERVE
    tenant.save(update_fields=["semantic_mode"])
    return pipeline.Asker(tenant, "en")


def test_a_miss_is_one_span_tree_with_a_child_per_step(acme, spans):
    with scripted_model(ANSWER):
        outcome = pipeline.ask(serve(acme), QUESTION)
    assert outcome.layer == "none" and outcome.status == "answered"
    root, children = tree(spans, outcome.request_id)
    assert root.parent is None
    assert sorted(children) == ["ask.admission", "ask.answerability", "ask.exact", "ask.generation", "ask.guards",
                                "ask.retrieval", "ask.semantic"]
    assert all(len(v) == 1 for v in children.values())
    a = root.attributes
    assert (a["ask.tenant"], a["ask.locale"], a["ask.layer"], a["ask.status"]) == ("acme", "en", "none", "answered")
    assert a["ask.total_ms"] > 0 and a["ask.intent"]
    # the steps happen inside the Ask, in the order of the path
    steps = sorted(children.values(), key=lambda v: v[0].start_time)
    assert [s[0].name for s in steps] == ["ask.guards", "ask.exact", "ask.semantic", "ask.retrieval",
                                          "ask.answerability", "ask.generation", "ask.admission"]
    assert all(root.start_time <= s[0].start_time and s[0].end_time <= root.end_time for s in steps)

    exact = children["ask.exact"][0].attributes
    assert (exact["ask.decision.layer"], exact["ask.decision.disposition"]) == ("exact", "miss")
    assert exact["ask.decision.key_version"]
    semantic = children["ask.semantic"][0].attributes
    assert (semantic["ask.decision.layer"], semantic["ask.decision.disposition"]) == ("semantic", "miss")
    generation = children["ask.generation"][0].attributes
    assert generation["gen_ai.usage.input_tokens"] == 900 and generation["ask.generation.finish_reason"] == "stop"
    admission = children["ask.admission"][0].attributes
    assert admission["ask.decision.admission.disposition"] == "stored"  # admitted, then stored in the exact layer
    assert admission["ask.decision.exact.disposition"] == "stored"

    text = all_text(spans)
    assert QUESTION not in text and "return policy" not in text.lower() and ANSWER not in text


def test_a_semantic_hit_carries_similarity_threshold_and_saving(acme, spans):
    asker = serve(acme)
    with scripted_model(ANSWER) as server:  # the same model, or the cached answer is out of scope
        pipeline.ask(asker, QUESTION)
        spans.clear()
        outcome = pipeline.ask(asker, PARAPHRASE)
    assert len(server.requests) == 1
    assert outcome.layer == "semantic"
    root, children = tree(spans, outcome.request_id)
    assert sorted(children) == ["ask.exact", "ask.guards", "ask.semantic"]  # nothing after a hit
    hit = children["ask.semantic"][0].attributes
    assert hit["ask.decision.disposition"] == "hit"
    assert hit["ask.decision.similarity"] >= hit["ask.decision.threshold"] > 0
    assert hit["ask.decision.candidate"] and hit["ask.decision.filter.model"] == "scripted-model"
    assert hit["ask.decision.filter.policy_version"] and hit["ask.decision.filter.prompt_version"]
    assert hit["ask.decision.saved_tokens"] > 0 and hit["ask.decision.saved_ms"] >= 0
    assert "ask.decision.candidate_question" not in hit
    assert root.attributes["ask.layer"] == "semantic"
    assert PARAPHRASE not in all_text(spans) and QUESTION not in all_text(spans)


def test_text_is_captured_only_when_the_setting_allows_it(acme, spans, settings):
    settings.TRACING_CAPTURE_TEXT = True
    with scripted_model(ANSWER):
        outcome = pipeline.ask(serve(acme), QUESTION)
    root, _ = tree(spans, outcome.request_id)
    assert root.attributes["ask.question"] == QUESTION
    assert root.attributes["ask.answer"] == outcome.answer


def test_a_failed_generation_marks_the_spans_as_errors(acme, spans):
    with scripted_model((500, {}, b"down")):
        outcome = pipeline.ask(serve(acme), QUESTION)
    assert outcome.status == "unavailable"
    root, children = tree(spans, outcome.request_id)
    assert not root.status.is_ok and root.attributes["ask.error"] == "generation"
    generation = children["ask.generation"][0]
    assert not generation.status.is_ok and generation.attributes["ask.generation.error"] == "unavailable"


def test_tracing_off_records_nothing_and_asks_still_work(acme):
    assert not tracing.enabled()
    with scripted_model(ANSWER):
        outcome = pipeline.ask(serve(acme), QUESTION)
    assert outcome.status == "answered"
