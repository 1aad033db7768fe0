"""Content gaps: the questions a tenant's customers asked that its help centre does not answer.

Read from the Ask records (``AskEvent`` with status ``not_covered``: the bot handed off), so the
records' retention (``records_purge_older_than``) and a customer's erasure (``customer_erase``) remove
them here too; nothing is copied elsewhere. The questions of one tenant and locale are grouped by
meaning (cosine of their embeddings at least ``CONTENT_GAP_SIMILARITY``, greedily, most asked first)
and the groups ranked by how often they were asked: what a support team writes its next article from.
The questions are customer text: they are embedded without the embedding cache.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from caching.models import AskEvent
from retrieval.embeddings import embed_texts
from retrieval.generations import query_embedder


@dataclass
class Gap:
    question: str  # the group's most asked wording
    asked: int = 0  # asks in the group
    wordings: list[tuple[str, int]] = field(default_factory=list)  # (question, times asked), most first
    last_asked: object = None


def content_gaps(tenant_id: int, locale: str, start, end, *, limit: int | None = None) -> list[Gap]:
    """The handed-off questions of a tenant and locale in [start, end), grouped and ranked."""
    limit = limit or settings.CONTENT_GAP_MAX_ASKS
    rows = list(AskEvent.objects.filter(tenant_id=tenant_id, locale=locale, status=AskEvent.Status.NOT_COVERED,
                                        created_at__gte=start, created_at__lt=end)
                .order_by("-created_at").values_list("question", "normalized_question", "created_at")[:limit])
    if not rows:
        return []
    counts: Counter[str] = Counter()
    wording: dict[str, str] = {}
    last: dict[str, object] = {}
    for question, normalized, created in rows:
        key = normalized or question
        counts[key] += 1
        wording.setdefault(key, question)
        last.setdefault(key, created)
    keys = [k for k, _ in counts.most_common()]
    vectors = embed_texts([wording[k] for k in keys], embedder=query_embedder(cached=True), cache=None)
    gaps: list[Gap] = []
    centres: list[np.ndarray] = []
    for key, vector in zip(keys, vectors):
        sims = [float(vector @ c) for c in centres]
        best = int(np.argmax(sims)) if sims else -1
        if best >= 0 and sims[best] >= settings.CONTENT_GAP_SIMILARITY:
            gap = gaps[best]
        else:
            gap = Gap(question=wording[key])
            gaps.append(gap)
            centres.append(vector)
        gap.asked += counts[key]
        gap.wordings.append((wording[key], counts[key]))
        gap.last_asked = max(gap.last_asked, last[key]) if gap.last_asked else last[key]
    return sorted(gaps, key=lambda g: (-g.asked, g.question))
