"""The model client a process uses: vLLM when ``VLLM_BASE_URL`` is set, else the embedded CPU model
(``generation.local_model``, which starts the model server when needed). The backends implement
``generation.base.GenerationBackend``; this module is the one place that chooses between them."""
from __future__ import annotations

import threading

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from core.localcache import MISSING, LocalCache
from generation.base import GenerationBackend
from generation.local_model import EmbeddedBackend
from generation.openai_http import OpenAIHTTPBackend

_backend_lock = threading.Lock()  # one backend a process: built under the lock
_backend: LocalCache[GenerationBackend] = LocalCache("generation backend", max_entries=1)


def get_backend() -> GenerationBackend:
    """The process's backend: vLLM when ``VLLM_BASE_URL`` is set, else the embedded CPU model.

    Built once per process (and again after a fork, since connections do not
    survive one), so the circuit breaker sees every call the process makes.
    """
    backend = _backend.lookup("backend")  # built already: no lock (every Ask asks)
    if backend is MISSING:
        with _backend_lock:
            backend = _backend.get("backend", _build_backend)
    return backend


def _build_backend() -> GenerationBackend:
    if settings.VLLM_BASE_URL:
        return OpenAIHTTPBackend.from_settings()
    return EmbeddedBackend.from_settings()


@receiver(setting_changed)
def _forget_backend(*, setting: str, **kwargs) -> None:
    """A test that overrides a generation setting gets a backend built from the new value."""
    if setting.startswith(("VLLM_", "EMBEDDED_MODEL_", "GENERATION_")):
        _backend.forget()
