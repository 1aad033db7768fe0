"""Knowledge-base changes -> a re-index of the tenant, queued once the change is committed.

``article_changed`` (``ingestion.signals``) is sent after commit by ingestion or by staff saving an
article in the admin. With ``JOBS_INDEX_ON_CHANGE`` a change queues ``index_refresh`` of its tenant on
the ``embedding`` queue; later changes ride along with the queued refresh. A publish that fails
(broker down) is logged and never breaks the save: the nightly re-embed catches up."""
from __future__ import annotations

from django.conf import settings

from core.signals import after_commit
from retrieval.indexing import index_refresh_mark, index_refresh_unmark
from retrieval.tasks import index_refresh


def _queue_index_refresh(tenant_id: int, article_pk: int) -> None:
    if not index_refresh_mark(tenant_id, article_pk):
        return  # a refresh of this tenant is already queued and will see this change
    try:
        index_refresh.apply_async((tenant_id,))
    except Exception:
        index_refresh_unmark(tenant_id)
        raise


def article_changed_queue_index_refresh(sender, *, article_id: int, tenant_id: int, **kwargs) -> None:
    if settings.JOBS_INDEX_ON_CHANGE:
        after_commit(_queue_index_refresh, tenant_id, article_id)
