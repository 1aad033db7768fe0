"""Cited-version checks shared by every answer layer.

A cached answer is served only while every article version it cites is still the current
version of an active article of the same tenant. The current versions of a tenant's
articles are kept in each process (``core.localcache``) under the tenant's
``articles`` revision, which every article save or delete bumps (``article_saved``, connected
in ``caching.apps``):
the check on a cache hit reads Redis, not the database."""
from __future__ import annotations

from django.db import connection

from core.localcache import MISSING, RevisionedCache
from ingestion.models import Article

article_versions: RevisionedCache[dict[int, int]] = RevisionedCache("articles")


def _current_versions_load(tenant_id: int) -> dict[int, int]:
    """{article pk: version} of the tenant's active articles (one query, no ORM: it is on the hit path)."""
    meta, q = Article._meta, connection.ops.quote_name
    sql = (f"SELECT {q(meta.pk.column)}, {q(meta.get_field('version').column)} FROM {q(meta.db_table)} "
           f"WHERE {q(meta.get_field('tenant').column)} = %s AND {q(meta.get_field('status').column)} = %s")
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant_id, Article.Status.ACTIVE])
        return dict(cursor.fetchall())


def current_versions(tenant_id: int, *, rev=MISSING) -> dict[int, int]:
    """The tenant's active articles and their current versions. ``rev``: the tenant's
    ``article_versions`` revision if the caller read it in a round trip of its own."""
    return article_versions.get(int(tenant_id), lambda: _current_versions_load(int(tenant_id)), rev=rev)


def stale_citations(tenant_id: int, citations: list[dict], *, rev=MISSING) -> list[dict]:
    """The citations whose article is retired, of another tenant, or has moved past the cited version."""
    if not citations:
        return []
    current = current_versions(tenant_id, rev=rev)
    return [c for c in citations if current.get(int(c["article_pk"])) != int(c["version"])]


def article_saved(sender, instance: Article, **kwargs) -> None:
    article_versions.bump(instance.tenant_id)
