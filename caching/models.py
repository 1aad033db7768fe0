import uuid

from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from core.cachelayer import Disposition


class AskEvent(models.Model):
    """One customer question and what the product did with it."""

    class Status(models.TextChoices):
        ANSWERED = "answered"
        NOT_COVERED = "not_covered"
        UNAVAILABLE = "unavailable"
        INTERRUPTED = "interrupted"
        NEEDS_CONTEXT = "needs_context"  # a follow-up sent without its conversation: asked to clarify

    class ServingLayer(models.TextChoices):
        """Which answer layer served the Ask (none: a fresh answer); ``ANSWER_LAYERS`` are the first two."""

        EXACT = "exact"
        SEMANTIC = "semantic"
        NONE = "none"

    request_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    # Record tables take a row per Ask under load: no index that another one already covers
    # (tenant + created_at serves the tenant), and the customer index holds signed-in Asks only.
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="asks", db_index=False)
    locale = models.CharField(max_length=10)
    scope = models.CharField(max_length=20, default="anonymous", help_text="anonymous or customer")
    customer_ref = models.CharField(max_length=128, blank=True)
    question = models.TextField(help_text="the resolved question: what the caches, retrieval and answerer read")
    normalized_question = models.TextField(blank=True)
    # The customer's last message as sent, and how it became ``question`` (supportbot.conversation).
    message = models.TextField(blank=True)
    resolution = models.CharField(max_length=20, blank=True, help_text="single, standalone, rewritten, model, "
                                  "unresolved (no shared cache) or clarify")
    resolution_detail = models.CharField(max_length=300, blank=True)
    answer = models.TextField(blank=True)
    citations = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices)
    serving_layer = models.CharField(max_length=20, choices=ServingLayer.choices, default=ServingLayer.NONE)
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
        db_table = "supportbot_askevent"  # the table it was created under (moved here without moving data)
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "created_at"]),
            models.Index(fields=["serving_layer", "created_at"]),
            models.Index(fields=["tenant", "customer_ref"], condition=~models.Q(customer_ref=""),
                         name="askevent_customer_idx"),  # export and erasure (supportbot.retention)
        ]

    def __str__(self):
        return f"{self.tenant_id}:{self.request_id}"


