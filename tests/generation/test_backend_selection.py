"""get_backend(): vLLM when VLLM_BASE_URL is set, else the embedded model; one per process."""
from __future__ import annotations

import hashlib

import pytest
from django.core.exceptions import ImproperlyConfigured

from generation.client import get_backend
from generation.fleet import metrics_targets
from generation.local_model import EmbeddedBackend
from generation.openai_http import OpenAIHTTPBackend
from generation.prompt import build_chat_request
from modelserver import SERVED_MODEL_NAME, default_model_path


def test_vllm_when_configured(settings):
    settings.VLLM_BASE_URL = "http://gpu-router.internal:8000/v1"
    settings.VLLM_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
    settings.VLLM_MODEL_REVISION = "0e9e39f249a16976918f6564b8830bc894c89659"
    settings.GENERATION_MAX_RETRIES = 4
    backend = get_backend()
    assert isinstance(backend, OpenAIHTTPBackend) and not isinstance(backend, EmbeddedBackend)
    assert backend.name == "vllm" and backend.base_url == "http://gpu-router.internal:8000"
    assert backend.model_id == settings.VLLM_MODEL and backend.model_revision == settings.VLLM_MODEL_REVISION
    assert backend.max_retries == 4
    assert get_backend() is backend


def test_vllm_needs_a_model_and_a_pinned_revision(settings):
    settings.VLLM_BASE_URL = "http://gpu:8000"
    settings.VLLM_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
    settings.VLLM_MODEL_REVISION = ""
    with pytest.raises(ImproperlyConfigured):
        get_backend()


def test_embedded_by_default(settings):
    settings.VLLM_BASE_URL = ""
    settings.EMBEDDED_MODEL_PORT = 18999
    backend = get_backend()
    assert isinstance(backend, EmbeddedBackend) and backend.name == "embedded"
    assert backend.base_url == f"http://{settings.EMBEDDED_MODEL_HOST}:18999"
    assert backend.model_id == SERVED_MODEL_NAME
    digest = hashlib.sha256(default_model_path().read_bytes()).hexdigest()
    assert backend.model_revision == digest[:16]


@pytest.mark.slow
def test_vllm_backend_against_a_local_openai_compatible_server(settings, model_server_port, tenant_prompt):
    settings.VLLM_BASE_URL = f"http://127.0.0.1:{model_server_port}/v1"
    settings.VLLM_MODEL = SERVED_MODEL_NAME
    settings.VLLM_MODEL_REVISION = "local"
    settings.GENERATION_MAX_TOKENS = 6
    backend = get_backend()
    assert backend.name == "vllm"
    result = backend.complete(build_chat_request("acme", tenant_prompt, [], "Hello?"))
    assert result.model == SERVED_MODEL_NAME and 1 <= result.completion_tokens <= 6


def test_metrics_targets(settings):
    settings.VLLM_BASE_URL = ""
    settings.EMBEDDED_MODEL_HOST, settings.EMBEDDED_MODEL_PORT = "127.0.0.1", 8765
    assert metrics_targets() == ["http://127.0.0.1:8765"]
    settings.VLLM_BASE_URL = "http://router:8000/v1"
    assert metrics_targets() == ["http://router:8000"]
    settings.VLLM_METRICS_URLS = ["http://gpu-a:8000", "http://gpu-b:8000/"]
    assert metrics_targets() == ["http://gpu-a:8000", "http://gpu-b:8000"]
