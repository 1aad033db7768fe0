"""Change events. ``article_changed`` fires after commit when an article gets a new
version or is retired; cache purges and index updates listen to it."""
from django.dispatch import Signal

# kwargs: article_id (int), tenant_id (int), old_version (int), new_version (int | None), trigger (str)
article_changed = Signal()
