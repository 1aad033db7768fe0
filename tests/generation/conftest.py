"""Fixtures for the generation tests: a real embedded model server for the session,
dedicated servers that tests may kill, and a scripted HTTP server for status codes
the real model server cannot be made to return (5xx, 429, garbage)."""
from __future__ import annotations

import atexit
import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.servers import RUN
from generation.local_model import EmbeddedBackend, ensure_model_server, start_model_server, stop_model_server
from generation.prompt import TenantPrompt

HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def model_server_port() -> int:
    """A model server of this session's own (other sessions' traffic would disturb its KV state)."""
    port = free_port()
    # atexit runs last-in first-out: this runs after the handle's release has stopped the server.
    atexit.register(lambda: (RUN / f"modelserver-{port}.lock").unlink(missing_ok=True))
    ensure_model_server(HOST, port)  # stopped at exit through its handle
    return port


def make_backend(port: int, **overrides) -> EmbeddedBackend:
    options = dict(connect_timeout_s=2.0, timeout_s=60.0, max_retries=2, retry_backoff_s=0.05,
                   breaker_failures=5, breaker_reset_s=30.0)
    options.update(overrides)
    return EmbeddedBackend(host=HOST, port=port, autostart=False, **options)


@pytest.fixture
def backend(model_server_port):
    b = make_backend(model_server_port)
    yield b
    b.close()


@contextlib.contextmanager
def dedicated_model_server(port: int | None = None):
    """A model server only this test talks to (and may kill)."""
    port = port or free_port()
    proc = start_model_server(HOST, port)
    try:
        yield proc, port
    finally:
        stop_model_server(proc.pid, proc)


@pytest.fixture
def tenant_prompt() -> TenantPrompt:
    return TenantPrompt(
        name="Acme Outfitters",
        instructions=(
            "Acme Outfitters sells outdoor clothing and camping gear online in Germany, Austria and "
            "Switzerland. Returns are free within 30 days of delivery for unused items with tags. "
            "Always address the customer politely, keep answers short, and never promise refunds "
            "that the passages do not state. Prices are in euros including VAT."
        ),
        few_shot=(
            ("How long do I have to return a jacket?", "You can return unused items within 30 days of delivery [1]."),
            ("Do you ship to Italy?", "We currently ship to Germany, Austria and Switzerland only [2]."),
        ),
    )


class ScriptedServer:
    """Plays back canned HTTP responses in order and counts the requests it got."""

    def __init__(self, responses: list[tuple[int, dict, bytes]]):
        self.responses = list(responses)
        self.requests: list[dict] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                scripted.requests.append({"path": self.path, "headers": dict(self.headers), "peer": self.client_address,
                                          "body": json.loads(self.rfile.read(length))})
                status, headers, body = scripted.responses.pop(0) if scripted.responses else (500, {}, b"no script")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer((HOST, 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://{HOST}:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def scripted():
    servers = []

    def start(responses):
        server = ScriptedServer(responses)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
