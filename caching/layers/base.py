"""What the answer layers (exact and semantic) hold: a ``CachedAnswer``. The interface every cache
layer implements, its ``LayerResult`` and ``Disposition``, is ``core.cachelayer``."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CachedAnswer:
    answer: str
    citations: list[dict]  # [{article_pk, article_id, title, url, version}]
    intent: str
    created: float  # unix time
    model: str
    prompt_version: str
    source_request: str
    entry_id: int | None = None
    question: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generation_ms: float = 0.0
    searched: str = ""  # what retrieval also searched: a rewrite in the customer's own words (purge_retrieving)
