"""The answer spec: every input that shapes an answer, in one structure.

The pipeline builds the model request from an ``AnswerSpec`` and the exact-cache
key is a hash of the same spec's canonical JSON, so nothing that changes an answer
can be left out of the key by accident (a property test checks every field)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from supportbot.redis_client import tenant_tag

# Bump when the key layout itself changes. a1: ``ans:a1:<slug>:<hash>``; a2: the tenant's hash tag
# (``{t:<id>}``, Redis Cluster) in place of the slug. Entries of an older version are never read.
KEY_VERSION = "a2"


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


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


def exact_key(spec: AnswerSpec) -> str:
    """``ans:<key version>:{t:<tenant id>}:<sha256 of the spec's canonical JSON>``, remembered per
    spec (every hit computes the key of a question asked before, and the JSON is most of its cost)."""
    fields = spec.as_dict()
    try:
        memo = tuple(v if type(v) is str else _frozen(v) for v in fields.values())  # strings stand for themselves
    except TypeError:  # a value the memo cannot tell apart from others: computed each time
        return f"{exact_prefix(spec.tenant_id)}{digest(fields)}"
    key = _exact_keys.get(memo)
    if key is None:
        if len(_exact_keys) >= 4096:
            _exact_keys.clear()
        key = _exact_keys[memo] = f"{exact_prefix(spec.tenant_id)}{digest(fields)}"
    return key


def exact_prefix(tenant_id: int) -> str:
    """What every exact key of the tenant starts with (``exact_prefix(t) + "*"`` finds them all)."""
    return f"ans:{KEY_VERSION}:{tenant_tag(tenant_id)}:"


def exact_legacy_pattern(tenant_slug: str) -> str:
    """The tenant's entries of key version a1 (``ans:a1:<slug>:<hash>``, before the hash tag): never
    read again, but they hold answers and their source request until their TTL ends, so erasure
    still finds them (drop once EXACT_CACHE_TTL_S has passed since every deployment upgraded)."""
    return f"ans:a1:{tenant_slug}:*"  # a slug holds no glob characters (SlugField)


_exact_keys: dict[tuple, str] = {}


def _frozen(value):
    """A hashable stand-in for a JSON value that equals another only if their JSON is equal:
    typed, so 1, 1.0 and True stay apart, and floats by repr, so 0.0 and -0.0 do too."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return kind, value
    if kind is float:
        return kind, repr(value)
    if kind is list or kind is tuple:
        return list, tuple(_frozen(v) for v in value)
    if kind is dict:
        return dict, tuple(sorted((_frozen(k), _frozen(v)) for k, v in value.items()))
    raise TypeError(f"no stand-in for {kind.__name__}")
