"""Fixtures for the isolation, hostile-input and fault tests.

Caches are filled with synthetic verified answers through the normal admission
(``pipeline.offer_answer``), each answer carrying a marker that names the scope it
was offered in, so a test can tell from any served answer where it came from.
The model is replaced by a real dead endpoint (a port nothing listens on) unless a
test says otherwise: a miss then fails fast with the product's own "unavailable"
answer instead of waiting for the CPU model."""
from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import threading

import pytest

from core.models import Tenant
from core.redis_client import reset_redis_state
from generation.base import Passage
from supportbot import pipeline
from supportbot.auth import api_key_create, customer_token_issue

HOST = "127.0.0.1"
_markers = itertools.count(1)
MARKER = re.compile(r"\bscope-answer ([a-z]+)\b")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def marker_word(n: int) -> str:
    """Letters only: digits in an answer would be read as facts (amounts, phone numbers) by admission."""
    word = ""
    while True:
        n, r = divmod(n, 26)
        word = chr(ord("a") + r) + word
        if n == 0:
            return "mk" + word
        n -= 1


def passage_for(tenant: Tenant, locale: str, external_id: str | None = None) -> tuple[Passage, dict[int, int]]:
    """A real current passage of the tenant's knowledge base in that locale."""
    articles = tenant.articles.filter(locale=locale, status="active")
    if external_id:
        articles = articles.filter(external_id=external_id)
    art = articles.order_by("external_id").first()
    chunk = art.chunks.filter(is_current=True).order_by("pk").first()
    return Passage(1, chunk.pk, art.external_id, art.title, art.url, art.version, chunk.text, 0.9), {chunk.pk: art.pk}


class Offers:
    """Synthetic answers offered to the caches, each traceable to the scope that offered it."""

    def __init__(self):
        self.by_marker: dict[str, dict] = {}

    def offer(self, asker: pipeline.Asker, question: str, *, answer: str | None = None):
        marker = marker_word(next(_markers))
        passage, pks = passage_for(asker.tenant, asker.locale)
        text = answer or f"Please see our help centre: scope-answer {marker} applies here [1]."
        state = pipeline.offer_answer(asker, question, text, [passage], pks, checks=False)  # placeholder text
        self.by_marker[marker] = {"tenant": asker.tenant.slug, "locale": asker.locale, "customer": asker.customer,
                                  "question": question, "admitted": state.admitted,
                                  "category": state.eligibility.category}
        return state, marker

    def owner(self, answer: str) -> dict | None:
        match = MARKER.search(answer or "")
        return self.by_marker.get(match.group(1)) if match else None


@pytest.fixture
def offers():
    return Offers()


@pytest.fixture
def dead_model(settings):
    """Point generation at a port nothing listens on (no retries): a miss fails fast, for real.

    Set through pytest-django's ``settings`` like every other override here: mixing it with a
    separate ``override_settings`` would restore them out of order and leak the dead model."""
    settings.VLLM_BASE_URL = f"http://{HOST}:{free_port()}"
    settings.VLLM_MODEL, settings.VLLM_MODEL_REVISION = "dead-model", "none"
    settings.GENERATION_MAX_RETRIES, settings.GENERATION_CONNECT_TIMEOUT_S = 0, 0.5
    settings.GENERATION_TIMEOUT_S = 2.0


@pytest.fixture
def no_rate_limits(settings):
    settings.RATELIMIT_ENABLED = False


@pytest.fixture
def keys(demo):
    """An API key per demo tenant: {slug: raw key}."""
    return {slug: api_key_create(t, "tests")[1] for slug, t in demo.items()}


def api_post(client, tenant_slug: str, body, *, key: str | None = None, token: str | None = None,
             content_type: str = "application/json", **extra):
    headers = dict(extra)
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    if token:
        headers["HTTP_X_CUSTOMER_TOKEN"] = token
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(f"/api/t/{tenant_slug}/ask", data=data, content_type=content_type, **headers)


def parse_sse(body: str) -> list[tuple[str, str]]:
    events = []
    for block in body.strip().split("\n\n"):
        if not block.strip():
            continue
        lines = block.split("\n")
        name = next(line[7:] for line in lines if line.startswith("event: "))
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        events.append((name, data))
    return events


def api_answer(response) -> dict:
    """The AskResponse of a plain or streamed API response (a streamed one's text re-assembled)."""
    if response.get("Content-Type", "").startswith("text/event-stream"):
        events = parse_sse(b"".join(response.streaming_content).decode())
        done = json.loads(next(d for e, d in events if e == "done"))
        done["streamed_text"] = "".join(json.loads(d)["delta"] for e, d in events if e == "delta")
        return done
    return response.json()


def token_for(tenant: Tenant, customer: str) -> str:
    return customer_token_issue(tenant, customer)


# --------------------------------------------------------------------------- real faults

@pytest.fixture
def own_redis(settings):
    """A throwaway redis-server only this test uses (and may kill, stop or restart)."""
    from core.servers import start_redis

    holder = {"proc": start_redis()}
    port = holder["proc"].port
    settings.REDIS_URL = f"redis://{HOST}:{port}/0"
    reset_redis_state()

    class Handle:
        @property
        def proc(self):
            return holder["proc"]

        def kill(self):
            holder["proc"].kill()
            holder["proc"].wait(timeout=10)

        def restart(self):
            holder["proc"] = start_redis(port)

    yield Handle()
    with contextlib.suppress(Exception):
        holder["proc"].kill()
        holder["proc"].wait(timeout=10)
    reset_redis_state()


@contextlib.contextmanager
def blackhole_server():
    """A TCP server that accepts connections and reads, but never answers: a hung model server."""
    listener = socket.socket()
    listener.bind((HOST, 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    conns, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                conns.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        stop.set()
        thread.join(timeout=2)
        for c in conns:
            c.close()
        listener.close()