class SemanticEntry(models.Model):
    """A verified answer that may be served to a question meaning the same thing."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        QUARANTINED = "quarantined"  # staff confirmed a wrong hit
        PURGED = "purged"  # a cited article changed
        RETIRED = "retired"  # expired, superseded or embedded with an old model

    class Source(models.TextChoices):
        GENERATED = "generated"
        STAFF = "staff"

    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="semantic_entries")
    locale = models.CharField(max_length=10)
    question = models.TextField()
    normalized_question = models.TextField()
    embedding = VectorField(dimensions=384)
    embedding_model = models.CharField(max_length=200)
    embedding_version = models.CharField(max_length=64)
    answer = models.TextField()
    citations = models.JSONField(default=list, help_text="[{article_pk, article_id, title, url, version}]")
    intent = models.CharField(max_length=40)
    signature = models.JSONField(default=dict)
    judge_version = models.CharField(max_length=40, blank=True, help_text="the semantic judge in force when stored")
    exact_key = models.CharField(max_length=100, blank=True)
    prompt_version = models.CharField(max_length=40)
    model = models.CharField(max_length=200)
    model_revision = models.CharField(max_length=100, blank=True)
    policy_version = models.PositiveIntegerField()
    retrieval_version = models.CharField(max_length=40)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.GENERATED)
    source_ask = models.ForeignKey("AskEvent", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)
    hit_count = models.PositiveIntegerField(default=0)
    last_hit_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "semantic entries"
        # No index over every tenant's vectors: large tenants get an HNSW index each (caching/tenant_indexes.py,
        # outside the migration state like the data they index); the others are read through this B-tree.
        indexes = [
            models.Index(fields=["tenant", "locale", "status"]),
        ]

    def __str__(self):
        return f"entry {self.pk} ({self.tenant_id}/{self.locale})"  # no question: the admin log keeps this


class EntryCitation(models.Model):
    """Reverse index: which semantic entries cite which article version."""

    entry = models.ForeignKey(SemanticEntry, on_delete=models.CASCADE, related_name="citation_rows")
    article = models.ForeignKey("ingestion.Article", on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["article", "version"])]


class CacheDecision(models.Model):
    """What one layer decided for one Ask: the raw material of every staff number."""

    class Layer(models.TextChoices):
        ELIGIBILITY = "eligibility"
        EXACT = "exact"
        SEMANTIC = "semantic"
        # The search-result cache (``caching.layers.search``). Recorded as "retrieval" since before it had
        # its name: decision rows, rollups and the metrics' ``layer`` label hold that value, so it stays.
        SEARCH = "retrieval", "Search"
        EMBEDDING = "embedding"
        PREFIX = "prefix"
        ADMISSION = "admission"

    Disposition = Disposition  # the one enum of what a layer did (core.cachelayer)

    ask = models.ForeignKey("AskEvent", on_delete=models.CASCADE, related_name="decisions")
    # The Ask's tenant, copied for filtering: the Ask's own key already ties the row to it, so the
    # database checks no second key per row (decisions are written for every Ask, hits included),
    # and (tenant, layer, created_at) serves the tenant.
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+", db_index=False,
                               db_constraint=False)
    layer = models.CharField(max_length=12, choices=Layer.choices)
    disposition = models.CharField(max_length=12, choices=Disposition.choices)
    reason = models.CharField(max_length=300, blank=True)
    key_version = models.CharField(max_length=100, blank=True)
    candidate = models.CharField(max_length=100, blank=True, help_text="entry id or key of the candidate")
    candidate_question = models.TextField(blank=True)
    filters = models.JSONField(default=dict, blank=True)
    similarity = models.FloatField(null=True, blank=True)
    threshold = models.FloatField(null=True, blank=True)
    signature_difference = models.JSONField(null=True, blank=True)
    entry_age_s = models.FloatField(null=True, blank=True)
    intent = models.CharField(max_length=40, blank=True)
    judge_version = models.CharField(max_length=40, blank=True, help_text="the semantic judge artefact that judged")
    judge_probability = models.FloatField(null=True, blank=True, help_text="the judge's P(same answer), best candidate")
    saved_tokens = models.PositiveIntegerField(default=0)
    saved_ms = models.FloatField(default=0)
    lookup_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "layer", "created_at"]),
            models.Index(fields=["layer", "disposition", "created_at"]),
        ]

    def __str__(self):
        return f"{self.layer}:{self.disposition}"


# The layers that serve an answer (a hit's decision, an Ask's serving layer); the others decide only.
ANSWER_LAYERS = (CacheDecision.Layer.EXACT, CacheDecision.Layer.SEMANTIC)


class ThresholdSetting(models.Model):
    """A versioned per-intent similarity threshold; the newest row of an intent is in force."""

    intent = models.CharField(max_length=40)
    value = models.FloatField()
    version = models.PositiveIntegerField()
    # the embedding model the value was measured on: on another model it is not used (``caching.thresholds``)
    embedding_model = models.CharField(max_length=200, default="")
    embedding_version = models.CharField(max_length=64, default="")
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["intent", "version"], name="threshold_version_unique")]
        ordering = ["intent", "-version"]

    def __str__(self):
        return f"{self.intent} v{self.version} = {self.value} ({self.embedding_model} {self.embedding_version})"


class PurgeRecord(models.Model):
    """One citation-based purge: which article version was purged, from where, how many entries."""

    class Trigger(models.TextChoices):
        # The first two are the triggers of ``ingestion.signals.article_changed``.
        ADMIN = "admin", "staff edit in the admin"
        INGEST = "ingest", "knowledge-base import"
        SWEEP = "sweep", "nightly sweep (a missed event)"
        REINDEX = "reindex", "search results re-purged after re-indexing"
        RETRIEVAL = "retrieval", "answers whose question now retrieves a new or changed article"
        MANUAL = "manual"

    article = models.ForeignKey("ingestion.Article", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    article_pk = models.BigIntegerField(db_index=True, help_text="kept when the article row is deleted")
    tenant = models.ForeignKey("core.Tenant", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="+")
    version = models.PositiveIntegerField(null=True, blank=True,
                                          help_text="the article's version after the change; empty: removed")
    trigger = models.CharField(max_length=20, choices=Trigger.choices)
    removed_exact = models.PositiveIntegerField(default=0)
    removed_semantic = models.PositiveIntegerField(default=0)
    removed_search = models.PositiveIntegerField(default=0)
    duration_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["article_pk", "created_at"])]

    def __str__(self):
        return f"purge article {self.article_pk} v{self.version} ({self.trigger})"

    @property
    def removed_total(self):
        return self.removed_exact + self.removed_semantic + self.removed_search


# --------------------------------------------------------------------------- staff review (issue 6)
# Customer feedback, the wrong-hit review queue, sampled-hit labels, labelled pairs for
# calibration, the audit log of staff actions and hourly roll-ups for the dashboard.

class ReasonCode(models.TextChoices):
    """Why a cached answer was wrong for the new question (the labelling keys 1-9, in order). The
    first eight are wrong hits: the cache judged two questions alike that are not. The last is a wrong
    answer: it was wrong for its own question too (generation or admission failed, not the cache
    judge); it never becomes a negative calibration pair and is counted apart from wrong hits."""

    ENTITY = "entity"
    CONDITION = "condition"
    NEGATION = "negation"
    TIME = "time"
    SCOPE = "scope"
    INTENT = "intent"
    STALE_SOURCE = "stale_source", "Stale source"
    OTHER = "other"
    ANSWER_WRONG = "answer_wrong", "Answer wrong for its own question"


class Feedback(models.Model):
    """The customer's "Did this answer your question?"; the last click counts."""

    ask = models.OneToOneField("AskEvent", on_delete=models.CASCADE, related_name="feedback")
    helpful = models.BooleanField()
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.ask_id}: {'yes' if self.helpful else 'no'}"


