from django.db import models


class PrefixCacheSample(models.Model):
    """One scrape of a model server's /metrics: cumulative prefix-cache counters (tokens) and KV usage.

    Counters are cumulative since the server started; the hit rate of a period is the difference
    of two samples of the same target (a drop means the server restarted)."""

    target = models.CharField(max_length=300, help_text="model server base URL")
    scraped_at = models.DateTimeField(auto_now_add=True, db_index=True)
    ok = models.BooleanField(default=True)
    error = models.CharField(max_length=300, blank=True)
    prefix_cache_queries = models.FloatField(null=True, blank=True)
    prefix_cache_hits = models.FloatField(null=True, blank=True)
    kv_cache_usage_perc = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-scraped_at"]
        indexes = [models.Index(fields=["target", "scraped_at"])]

    def __str__(self):
        return f"{self.target} @ {self.scraped_at:%Y-%m-%d %H:%M}"

    @property
    def hit_rate(self) -> float | None:
        if not self.prefix_cache_queries or self.prefix_cache_hits is None:
            return None
        return self.prefix_cache_hits / self.prefix_cache_queries
