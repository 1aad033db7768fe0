import uuid
from urllib.parse import urlsplit

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models


def validate_origin(value: str) -> None:
    """An origin as browsers send it in the Origin header: scheme://host[:port], nothing more."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or parts.fragment \
            or "@" in parts.netloc or value != value.strip().lower().rstrip("/"):
        raise ValidationError(f"{value!r} is not an origin: write scheme://host[:port] in lower case, without a path")


class Tenant(models.Model):
    """A company using the bot. Everything cached or recorded is scoped to one tenant."""

    class SemanticMode(models.TextChoices):
        OFF = "off", "Off"
        SHADOW = "shadow", "Shadow (decide and record, serve fresh)"
        SERVE = "serve", "Serve"
        ASSIST = "assist", "Assist (near hits become model context)"

    slug = models.SlugField(max_length=50, unique=True)
    name = models.CharField(max_length=200)
    locales = ArrayField(models.CharField(max_length=10), default=list)
    default_locale = models.CharField(max_length=10, default="en")
    instructions = models.TextField(blank=True, help_text="Static instructions placed in the prompt prefix.")
    few_shot = models.JSONField(default=list, blank=True, help_text='[{"question": ..., "answer": ...}]')
    policy_version = models.PositiveIntegerField(
        default=1, help_text="Bump when a policy changes: every older cached answer becomes unreachable at once."
    )
    # A new tenant starts in shadow: the cache decides and records, staff label the would-hits, and
    # only once their precision is shown on the dashboard does someone switch the tenant to serve.
    semantic_mode = models.CharField(max_length=10, choices=SemanticMode.choices, default=SemanticMode.SHADOW)
    handoff_text = models.CharField(
        max_length=300, blank=True, help_text="How a customer reaches a human, shown with fallbacks."
    )
    embed_origins = ArrayField(
        models.CharField(max_length=200, validators=[validate_origin]), default=list, blank=True,
        help_text="Origins of the tenant's own sites (https://shop.example) whose pages may sign a customer "
                  "in to the chat page by posting a customer token (supportbot.auth).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]
        permissions = [("change_semantic_mode", "Can switch the semantic cache mode")]

    def __str__(self):
        return self.slug


class AskEvent(models.Model):
    """One customer question and what the product did with it."""

    class Status(models.TextChoices):
        ANSWERED = "answered"
        NOT_COVERED = "not_covered"
        UNAVAILABLE = "unavailable"
        INTERRUPTED = "interrupted"

    class Layer(models.TextChoices):
        EXACT = "exact"
        SEMANTIC = "semantic"
        NONE = "none"

    request_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Record tables take a row per Ask under load: no index that another one already covers
    # (tenant + created_at serves the tenant), and the customer index holds signed-in Asks only.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="asks", db_index=False)
    locale = models.CharField(max_length=10)
    scope = models.CharField(max_length=20, default="anonymous", help_text="anonymous or customer")
    customer_ref = models.CharField(max_length=128, blank=True)
    question = models.TextField()
    normalized_question = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices)
    serving_layer = models.CharField(max_length=20, choices=Layer.choices, default=Layer.NONE)
    cache_reason = models.CharField(max_length=300, blank=True)
    intent = models.CharField(max_length=40, blank=True)
    category = models.CharField(max_length=20, blank=True, help_text="general, personal, action or time")
    model = models.CharField(max_length=200, blank=True)
    model_revision = models.CharField(max_length=100, blank=True)
    prompt_version = models.CharField(max_length=40, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=20, blank=True)
    error_reason = models.CharField(max_length=200, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    total_ms = models.FloatField(default=0)
    timings = models.JSONField(default=dict, blank=True)
    streamed = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "created_at"]),
            models.Index(fields=["serving_layer", "created_at"]),
            models.Index(fields=["tenant", "customer_ref"], condition=~models.Q(customer_ref=""),
                         name="askevent_customer_idx"),  # export and erasure (supportbot.retention)
        ]

    def __str__(self):
        return f"{self.tenant_id}:{self.request_id}"


class TenantApiKey(models.Model):
    """A tenant's server-to-server credential for the Ask API.

    Only a SHA-256 hash of the key is stored; ``prefix`` (shown in the admin and
    in logs) finds the row without revealing the key. A revoked key stops working
    at once. See ``supportbot.auth``."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, help_text="What the key is for, e.g. 'web shop backend'.")
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False, help_text="sha256 of the whole key, hex")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    timing_breakdown = models.BooleanField(
        default=False, help_text="Answers to this key carry the per-step timings (which caches answered), "
                                 "not only the total. For the tenant's own diagnostics; grant it to staff tools only.")

    class Meta:
        ordering = ["tenant", "-created_at"]
        verbose_name = "tenant API key"

    def __str__(self):
        return f"{self.tenant_id}:{self.prefix}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


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


class StaffMembership(models.Model):
    """Binds a staff user to a tenant whose records they may see and act on.

    A staff user sees only the tenants they are a member of; a superuser, or a user holding
    ``supportbot.view_all_tenants`` (platform staff), sees every tenant. The rule is applied in
    one place, ``supportbot.tenancy``."""

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="tenant_memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="staff_memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["user", "tenant"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="staff_membership_unique")]
        permissions = [("view_all_tenants", "Sees and acts on every tenant (platform staff)")]

    def __str__(self):
        return f"{self.user_id} @ {self.tenant_id}"