class SampledHit(models.Model):
    """A cache hit (or shadow would-hit) picked at record time for labelling."""

    decision = models.OneToOneField(CacheDecision, on_delete=models.CASCADE, related_name="sample")
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    stratum = models.CharField(max_length=12, help_text="exact, semantic or shadow: the sample-rate key")
    intent = models.CharField(max_length=40, blank=True)
    why = models.CharField(max_length=40, help_text="rate or intent minimum")
    labeled = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["labeled", "created_at"])]

    def __str__(self):
        return f"sample {self.stratum}/{self.intent} decision {self.decision_id}"


class Label(models.Model):
    """A staff verdict on one cache decision. The newest label of a decision counts."""

    class Verdict(models.TextChoices):
        CORRECT = "correct"
        WRONG = "wrong"

    class Source(models.TextChoices):
        SAMPLE = "sample", "labelling queue"
        REVIEW = "review", "review queue"

    decision = models.ForeignKey(CacheDecision, on_delete=models.CASCADE, related_name="labels")
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    reason = models.CharField(max_length=20, choices=ReasonCode.choices, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices)
    labeler = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["decision", "-created_at"])]

    def __str__(self):
        return f"{self.verdict} ({self.reason or '-'}) on decision {self.decision_id}"


class ReviewItem(models.Model):
    """A cache hit someone (customer, labeller or the second opinion) thinks was wrong, or a fresh
    answer a customer said did not help (``layer`` "fresh"; its decision is the Ask's admission)."""

    class Source(models.TextChoices):
        FEEDBACK = "feedback", "customer said no"
        SAMPLE = "sample", "sampled hit labelled wrong"
        AUTO_FLAG = "auto_flag", "automatic flag"

    FRESH = "fresh"  # ``layer`` of an item about a fresh answer (no cache served it)

    class Status(models.TextChoices):
        OPEN = "open"
        CONFIRMED_WRONG = "confirmed_wrong", "confirmed wrong"
        DISMISSED = "dismissed", "not wrong"
        CORRECTED = "corrected"

    source = models.CharField(max_length=10, choices=Source.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN, db_index=True)
    reason = models.CharField(max_length=20, choices=ReasonCode.choices, blank=True)
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    ask = models.ForeignKey("AskEvent", on_delete=models.CASCADE, related_name="review_items")
    decision = models.ForeignKey(CacheDecision, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    entry = models.ForeignKey(SemanticEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    layer = models.CharField(max_length=12, help_text="the layer that served (or would have served) the answer")
    note = models.TextField(blank=True, help_text="what flagged it (e.g. the second opinion's disagreement)")
    corrected_entry = models.ForeignKey(SemanticEntry, null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["created_at"]
        constraints = [
            # one open item per decision: a second "no" or flag on the same hit adds nothing to review
            models.UniqueConstraint(fields=["decision"], condition=Q(status="open"), name="review_open_per_decision"),
        ]
        permissions = [("label_hits", "Can label sampled cache hits")]

    def __str__(self):
        return f"{self.get_source_display()}: {self.ask_id} ({self.status})"


class LabeledPair(models.Model):
    """(cached question, new question, should_hit): the calibration set. Negatives confirmed in
    review are kept here after their entry is gone, but no longer than the decision they came from
    (both questions are customers' words: retention and erasure take the pair with the decision)."""

    class Source(models.TextChoices):
        LABEL = "label", "labelled sample"
        REVIEW = "review", "review queue"
        FILE = "file", "pair file"
        VERIFIER = "verifier", "model verifier (not a staff label)"

    # Staff verdicts; the verifier's own labels train the judge but never calibrate it.
    STAFF_SOURCES = (Source.LABEL, Source.REVIEW)

    tenant = models.ForeignKey("core.Tenant", null=True, blank=True, on_delete=models.CASCADE,
                               related_name="+")
    decision = models.OneToOneField(CacheDecision, null=True, blank=True, on_delete=models.CASCADE,
                                    related_name="labeled_pair")
    cached_question = models.TextField()
    new_question = models.TextField()
    should_hit = models.BooleanField()
    reason = models.CharField(max_length=20, choices=ReasonCode.choices, blank=True)
    source = models.CharField(max_length=8, choices=Source.choices)
    similarity = models.FloatField(null=True, blank=True)
    embedding_version = models.CharField(max_length=64, blank=True, help_text="model version the similarity is from")
    judge_probability = models.FloatField(null=True, blank=True, help_text="the judge's probability at decision time")
    judge_version = models.CharField(max_length=64, blank=True, help_text="the judge the probability is from")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{'+' if self.should_hit else '-'} pair {self.pk} ({self.source})"  # no question: the admin log keeps this


class AuditLog(models.Model):
    """Who did what to which object, and when: every staff action on caches and thresholds."""

    actor = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=40, db_index=True)
    object_type = models.CharField(max_length=60)
    object_id = models.CharField(max_length=64)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_id} {self.action} {self.object_type}:{self.object_id}"


class SemanticModeChange(models.Model):
    """Every switch of a tenant's semantic mode, with the figures it was made on: staff through the
    switch page (the serve gate's labelled precision, and the reason when someone overrode it) or
    the layer itself falling back to shadow (``caching.modes``)."""

    class Kind(models.TextChoices):
        MANUAL = "manual", "Staff"
        OVERRIDE = "override", "Staff, serve gate overridden"
        FALLBACK = "fallback", "Automatic fallback to shadow"

    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    previous = models.CharField(max_length=10)
    mode = models.CharField(max_length=10)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    reason = models.TextField(blank=True, help_text="an override's reason, or the bound a fallback passed")
    figures = models.JSONField(default=dict, blank=True, help_text="the gate's or the fallback's counts")
    changed_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["tenant", "-created_at"])]

    def __str__(self):
        return f"{self.tenant_id}: {self.previous} -> {self.mode} ({self.kind})"


