"""Change events. ``article_changed`` fires after commit when an article gets a new
version or is retired; cache purges and index updates listen to it. ``index_refreshed``
fires when the search index holds new or changed articles (after the re-index that follows
a change, or the nightly re-embed): cached answers whose question now finds them are purged."""
from django.dispatch import Signal

# kwargs: article_id (int), tenant_id (int), old_version (int), new_version (int | None), trigger (str)
article_changed = Signal()

# kwargs: article_pks (list[int]: articles created or changed, now searchable), trigger (str)
index_refreshed = Signal()
