"""The model-server check: a repeated probe prompt must report cached tokens. The stand-in server
(the OpenAI protocol, no prefix cache: it reports 0) and a scripted server that reports them."""
from __future__ import annotations

import json
import logging

from django.test import override_settings

from modelserver.standin import StandInModel
from supportbot.prefix_probe import prefix_cache_probe, prefix_cache_probe_latest
from tests.caching.helpers import SSE, scripted_model


def usage_answer(cached: int | None) -> tuple[int, dict, bytes]:
    usage = {"prompt_tokens": 300, "completion_tokens": 1}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    events = [{"model": "m", "choices": [{"index": 0, "delta": {"content": "OK"}, "finish_reason": None}]},
              {"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
              {"choices": [], "usage": usage}]
    return 200, SSE, b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def test_a_server_without_prefix_caching_is_reported_in_the_log_and_on_the_dashboard(db, client, admin_user, caplog):
    standin = StandInModel(interval_s=0.0, tokens=2)
    port = standin.start_in_thread()
    try:
        with override_settings(VLLM_BASE_URL=f"http://127.0.0.1:{port}", VLLM_MODEL="standin-model", VLLM_MODEL_REVISION="r1",
                               GENERATION_MAX_RETRIES=0), caplog.at_level(logging.WARNING):
            outcome = prefix_cache_probe()
    finally:
        standin.stop()
    assert outcome["ok"] is False and outcome["cached_tokens"] == 0 and "prefix caching is off" in outcome["detail"]
    assert any("prefix caching is off" in r.getMessage() for r in caplog.records)
    assert prefix_cache_probe_latest()["ok"] is False
    client.force_login(admin_user)
    page = client.get("/admin/ask/").content.decode()
    assert 'id="prefix-probe"' in page and "NOT working" in page


def test_a_server_that_reports_cached_tokens_passes(db):
    with scripted_model(usage_answer(0), usage_answer(256)):
        outcome = prefix_cache_probe()
    assert outcome["ok"] is True and outcome["cached_tokens"] == 256


def test_a_server_that_does_not_say_fails(db):
    with scripted_model(usage_answer(None), usage_answer(None)):
        outcome = prefix_cache_probe()
    assert outcome["ok"] is False and "no usage.prompt_tokens_details.cached_tokens" in outcome["detail"]


def test_without_a_model_answerer_the_task_checks_no_server(db, monkeypatch):
    """The default install answers extractively and may have no model installed: the worker's start-up
    check must not try to start or call one (it did, and failed with a traceback on every make run)."""
    from supportbot import tasks

    called = []
    monkeypatch.setattr(tasks.prefix_probe, "prefix_cache_probe", lambda: called.append(1) or {"ok": True})
    with override_settings(ASK_ANSWERER="extractive", VLLM_BASE_URL=""):
        assert tasks.prefix_cache_probe() is None
    with override_settings(ASK_ANSWERER="model"):
        assert tasks.prefix_cache_probe() is True
    assert called == [1]  # only the model answerer's run probed