class HourlyRollup(models.Model):
    """Decision counts and savings per hour, tenant, layer, disposition and intent.

    The pseudo-layer ``generation`` (disposition ``answered``) sums fresh model answers, so the
    dashboard knows what a model call costs per intent without reading the Ask table."""

    hour = models.DateTimeField()
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    layer = models.CharField(max_length=12)
    disposition = models.CharField(max_length=12)
    intent = models.CharField(max_length=40, blank=True)
    count = models.PositiveIntegerField(default=0)
    saved_tokens = models.BigIntegerField(default=0)
    saved_ms = models.FloatField(default=0)
    lookup_ms = models.FloatField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    completion_tokens = models.BigIntegerField(default=0)
    cached_tokens = models.BigIntegerField(default=0)
    model_ms = models.FloatField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hour", "tenant", "layer", "disposition", "intent"],
                                               name="rollup_hour_unique")]
        indexes = [models.Index(fields=["hour", "layer"]), models.Index(fields=["tenant", "hour"])]

    def __str__(self):
        return f"{self.hour:%Y-%m-%d %H}h {self.tenant_id} {self.layer}/{self.disposition} {self.intent}: {self.count}"


class CacheChurn(models.Model):
    """Entries that left a cache before anyone removed them on purpose, per hour, tenant and layer:
    ``evicted`` by the tenant's cap (``EXACT_CACHE_MAX_KEYS_PER_TENANT``,
    ``SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT``), ``expired`` at the end of their lifetime."""

    class Kind(models.TextChoices):
        EVICTED = "evicted"
        EXPIRED = "expired"

    hour = models.DateTimeField()
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    layer = models.CharField(max_length=12)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["hour", "tenant", "layer", "kind"], name="churn_hour_unique")]

    def __str__(self):
        return f"{self.hour:%Y-%m-%d %H}h {self.tenant_id} {self.layer} {self.kind}: {self.count}"


