from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models


class Article(models.Model):
    """A help-centre article of one tenant in one locale; its text lives in versions."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    tenant = models.ForeignKey("supportbot.Tenant", on_delete=models.CASCADE, related_name="articles")
    locale = models.CharField(max_length=10)
    external_id = models.CharField(max_length=200)
    title = models.CharField(max_length=300)
    url = models.URLField(max_length=500, blank=True)
    body = models.TextField(help_text="Markdown body; saving a changed body creates a new version.")
    content_hash = models.CharField(max_length=64)
    version = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    source_path = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "locale", "external_id"], name="article_unique_per_tenant_locale")
        ]
        indexes = [models.Index(fields=["tenant", "locale", "status"])]
        ordering = ["tenant", "locale", "external_id"]

    def __str__(self):
        return f"{self.tenant_id}/{self.locale}/{self.external_id} v{self.version}"


class ArticleVersion(models.Model):
    """An immutable snapshot of an article's content."""

    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    title = models.CharField(max_length=300)
    url = models.URLField(max_length=500, blank=True)
    body = models.TextField()
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["article", "version"], name="article_version_unique")]
        ordering = ["article", "-version"]

    def __str__(self):
        return f"{self.article} v{self.version}"


class Chunk(models.Model):
    """A retrievable piece of one article version (split by heading and size)."""

    article_version = models.ForeignKey(ArticleVersion, on_delete=models.CASCADE, related_name="chunks")
    article = models.ForeignKey(Article, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    content_hash = models.CharField(max_length=64, db_index=True)
    is_current = models.BooleanField(default=True, db_index=True)
    # Full-text search in the locale's language (``ingestion.textsearch``): the configuration used, and the vector.
    search_config = models.CharField(max_length=63, blank=True)
    search_vector = SearchVectorField(null=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["article_version", "ordinal"], name="chunk_unique_ordinal")]
        indexes = [GinIndex(fields=["search_vector"], name="chunk_search_vector_gin")]
        ordering = ["article_version", "ordinal"]

    def __str__(self):
        return f"{self.article_version} #{self.ordinal}"


class JobRun(models.Model):
    """One run of a background job (nightly re-embed, purge sweep, generation build, ...): what it
    looked at and what it did, with progress while it runs."""

    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        SKIPPED = "skipped"  # another run of the same job held the lock

    job = models.CharField(max_length=100, db_index=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING, db_index=True)
    task_id = models.CharField(max_length=100, blank=True, help_text="Celery task id, when run by a worker")
    attempt = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    scanned = models.PositiveIntegerField(default=0, help_text="items looked at (e.g. current chunks)")
    changed = models.PositiveIntegerField(default=0, help_text="items found new or changed")
    embedded = models.PositiveIntegerField(default=0, help_text="texts sent through the embedding model")
    cache_hits = models.PositiveIntegerField(default=0, help_text="vectors served by the embedding cache")
    removed = models.PositiveIntegerField(default=0, help_text="stale vectors or entries removed")
    duration_s = models.FloatField(default=0)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    detail = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["job", "status", "started_at"])]

    def __str__(self):
        return f"{self.job} {self.status} @ {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def progress(self) -> float | None:
        if not self.progress_total:
            return None
        return self.progress_done / self.progress_total
