from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField


class IndexGeneration(models.Model):
    """All vectors of one embedding model + version. Queries read only the active generation,
    so two models' vectors are never mixed; a model upgrade builds a new generation and
    switches atomically."""

    class Status(models.TextChoices):
        BUILDING = "building"
        ACTIVE = "active"
        RETIRED = "retired"

    model_name = models.CharField(max_length=200)
    model_version = models.CharField(max_length=64)
    dimensions = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.BUILDING)
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["status"], condition=Q(status="active"), name="one_active_generation"),
        ]

    def __str__(self):
        return f"gen {self.pk} {self.model_name}@{self.model_version} ({self.status})"


class ChunkEmbedding(models.Model):
    """The vector of one current chunk in one index generation (tenant and locale
    denormalised so the HNSW search filters without joins)."""

    generation = models.ForeignKey(IndexGeneration, on_delete=models.CASCADE, related_name="embeddings")
    chunk = models.ForeignKey("ingestion.Chunk", on_delete=models.CASCADE, related_name="embeddings")
    article = models.ForeignKey("ingestion.Article", on_delete=models.CASCADE, related_name="+")
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    locale = models.CharField(max_length=10)
    content_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=384)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["generation", "chunk"], name="embedding_unique_per_generation")]
        indexes = [
            HnswIndex(name="chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                      opclasses=["vector_cosine_ops"]),
            models.Index(fields=["generation", "tenant", "locale"]),
        ]
