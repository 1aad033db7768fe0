"""OpenTelemetry traces of the Ask path: one span per Ask, a child span per step.

    ask                      tenant, locale, serving layer, status, tokens, total ms
    ├── ask.guards           intent, eligibility
    ├── ask.exact            the exact layer's decision
    ├── ask.semantic         the semantic layer's decision (similarity, threshold, key version ...)
    ├── ask.retrieval        the search-result cache's decision, passages found
    ├── ask.generation       model, prompt / cached / completion tokens, finish reason, ttft
    └── ask.admission        stored or refused, and why

Each step span carries the attributes of the decisions the step recorded (``ask.decision.*``:
layer, disposition, reason code, similarity, threshold, key version, judge version when a
judge decided, saved tokens and ms), so a slow or wrong answer can be read off one trace.

Off by default. ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) turns it on with
an OTLP/HTTP exporter; the SDK reads every other ``OTEL_*`` variable itself. Celery tasks get the
publisher's trace context through ``opentelemetry-instrumentation-celery``. Question, answer and
candidate-question text go into spans only with ``TRACING_CAPTURE_TEXT`` (off by default).

While tracing is off every helper here costs one attribute check.
"""
from __future__ import annotations

import functools
import logging
import time

from django.conf import settings
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from core.metrics import reason_code

log = logging.getLogger(__name__)

_tracer: trace.Tracer | None = None  # None: tracing is off


def enabled() -> bool:
    return _tracer is not None


def configure(provider) -> None:
    """Trace the Ask path with this tracer provider (None turns tracing off again)."""
    global _tracer
    _tracer = provider.get_tracer("supportbot") if provider is not None else None


def setup_from_settings() -> bool:
    """Process start (web, worker, commands): switch tracing on when the OTEL_* variables say so."""
    if not settings.TRACING_ENABLED or _tracer is not None:
        return _tracer is not None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": "ask"})  # OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES override
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # forks re-create its thread
    trace.set_tracer_provider(provider)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    configure(provider)
    log.info("tracing on: OTLP/HTTP to %s", settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
             or settings.OTEL_EXPORTER_OTLP_ENDPOINT)
    return True


# ----------------------------------------------------------------------------- the Ask span

def _ask_span(state):
    """The Ask's span, started (back-dated to the Ask's start) by its first step."""
    span = state.trace
    if span is None:
        started_ns = time.time_ns() - int((time.perf_counter() - state.started) * 1e9)
        span = state.trace = _tracer.start_span("ask", start_time=started_ns, attributes={
            "ask.request_id": state.request_id, "ask.tenant": state.asker.tenant.slug,
            "ask.locale": state.asker.locale, "ask.streamed": state.streamed,
        })
        if settings.TRACING_CAPTURE_TEXT:
            span.set_attribute("ask.question", state.question)
    return span


def ask_finish(state) -> None:
    """The Ask is answered (or failed): close its span with the outcome."""
    if _tracer is None:
        return
    span = _ask_span(state)
    state.trace = None
    if not span.is_recording():
        span.end()
        return
    span.set_attributes({"ask.layer": state.layer, "ask.status": state.status,
                         "ask.total_ms": float(state.timings.get("total", 0.0))})
    if state.eligibility is not None:
        span.set_attribute("ask.intent", state.eligibility.intent)
    if state.error:
        span.set_attribute("ask.error", reason_code(state.error))
    if state.status not in ("answered", "not_covered"):
        span.set_status(Status(StatusCode.ERROR, state.status))
    if settings.TRACING_CAPTURE_TEXT:
        span.set_attribute("ask.answer", state.answer)
    span.end()


def _decision_attributes(decisions) -> dict:
    """The decision records' fields; with several (retrieval: search, then embedding) each one
    is prefixed by its layer."""
    out = {}
    for d in decisions:
        prefix = "ask.decision." if len(decisions) == 1 else f"ask.decision.{d.layer}."
        values = {
            "layer": d.layer, "disposition": d.disposition, "reason_code": reason_code(d.reason) if d.reason else "",
            "similarity": d.similarity, "threshold": d.threshold, "key_version": d.key_version,
            "judge_version": getattr(d, "judge_version", None), "candidate": d.candidate, "intent": d.intent,
            "saved_tokens": d.saved_tokens, "saved_ms": d.saved_ms, "lookup_ms": d.lookup_ms,
            "entry_age_s": d.entry_age_s,
        }
        # the versions a semantic lookup filtered on (its key, in effect)
        values.update({f"filter.{k}": v for k, v in (d.filters or {}).items() if isinstance(v, (str, int, float))})
        if settings.TRACING_CAPTURE_TEXT:
            values.update(reason=d.reason, candidate_question=d.candidate_question)
        out.update({prefix + k: v for k, v in values.items() if v not in (None, "")})
    return out


def step(name: str):
    """Decorate a pipeline step ``fn(state, ...)``: while tracing is on it runs inside a child
    span of the Ask's span, which gets the attributes of the decisions the step appended."""
    def decorate(fn):
        @functools.wraps(fn)
        def traced(state, *args, **kwargs):
            if _tracer is None:
                return fn(state, *args, **kwargs)
            ask_span = _ask_span(state)
            if not ask_span.is_recording():  # the sampler dropped this Ask: its steps cost nothing more
                return fn(state, *args, **kwargs)
            parent = trace.set_span_in_context(ask_span)
            before = len(state.layers)
            with _tracer.start_as_current_span(f"ask.{name}", context=parent) as span:
                try:
                    return fn(state, *args, **kwargs)
                finally:
                    if span.is_recording():  # a trace the sampler dropped costs no attributes
                        span.set_attributes(_decision_attributes(state.layers[before:]))
        return traced
    return decorate


def generation_stream(state, items):
    """Wrap the backend's stream: an ``ask.generation`` span from the request to the last token."""
    if _tracer is None or not _ask_span(state).is_recording():
        yield from items
        return
    span = _tracer.start_span("ask.generation", context=trace.set_span_in_context(_ask_span(state)))
    result = None
    try:
        for item in items:
            if not isinstance(item, str):  # the answerer's Answer (its model call's result, if any)
                result = getattr(item, "result", item)
            yield item
    except Exception as exc:
        span.set_attribute("ask.generation.error", getattr(exc, "reason", type(exc).__name__))
        span.set_status(Status(StatusCode.ERROR, getattr(exc, "reason", type(exc).__name__)))
        raise
    finally:
        if result is not None:
            span.set_attributes({
                "gen_ai.response.model": result.model, "gen_ai.usage.input_tokens": result.prompt_tokens,
                "gen_ai.usage.output_tokens": result.completion_tokens, "ask.generation.finish_reason":
                result.finish_reason, "ask.generation.cached_tokens": result.cached_tokens or 0,
                "ask.generation.ttft_ms": result.ttft_ms or 0.0, "ask.generation.total_ms": result.total_ms,
            })
        span.end()
