"""Trace context crosses into Celery: a purge queued inside a trace runs, on a real worker
process, as a span of the same trace, exported over OTLP/HTTP to a receiver that decodes the
real protocol (the worker switches tracing on from the standard OTEL_* variables)."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.instrumentation.celery import CeleryInstrumentor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from caching.tasks import purge_article
from tests.jobs.conftest import start_worker_process, stop_worker_process, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


class OtlpReceiver:
    """An OTLP/HTTP trace endpoint (protobuf), keeping every span it is sent."""

    def __init__(self):
        self.spans = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        receiver.spans.extend(scope_spans.spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def receiver():
    r = OtlpReceiver()
    yield r
    r.close()


@pytest.fixture
def publisher_spans():
    """This process publishes with the Celery instrumentation, into an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = CeleryInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider, exporter
    instrumentor.uninstrument()
    provider.shutdown()


def test_a_purge_queued_inside_a_trace_runs_in_the_same_trace(db, receiver, publisher_spans):
    provider, exporter = publisher_spans
    worker = start_worker_process({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100",
                                   "OTEL_SERVICE_NAME": "ask-worker-test"})
    try:
        with provider.get_tracer("test").start_as_current_span("article saved") as parent:
            purge_article.delay(987654321, None, "manual")
        trace_id = parent.get_span_context().trace_id
        publish = next(s for s in exporter.get_finished_spans() if s.name == "apply_async/caching.tasks.purge_article")
        assert publish.context.trace_id == trace_id

        def run_span():
            return next((s for s in receiver.spans if s.name == "run/caching.tasks.purge_article"), None)

        run = wait_until(run_span, timeout=30)
        assert int.from_bytes(run.trace_id, "big") == trace_id
        assert int.from_bytes(run.parent_span_id, "big") == publish.context.span_id
    finally:
        stop_worker_process(worker)
