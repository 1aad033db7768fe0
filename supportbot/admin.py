from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User

from caching.audit import audit
from caching.models import AskEvent
from core.models import StaffMembership, Tenant, TenantApiKey
from core.tenancy import AllTenantsOnlyAdmin, TenantScopedAdmin, tenant_scope
from supportbot.auth import api_key_revoke


@admin.register(Tenant)
class TenantAdmin(TenantScopedAdmin):
    list_display = ("slug", "name", "locales", "policy_version", "semantic_mode", "updated_at")
    search_fields = ("slug", "name")
    tenant_path = "pk"

    def get_readonly_fields(self, request, obj=None):
        # The semantic mode changes on the switch page only, through the serve gate (caching.modes).
        fields = ["created_at", "updated_at", "semantic_mode"]
        if obj is not None:
            fields.append("slug")  # fixed once created (core.models.SLUG_FIXED)
        return fields

    def has_add_permission(self, request):
        return tenant_scope(request.user).all and super().has_add_permission(request)


@admin.register(AskEvent)
class AskEventAdmin(TenantScopedAdmin):
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
class TenantApiKeyAdmin(TenantScopedAdmin):
    """Keys are created with ``manage.py apikey create`` (the raw key is shown once); here staff see and
    revoke. A revocation cannot be undone: ``revoked_at`` is read-only, and the action is audited."""

    list_display = ("prefix", "tenant", "name", "created_at", "revoked_at")
    list_filter = ("tenant",)
    fields = ("tenant", "name", "prefix", "created_at", "revoked_at", "scopes")
    readonly_fields = ("tenant", "prefix", "created_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke(self, request, queryset):
        revoked = 0
        for key in queryset.filter(revoked_at__isnull=True).select_related("tenant"):
            if api_key_revoke(key.prefix):
                audit(request.user, "api_key_revoke", key, tenant=key.tenant.slug, prefix=key.prefix)
                revoked += 1
        messages.success(request, f"{revoked} key(s) revoked.")


@admin.register(StaffMembership)
class StaffMembershipAdmin(AllTenantsOnlyAdmin):
    """Which staff user sees which tenant (``core.tenancy``); managed by platform staff."""

    list_display = ("user", "tenant", "created_at")
    list_filter = ("tenant",)
    search_fields = ("user__username", "tenant__slug")
    list_select_related = ("user", "tenant")


class StaffMembershipInline(admin.TabularInline):
    """A staff user's tenants, set where the user is created (platform staff only)."""

    model = StaffMembership
    extra = 1
    fields = ("tenant",)

    def has_view_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_view_permission(request, obj)

    def has_add_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_delete_permission(request, obj)


class UserWithTenantsAdmin(UserAdmin):
    inlines = [*UserAdmin.inlines, StaffMembershipInline]


admin.site.unregister(User)
admin.site.register(User, UserWithTenantsAdmin)
