from django.apps import AppConfig


class CachingConfig(AppConfig):
    name = "caching"
    verbose_name = "Answer caches"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from caching.citations import article_saved
        from caching.models import Feedback, Label
        from caching.receivers import (article_changed_queue_purge, feedback_saved_check_fallback,
                                       generation_switched_retire, index_refreshed_purge, label_saved_check_fallback)
        from ingestion.models import Article
        from ingestion.signals import article_changed
        from retrieval.signals import generation_switched, index_refreshed

        article_changed.connect(article_changed_queue_purge, dispatch_uid="caching.article_changed_queue_purge")
        index_refreshed.connect(index_refreshed_purge, dispatch_uid="caching.index_refreshed_purge")
        generation_switched.connect(generation_switched_retire, dispatch_uid="caching.generation_switched_retire")
        # any write to an article moves its tenant's versions revision, whatever path it took
        post_save.connect(article_saved, sender=Article, dispatch_uid="caching.article_saved")
        post_delete.connect(article_saved, sender=Article, dispatch_uid="caching.article_deleted")
        # a wrong label or a customer's No on a semantic hit checks the tenant's fallback bounds
        post_save.connect(label_saved_check_fallback, sender=Label, dispatch_uid="caching.label_saved_check_fallback")
        post_save.connect(feedback_saved_check_fallback, sender=Feedback,
                          dispatch_uid="caching.feedback_saved_check_fallback")
