"""Cited-version checks shared by every answer layer."""
from __future__ import annotations

from ingestion.models import Article


def stale_citations(citations: list[dict]) -> list[dict]:
    """The citations whose article is retired or has moved past the cited version (one query)."""
    if not citations:
        return []
    wanted = {int(c["article_pk"]): int(c["version"]) for c in citations}
    current = dict(Article.objects.filter(pk__in=wanted, status=Article.Status.ACTIVE).values_list("pk", "version"))
    return [c for c in citations if current.get(int(c["article_pk"])) != int(c["version"])]
