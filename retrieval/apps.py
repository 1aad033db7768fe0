from django.apps import AppConfig


class RetrievalConfig(AppConfig):
    name = "retrieval"
    verbose_name = "Retrieval"

    def ready(self):
        from ingestion.signals import article_changed
        from retrieval.receivers import article_changed_queue_index_refresh

        article_changed.connect(article_changed_queue_index_refresh,
                                dispatch_uid="retrieval.article_changed_queue_index_refresh")
