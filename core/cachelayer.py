"""The one interface every cache layer implements: exact answers, semantic answers, search results
(``caching.layers``) and query embeddings (``retrieval.embeddings``, below caching, which is why the
interface lives here at the bottom).

``lookup`` and ``store`` take what their layer keys on (a spec's key, a semantic scope and vector,
a search key, a text) and return a ``LayerResult``: the decision to record, with one ``Disposition``,
and on a hit the value. A layer never raises for an unavailable backend on the request path: it
returns a ``skipped`` decision and the Ask carries on through the slow path. The maintenance calls
are the same for all four:

* ``purge_article(article_pk, tenant_id=None)``: every entry built from an article goes; returns how
  many. ``tenant_id``, the article's tenant, names where a Redis layer's reverse index is (its hash
  tag); None (the article row is gone) looks everywhere.
* ``purge_scope(scope)``: a tenant's whole share of the cache, or (``scope.request_ids`` set) what
  one customer's Asks put there (erasure); returns how many went. Raises the backend's error: the
  caller (erasure, a bench clean-up) aborts or retries.
* ``stats(tenant_id)``: how many live entries the tenant has, for the dashboard.

Only a layer's own module spells its keys (``tests/test_layers.py``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from django.db import models


class Disposition(models.TextChoices):
    """What a layer did with one Ask (``CacheDecision.disposition``)."""

    HIT = "hit"
    MISS = "miss"
    BYPASS = "bypass"
    SHADOW_HIT = "shadow_hit"
    ASSIST = "assist"
    SKIPPED = "skipped"  # the layer was unavailable (e.g. Redis down) or off
    STORED = "stored"
    REFUSED = "refused"


@dataclass
class LayerResult:
    """One layer's decision for one Ask: what is recorded as its ``CacheDecision``, and the value on a hit."""

    layer: str
    disposition: str  # a Disposition value
    reason: str = ""
    value: object = None
    key_version: str = ""
    candidate: str = ""
    candidate_question: str = ""
    filters: dict = field(default_factory=dict)
    similarity: float | None = None
    threshold: float | None = None
    signature_difference: dict | None = None
    entry_age_s: float | None = None
    intent: str = ""
    judge_version: str = ""  # the semantic judge artefact that judged the candidate ("" when none ran)
    judge_probability: float | None = None  # its calibrated P(same answer) for the best candidate; None when it did not run
    saved_tokens: int = 0
    saved_ms: float = 0.0
    lookup_ms: float = 0.0

    @property
    def hit(self) -> bool:
        return self.disposition == Disposition.HIT

    def record_fields(self, **extra) -> dict:
        """The decision's fields for its ``CacheDecision`` row (the served value is not recorded)."""
        fields = {k: v for k, v in self.__dict__.items() if k != "value"}
        fields.update(extra)
        # the row holds 300 characters; a reason quoting a long (resolved) question is cut, not refused
        fields["reason"] = (fields.get("reason") or "")[:300]
        return fields


@dataclass(frozen=True)
class CacheScope:
    """Whose entries a ``purge_scope`` removes: the tenant's, or only what one customer's Asks put
    in the caches (their request ids, their questions as asked and normalised)."""

    tenant_id: int
    tenant_slug: str
    request_ids: frozenset[str] | None = None
    questions: tuple[str, ...] = ()
    normalized: tuple[str, ...] = ()

    @property
    def customer(self) -> bool:
        return self.request_ids is not None


@dataclass(frozen=True)
class LayerStats:
    layer: str
    entries: int | None  # live entries of the tenant; None when the backend is unavailable


@runtime_checkable
class CacheLayer(Protocol):
    name: str

    def lookup(self, *args, **kwargs) -> LayerResult: ...

    def store(self, *args, **kwargs) -> LayerResult: ...

    def purge_article(self, article_pk: int, tenant_id: int | None = None) -> int: ...

    def purge_scope(self, scope: CacheScope) -> int: ...

    def stats(self, tenant_id: int) -> LayerStats: ...
