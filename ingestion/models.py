from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models


class Article(models.Model):
    """A help-centre article of one tenant in one locale; its text lives in versions."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="articles")
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
