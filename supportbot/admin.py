from django.contrib import admin

from supportbot.models import AskEvent, Tenant, TenantApiKey


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "locales", "policy_version", "semantic_mode", "updated_at")
    search_fields = ("slug", "name")

    def get_readonly_fields(self, request, obj=None):
        # Switching the semantic cache mode is an admin decision (a support agent may edit the rest).
        fields = ["created_at", "updated_at"]
        if not request.user.has_perm("supportbot.change_semantic_mode"):
            fields.append("semantic_mode")
        return fields


@admin.register(AskEvent)
class AskEventAdmin(admin.ModelAdmin):
    list_display = ("created_at", "tenant", "locale", "status", "serving_layer", "intent", "short_question",
                    "total_ms", "cached_tokens")
    list_filter = ("tenant", "status", "serving_layer", "category", "locale")
    search_fields = ("question", "request_id")
    date_hierarchy = "created_at"
    list_select_related = ("tenant",)
    show_full_result_count = False

    def short_question(self, obj):
        return obj.question[:80]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TenantApiKey)
class TenantApiKeyAdmin(admin.ModelAdmin):
    """Keys are created with ``manage.py apikey create`` (the raw key is shown once); here staff see and revoke."""

    list_display = ("prefix", "tenant", "name", "created_at", "revoked_at")
    list_filter = ("tenant",)
    fields = ("tenant", "name", "prefix", "created_at", "revoked_at", "timing_breakdown")
    readonly_fields = ("tenant", "prefix", "created_at")
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        from supportbot.auth import api_key_revoke

        for prefix in queryset.filter(revoked_at__isnull=True).values_list("prefix", flat=True):
            api_key_revoke(prefix)
