"""What retrieval announces to the layers above it (they subscribe; retrieval imports none of them).

``index_refreshed`` fires when the search index holds new or changed articles (the re-index that
follows a change, or the nightly re-embed); it is sent synchronously inside the job, so a receiver's
error fails the job and it retries. ``generation_switched`` fires inside the transaction that makes
a new index generation (embedding model + version) the active one."""
from django.dispatch import Signal

# kwargs: article_pks (list[int]: articles created or changed, now searchable), trigger (str: reindex | reembed)
index_refreshed = Signal()

# kwargs: generation_id (int), model (str), model_version (str), previous_generation_id (int | None)
generation_switched = Signal()
