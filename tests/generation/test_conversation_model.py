"""The trusted model as the rewriter of follow-ups (CONVERSATION_MODEL_REWRITE), against a local
server speaking the OpenAI protocol (the GPU vLLM server cannot run here)."""
from __future__ import annotations

import pytest

from supportbot.conversation import Conversation, How, Turn, resolve
from supportbot.conversation_model import model_rewriter
from tests.generation.test_verifier import completion

REFUND = Conversation((Turn("user", "I'm in Canada and want a refund for my Plus order"),
                       Turn("assistant", "Start it from your orders page."), Turn("user", "how long does that take?")))


@pytest.fixture
def model(settings, scripted):
    def start(*replies):
        server = scripted([completion(r) if isinstance(r, str) else r for r in replies])
        settings.VLLM_BASE_URL, settings.VLLM_MODEL, settings.VLLM_MODEL_REVISION = server.url, "scripted-model", "r1"
        settings.CONVERSATION_MODEL_REWRITE = True
        return server
    return start


def test_off_by_default(settings):
    settings.CONVERSATION_MODEL_REWRITE = False
    settings.VLLM_BASE_URL = "http://127.0.0.1:9"
    assert model_rewriter("acme") is None


@pytest.mark.django_db
def test_a_rewrite_that_carries_every_condition_is_used(model):
    server = model("How long does a refund for a Plus order take in Canada?")
    r = resolve(REFUND, "en", rewriter=model_rewriter("acme"))
    assert r.how == How.MODEL and r.cacheable and r.question.startswith("How long does a refund")
    body = server.requests[0]["body"]
    assert body["messages"][0]["role"] == "system" and "<conversation>" in body["messages"][1]["content"]
    assert "how long does that take?" in body["messages"][1]["content"]


@pytest.mark.django_db
def test_a_rewrite_that_drops_a_condition_bypasses_the_caches(model):
    model("How long does a refund take?")  # Canada and Plus left out
    r = resolve(REFUND, "en", rewriter=model_rewriter("acme"))
    assert r.how == How.UNRESOLVED and not r.cacheable and "canada" in r.detail


@pytest.mark.django_db
def test_a_failed_call_falls_back_to_the_rules(model):
    model((500, {}, b"down"), (500, {}, b"down"))
    r = resolve(REFUND, "en", rewriter=model_rewriter("acme"))
    assert r.how in (How.REWRITTEN, How.UNRESOLVED) and r.how != How.MODEL
