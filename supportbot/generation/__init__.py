"""Generation: the prompt, the model backends, and reading the answer back.

- ``base``: the interface (``GenerationBackend``, ``ChatRequest``, ``GenerationResult``,
  ``GenerationError``) and ``get_backend()``, which picks one from settings:
  ``VLLM_BASE_URL`` set means vLLM, otherwise the embedded CPU model.
- ``prompt``: the static-first prompt layout and ``PROMPT_VERSION``.
- ``citations``: ``parse_answer`` resolves [n] markers to the passages given.
- ``salt``: the per-tenant ``cache_salt``.
- ``openai_http``: the vLLM backend (OpenAI-compatible HTTP, retries, circuit breaker, /metrics scrape).
- ``embedded``: the same client pointed at the embedded model server, which it starts when needed.
"""
from supportbot.generation.base import (
    ChatRequest,
    GenerationBackend,
    GenerationError,
    GenerationResult,
    Passage,
    get_backend,
)

__all__ = ["ChatRequest", "GenerationBackend", "GenerationError", "GenerationResult", "Passage", "get_backend"]
