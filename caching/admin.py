from django.contrib import admin

from caching.models import PurgeRecord
from core.tenancy import AllTenantsOnlyAdmin, TenantScopedAdmin


@admin.register(PurgeRecord)
class PurgeRecordAdmin(TenantScopedAdmin):
    """Every citation-based purge: which article version, what triggered it, entries removed per layer."""

    list_display = ("created_at", "article_pk", "article", "version", "trigger", "removed_exact",
                    "removed_semantic", "removed_search", "duration_ms")
    list_filter = ("trigger", "tenant")
    search_fields = ("article__external_id", "article__title")
    date_hierarchy = "created_at"
    list_select_related = ("article",)
    readonly_fields = [f.name for f in PurgeRecord._meta.fields]
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# --------------------------------------------------------------------------- staff review (issue 6)
# Plain model admins are the read-only record; the working pages (dashboard, review queue,
# labelling, calibration) are under /admin/ask/ (supportbot.staff).

from caching.models import AuditLog, Feedback, HourlyRollup, Label, LabeledPair, ReviewItem, SampledHit  # noqa: E402


class ReadOnlyAdmin(admin.ModelAdmin):
    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ReviewItem)
class ReviewItemAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    """Resolved and open items; act on them in the review queue (/admin/ask/queue/), where it is audited."""

    list_display = ("created_at", "source", "status", "reason", "layer", "tenant", "ask", "resolved_by", "resolved_at")
    list_filter = ("status", "source", "layer", "reason", "tenant")
    date_hierarchy = "created_at"
    list_select_related = ("tenant", "ask", "resolved_by")
    raw_id_fields = ("ask", "decision", "entry", "corrected_entry")


@admin.register(Feedback)
class FeedbackAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    tenant_path = "ask__tenant"
    list_display = ("created_at", "ask", "helpful", "comment")
    list_filter = ("helpful",)
    search_fields = ("comment", "ask__question")
    raw_id_fields = ("ask",)


@admin.register(Label)
class LabelAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    tenant_path = "decision__tenant"
    list_display = ("created_at", "decision", "verdict", "reason", "source", "labeler")
    list_filter = ("verdict", "reason", "source")
    date_hierarchy = "created_at"
    raw_id_fields = ("decision",)


@admin.register(SampledHit)
class SampledHitAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    list_display = ("created_at", "stratum", "intent", "why", "labeled", "tenant")
    list_filter = ("stratum", "labeled", "why", "intent", "tenant")
    raw_id_fields = ("decision",)


@admin.register(LabeledPair)
class LabeledPairAdmin(TenantScopedAdmin):
    """The calibration set; staff may correct a pair's label here."""

    list_display = ("created_at", "should_hit", "reason", "source", "similarity", "cached_question", "new_question")
    list_filter = ("should_hit", "reason", "source")
    search_fields = ("cached_question", "new_question")
    raw_id_fields = ("decision",)
    readonly_fields = ("similarity", "embedding_version", "decision", "tenant")


@admin.register(AuditLog)
class AuditLogAdmin(AllTenantsOnlyAdmin, ReadOnlyAdmin):
    """Staff actions across tenants (the details name tenants and entries): platform staff only."""

    list_display = ("created_at", "actor", "action", "object_type", "object_id", "details")
    list_filter = ("action", "object_type")
    search_fields = ("object_id", "actor__username")
    date_hierarchy = "created_at"
    list_select_related = ("actor",)


@admin.register(HourlyRollup)
class HourlyRollupAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    list_display = ("hour", "tenant", "layer", "disposition", "intent", "count", "saved_tokens", "saved_ms")
    list_filter = ("layer", "disposition", "tenant")
    date_hierarchy = "hour"


# --------------------------------------------------------------------------- learned judge (issue 12)

from caching.models import JudgeThreshold, PairVerification  # noqa: E402


@admin.register(PairVerification)
class PairVerificationAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    """Near misses the verifier checked off the request path; an approved one is an alias of its entry."""

    list_display = ("created_at", "tenant", "entry", "question", "judge_probability", "verdict", "verify_ms",
                    "verifier_model")
    list_filter = ("verdict", "tenant")
    search_fields = ("question",)
    date_hierarchy = "created_at"
    list_select_related = ("tenant", "entry")
    raw_id_fields = ("entry", "source_ask")


@admin.register(JudgeThreshold)
class JudgeThresholdAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    """Per-tenant judge thresholds recalibrated from staff labels (the staff calibration page makes them)."""

    list_display = ("tenant", "version", "judge_version", "embedding_model", "embedding_version", "value", "precision",
                    "precision_low", "coverage", "positives", "negatives", "created_by", "created_at")
    list_filter = ("tenant", "judge_version", "embedding_model")


from caching.models import SemanticModeChange  # noqa: E402


@admin.register(SemanticModeChange)
class SemanticModeChangeAdmin(TenantScopedAdmin, ReadOnlyAdmin):
    """Every switch of a tenant's semantic mode; switch on the staff pages' switch page (/admin/ask/mode/<tenant>)."""

    list_display = ("created_at", "tenant", "previous", "mode", "kind", "changed_by", "reason")
    list_filter = ("kind", "mode", "tenant")
    date_hierarchy = "created_at"
    list_select_related = ("tenant", "changed_by")
