"""Generation: the prompt, the model backends, and reading the answer back.

- ``base``: the interface (``GenerationBackend``, ``ChatRequest``, ``GenerationResult``,
  ``GenerationError``, ``Passage``).
- ``client``: ``get_backend()``, which picks one from settings: ``VLLM_BASE_URL`` set means
  vLLM, otherwise the embedded CPU model.
- ``prompt``: the static-first prompt layout and ``PROMPT_VERSION``.
- ``citations``: ``parse_answer`` resolves [n] markers to the passages given.
- ``salt``: the per-tenant ``cache_salt``.
- ``openai_http``: the vLLM backend (OpenAI-compatible HTTP, retries, circuit breaker, /metrics scrape).
- ``local_model``: the same client pointed at the embedded model server (``modelserver``, its own
  process), which it starts when needed.
- ``verifier``: the yes/no model check of a near miss; ``fleet``: the model servers' /metrics.

A layer beside ``caching``: it imports ``core`` and ``modelserver``'s constants, never an app above.
"""
from generation.base import ChatRequest, GenerationBackend, GenerationError, GenerationResult, Passage

__all__ = ["ChatRequest", "GenerationBackend", "GenerationError", "GenerationResult", "Passage"]
