"""What the knowledge base announces to the layers above it (they subscribe; ingestion imports none of
them). ``article_changed`` fires after commit when an article gets a new version or is retired: the
search index re-indexes its tenant (``retrieval.receivers``) and the caches purge what cites it
(``caching.receivers``)."""
from django.dispatch import Signal

# kwargs: article_id (int), tenant_id (int), old_version (int), new_version (int | None), trigger (str)
article_changed = Signal()