# --------------------------------------------------------------------------- learned judge (issue 12)

class PairVerification(models.Model):
    """A near miss checked off the request path: would a cached entry's answer have been right for
    a new question? The model server answers yes or no (``caching.learning``). An approved pair is
    an *alias* of its entry: the next asker of the same question in the entry's scope is served
    the entry, for as long as the entry itself may be served (purges and scope changes reach the
    alias through its entry; erasing the asker's records deletes it with its Ask)."""

    class Verdict(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        ERROR = "error", "error (counts as a miss)"

    entry = models.ForeignKey(SemanticEntry, on_delete=models.CASCADE, related_name="verifications")
    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    source_ask = models.ForeignKey("AskEvent", null=True, blank=True, on_delete=models.CASCADE,
                                   related_name="+", help_text="the Ask whose near miss queued the check")
    question = models.TextField()
    normalized_question = models.TextField()
    judge_probability = models.FloatField(null=True, blank=True)
    judge_version = models.CharField(max_length=64, blank=True)
    verdict = models.CharField(max_length=10, choices=Verdict.choices, default=Verdict.PENDING)
    detail = models.CharField(max_length=300, blank=True, help_text="the verifier's reply, or why it failed")
    verifier_model = models.CharField(max_length=200, blank=True)
    verify_ms = models.FloatField(null=True, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    verified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # the dedupe: one check per entry and question, ever
            models.UniqueConstraint(fields=["entry", "normalized_question"], name="verification_pair_unique"),
        ]
        indexes = [models.Index(fields=["tenant", "normalized_question"], condition=Q(verdict="approved"),
                                name="verification_alias_idx")]

    def __str__(self):
        return f"{self.verdict}: entry {self.entry_id} / check {self.pk}"  # no question: the admin log keeps this


class CalibrationUpload(models.Model):
    """A pair file staff uploaded on the calibration page: checked and stored by the web request,
    embedded and calibrated by a worker (``caching.calibration.calibration_upload_run``), whose job
    run it names. The file's pairs are dropped once calibrated; the curves stay."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    file_name = models.CharField(max_length=200)
    pairs = models.JSONField(default=list, blank=True, help_text="[cached, new, should_hit] of the file, until calibrated")
    file_pairs = models.PositiveIntegerField(default=0, help_text="pairs of the file within one tenant and locale")
    crossed = models.PositiveIntegerField(default=0, help_text="pairs across tenants or locales, left out")
    include_db = models.BooleanField(default=False, help_text="with the staff's labelled pairs")
    tenant_ids = models.JSONField(null=True, blank=True, help_text="the labelled pairs of these tenants (null: all)")
    target = models.FloatField()
    calibrated_pairs = models.PositiveIntegerField(default=0)
    curves = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    job_run = models.ForeignKey("core.JobRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"calibration upload {self.pk} ({self.status})"


class JudgeThreshold(models.Model):
    """A tenant's judge-probability threshold recalibrated from its staff labels (versioned; the
    newest row of the tenant for the judge version that scored a candidate is in force)."""

    tenant = models.ForeignKey("core.Tenant", on_delete=models.CASCADE, related_name="+")
    judge_version = models.CharField(max_length=64)
    # the judge reads the embedding cosine: a value measured on another embedding model is not used
    embedding_model = models.CharField(max_length=200, default="")
    embedding_version = models.CharField(max_length=64, default="")
    value = models.FloatField()
    version = models.PositiveIntegerField()
    target = models.FloatField(help_text="the precision it was chosen for")
    positives = models.PositiveIntegerField(default=0)
    negatives = models.PositiveIntegerField(default=0)
    served = models.PositiveIntegerField(default=0, help_text="labelled pairs at or above the value")
    precision = models.FloatField(null=True, blank=True)
    precision_low = models.FloatField(null=True, blank=True, help_text="lower end of the 95% Wilson interval")
    coverage = models.FloatField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "version"], name="judge_threshold_version_unique")]
        ordering = ["tenant", "-version"]

    def __str__(self):
        return f"{self.tenant_id} judge {self.judge_version} v{self.version} = {self.value}"
