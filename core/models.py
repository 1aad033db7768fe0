"""Who the product serves and what every layer shares: tenants, their API keys and staff, job runs.

The bottom of the house: every app may import these models; they import no app. The tables keep
the names they were created under (``supportbot_*``, ``ingestion_jobrun``): the models moved here
without moving data (``core/migrations/0001_initial.py``)."""
from urllib.parse import urlsplit

from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models

from core.budgets import LAYERS as BUDGET_LAYERS


def validate_origin(value: str) -> None:
    """An origin as browsers send it in the Origin header: scheme://host[:port], nothing more."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or parts.fragment \
            or "@" in parts.netloc or value != value.strip().lower().rstrip("/"):
        raise ValidationError(f"{value!r} is not an origin: write scheme://host[:port] in lower case, without a path")


SLUG_FIXED = ("A tenant's slug never changes: customer references and customer-token keys derive from it, "
              "so a renamed tenant's earlier records would escape export and erasure. Create a new tenant instead.")


class TenantQuerySet(models.QuerySet):
    def update(self, **kwargs):
        if "slug" in kwargs:
            raise ValidationError(SLUG_FIXED)
        return super().update(**kwargs)


class Tenant(models.Model):
    """A company using the bot. Everything cached or recorded is scoped to one tenant. Its slug is
    fixed once created (``SLUG_FIXED``)."""

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
    serve_target_precision = models.FloatField(
        null=True, blank=True, help_text="The precision the serve gate asks of labelled shadow would-hits (lower 95% "
                                         "bound); empty: CALIBRATION_TARGET_PRECISION.")
    cache_budgets = models.JSONField(
        default=dict, blank=True, help_text='Bytes per cache layer, e.g. {"exact": 33554432, "semantic": 268435456, '
                                            '"search": 16777216, "vectors": 8388608}; a layer left out gets '
                                            'CACHE_BUDGET_BYTES. Over it, the tenant\'s own oldest entries go.')
    handoff_text = models.CharField(
        max_length=300, blank=True, help_text="How a customer reaches a human, shown with fallbacks."
    )
    embed_origins = ArrayField(
        models.CharField(max_length=200, validators=[validate_origin]), default=list, blank=True,
        help_text="Origins of the tenant's own sites (https://shop.example) whose pages may sign a customer "
                  "in to the chat page by posting a customer token (supportbot.auth).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        db_table = "supportbot_tenant"
        ordering = ["slug"]
        permissions = [("change_semantic_mode", "Can switch the semantic cache mode"),
                       ("override_serve_gate", "Can switch to serve below the labelled precision, with a reason")]

    def __str__(self):
        return self.slug

    def clean(self):
        super().clean()
        budgets = self.cache_budgets or {}
        if not isinstance(budgets, dict):
            raise ValidationError({"cache_budgets": "a mapping of layer to bytes"})
        for layer, value in budgets.items():
            if layer not in BUDGET_LAYERS:
                raise ValidationError({"cache_budgets": f"unknown layer {layer!r}: one of {', '.join(BUDGET_LAYERS)}"})
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValidationError({"cache_budgets": f"{layer}: a positive number of bytes"})

    def save(self, *args, **kwargs):
        fields = kwargs.get("update_fields")
        if self.pk is not None and (fields is None or "slug" in fields):
            stored = type(self).objects.filter(pk=self.pk).values_list("slug", flat=True).first()
            if stored is not None and stored != self.slug:
                raise ValidationError(SLUG_FIXED)
        super().save(*args, **kwargs)


class ApiKeyScope(models.TextChoices):
    ASK = "ask", "Ask questions and send feedback"
    CUSTOMER_TOKEN = "customer_token", "Mint customer tokens"
    TIMINGS = "timings", "See the per-step timings"


def api_key_default_scopes() -> list[str]:
    """A key's scopes unless staff choose: what every key could do before scopes existed, less the timings."""
    return [ApiKeyScope.ASK.value, ApiKeyScope.CUSTOMER_TOKEN.value]


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
    scopes = ArrayField(
        models.CharField(max_length=20, choices=ApiKeyScope.choices), default=api_key_default_scopes, blank=True,
        help_text="What the key may do: ask (the Ask API and feedback), customer_token (mint customer tokens), "
                  "timings (answers carry the per-step timings, which caches answered: staff tools only).")

    class Meta:
        db_table = "supportbot_tenantapikey"
        ordering = ["tenant", "-created_at"]
        verbose_name = "tenant API key"

    def __str__(self):
        return f"{self.tenant_id}:{self.prefix}"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def allows(self, scope: str) -> bool:
        return scope in (self.scopes or ())

    @property
    def timing_breakdown(self) -> bool:
        return self.allows(ApiKeyScope.TIMINGS)


class StaffMembership(models.Model):
    """Binds a staff user to a tenant whose records they may see and act on.

    A staff user sees only the tenants they are a member of; a superuser, or a user holding
    ``core.view_all_tenants`` (platform staff), sees every tenant. The rule is applied in
    one place, ``core.tenancy``."""

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="tenant_memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="staff_memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "supportbot_staffmembership"
        ordering = ["user", "tenant"]
        constraints = [models.UniqueConstraint(fields=["user", "tenant"], name="staff_membership_unique")]
        permissions = [("view_all_tenants", "Sees and acts on every tenant (platform staff)")]

    def __str__(self):
        return f"{self.user_id} @ {self.tenant_id}"


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
        db_table = "ingestion_jobrun"
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["job", "status", "started_at"])]

    def __str__(self):
        return f"{self.job} {self.status} @ {self.started_at:%Y-%m-%d %H:%M}"

    @property
    def progress(self) -> float | None:
        if not self.progress_total:
            return None
        return self.progress_done / self.progress_total
