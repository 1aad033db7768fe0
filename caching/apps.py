from django.apps import AppConfig


class CachingConfig(AppConfig):
    name = "caching"
    verbose_name = "Answer caches"

    def ready(self):
        from caching.receivers import article_changed_queue_jobs
        from ingestion.signals import article_changed

        article_changed.connect(article_changed_queue_jobs, dispatch_uid="caching.article_changed_queue_jobs")
