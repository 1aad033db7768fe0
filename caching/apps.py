from django.apps import AppConfig


class CachingConfig(AppConfig):
    name = "caching"
    verbose_name = "Answer caches"
