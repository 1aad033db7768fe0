"""The one small interface every cache layer implements.

A layer answers ``lookup`` with a ``LayerResult``: the decision to record and, on a
hit, the value. ``store`` admits a verified value; ``purge_article`` removes every
entry that cites an article and returns how many went. Layers never raise for an
unavailable backend: they return a ``skipped`` decision and the Ask carries on
through the slow path."""
from __future__ import annotations

from dataclasses import dataclass, field

from supportbot.redis_client import key_tag, tenant_tag


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


@dataclass
class LayerResult:
    layer: str
    disposition: str  # hit | miss | bypass | shadow_hit | assist | skipped | stored | refused
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
        return self.disposition == "hit"

    def record_fields(self, **extra) -> dict:
        """The decision's fields for its ``CacheDecision`` row (the served value is not recorded)."""
        fields = {k: v for k, v in self.__dict__.items() if k != "value"}
        fields.update(extra)
        return fields


class CacheLayer:
    name: str = ""

    def purge_article(self, article_pk: int, tenant_id: int | None = None) -> int:
        """Remove every entry citing the article; ``tenant_id``: the article's tenant, where the
        layer's reverse index lives (None: an article gone from the database, looked for everywhere)."""
        raise NotImplementedError


class CitationIndex:
    """A Redis layer's reverse index from an article to the entries citing it, one set a tenant:
    ``cite:<kind>:{t:<tenant>}:<article pk>``. It carries the tenant's hash tag, as the entries it
    lists do, so storing an entry with its citations and purging them are commands on one slot of
    a cluster."""

    def __init__(self, kind: str):
        self.kind = kind

    def key(self, article_pk, tenant_id: int) -> str:
        return self._key(article_pk, tenant_tag(tenant_id))

    def key_for(self, article_pk, entry_key: str) -> str:
        """The set of the entry's tenant (read from the entry key's hash tag)."""
        return self._key(article_pk, key_tag(entry_key))

    def pattern(self, article_pk="*") -> str:
        """Every tenant's set of the article (of every article with ``*``), for SCAN."""
        return self._key(article_pk, "{t:*}")

    def sets(self, r, article_pk: int, tenant_id: int | None) -> list[str]:
        """The article's sets: its tenant's, or, with the tenant unknown (the article row is gone),
        every one a SCAN of every shard finds."""
        if tenant_id is not None:
            return [self.key(article_pk, tenant_id)]
        return [k.decode() for k in r.scan_iter(match=self.pattern(article_pk), count=1000)]

    def _key(self, article_pk, tag: str) -> str:
        return f"cite:{self.kind}:{tag}:{article_pk}"
