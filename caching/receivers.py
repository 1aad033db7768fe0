"""Change events -> background work, queued only once the change is committed.

``article_changed`` is sent after commit (ingestion, or staff saving an article in the
admin). A changed or removed article queues a purge of everything citing it on the
``purge`` queue, and a re-index of its tenant on the ``embedding`` queue. A publish that
fails (broker down) is logged and never breaks the save: the nightly sweep and the
nightly re-embed catch up.

``index_refreshed`` is sent once new or changed articles are searchable (the re-index above, or
the nightly re-embed): it queues a purge of the cached answers whose question now retrieves one
of them (``caching.purge.purge_retrieving``), answers that cite none of them and would still be
served otherwise.
"""
from __future__ import annotations

import logging
from functools import partial, wraps

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


def _after_commit(func, *args) -> None:
    """Run ``func(*args)`` once the transaction commits; an error is logged, never raised into the
    save. The callable keeps ``func``'s name: Django logs a robust hook's failure by its
    ``__qualname__``, which a bare ``functools.partial`` lacks (the logging itself then raised)."""
    transaction.on_commit(wraps(func)(partial(func, *args)), robust=True)


def _queue_purge(article_pk: int, version: int | None, trigger: str) -> None:
    from caching.tasks import purge_article

    purge_article.apply_async((article_pk, version, trigger))


def _queue_index_refresh(tenant_id: int, article_pk: int) -> None:
    from ingestion.jobs import index_refresh_mark, index_refresh_unmark
    from ingestion.tasks import index_refresh

    if not index_refresh_mark(tenant_id, article_pk):
        return  # a refresh of this tenant is already queued and will see this change
    try:
        index_refresh.apply_async((tenant_id,))
    except Exception:
        index_refresh_unmark(tenant_id)
        raise


def article_changed_queue_jobs(sender, *, article_id: int, tenant_id: int, old_version: int,
                               new_version: int | None, trigger: str, **kwargs) -> None:
    if old_version:  # a new article has nothing citing it yet
        _after_commit(_queue_purge, article_id, new_version, trigger)
    if settings.JOBS_INDEX_ON_CHANGE:
        _after_commit(_queue_index_refresh, tenant_id, article_id)


def _queue_purge_retrieving(article_pks: list[int], trigger: str) -> None:
    from caching.tasks import purge_retrieving

    try:
        purge_retrieving.apply_async((article_pks, trigger))
    except Exception:  # the broker is down: the entries expire by TTL; logged, never fails the job
        log.exception("could not queue the purge of answers retrieving articles %s", article_pks[:20])


def index_refreshed_queue_purge(sender, *, article_pks: list[int], trigger: str, **kwargs) -> None:
    _after_commit(_queue_purge_retrieving, list(article_pks), trigger)
