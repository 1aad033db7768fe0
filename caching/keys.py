"""The answer spec: every input that shapes an answer, in one structure.

The pipeline builds the model request from an ``AnswerSpec`` and the exact-cache
key (``caching.layers.exact.exact_key``) is a hash of the same spec's canonical JSON, so
nothing that changes an answer can be left out of the key by accident (a property test
checks every field)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

def canonical_json(value) -> str:
    return _CANONICAL.encode(value)


# json.dumps with these options builds an encoder on every call; one, kept, writes the same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest(value) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AnswerSpec:
    question: str  # normalised (NFKC, case-folded, whitespace and trailing punctuation collapsed)
    tenant: str
    tenant_id: int  # the key's hash tag: the tenant's entries share a Redis Cluster slot
    locale: str
    answerer: str  # "extractive" | "model": who writes the answer
    model: str
    model_revision: str
    prompt_version: str  # hash of the template texts
    tenant_prompt_version: str  # hash of the tenant's static instructions and examples
    generation_params: dict
    retrieval_version: str  # embedding model + version, index generation, k, thresholds
    policy_version: int

    def as_dict(self) -> dict:
        # shallow: the values are serialised right away (asdict's deep copy was a tenth of an exact hit)
        return {name: getattr(self, name) for name in _SPEC_FIELDS}


_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(AnswerSpec))
