from django import forms
from django.contrib import admin, messages

from core.models import JobRun
from core.tenancy import AllTenantsOnlyAdmin, TenantScopedAdmin
from ingestion.models import Article, ArticleVersion, Chunk
from ingestion.services import article_edit


class ArticleForm(forms.ModelForm):
    class Meta:
        model = Article
        fields = ("title", "url", "body")


class VersionInline(admin.TabularInline):
    model = ArticleVersion
    fields = ("version", "title", "content_hash", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Article)
class ArticleAdmin(TenantScopedAdmin):
    """Editing an article here creates a new version and purges every cached answer citing it."""

    form = ArticleForm
    list_display = ("external_id", "tenant", "locale", "title", "version", "status", "updated_at")
    list_filter = ("tenant", "locale", "status")
    search_fields = ("external_id", "title")
    inlines = [VersionInline]
    list_select_related = ("tenant",)

    def has_add_permission(self, request):
        return False  # articles come from ingestion

    def save_model(self, request, obj, form, change):
        outcome = article_edit(Article.objects.get(pk=obj.pk), title=form.cleaned_data["title"],
                               body=form.cleaned_data["body"], url=form.cleaned_data["url"])
        messages.info(request, f"Article {outcome}; cached answers citing it are being purged.")


@admin.register(Chunk)
class ChunkAdmin(TenantScopedAdmin):
    tenant_path = "article__tenant"
    related_tenant_paths = {"article": "tenant", "article_version": "article__tenant"}
    list_display = ("article", "ordinal", "heading", "is_current", "content_hash")
    list_filter = ("is_current",)
    search_fields = ("text",)
    list_select_related = ("article",)


@admin.register(JobRun)
class JobRunAdmin(AllTenantsOnlyAdmin):
    """Every background job run (nightly re-embed, re-index after a change, purge sweep, model upgrade):
    read-only; a running one shows its progress (reload the page)."""

    list_display = ("started_at", "job", "status", "progress_display", "scanned", "changed", "embedded",
                    "cache_hits", "removed", "duration_display", "attempt")
    list_filter = ("job", "status")
    date_hierarchy = "started_at"
    readonly_fields = [f.name for f in JobRun._meta.fields]
    show_full_result_count = False

    @admin.display(description="progress")
    def progress_display(self, obj):
        if obj.status == JobRun.Status.RUNNING and obj.progress_total:
            return f"{obj.progress_done}/{obj.progress_total} ({obj.progress:.0%})"
        return "-" if obj.status != JobRun.Status.RUNNING else "starting"

    @admin.display(description="duration", ordering="duration_s")
    def duration_display(self, obj):
        return f"{obj.duration_s:.1f} s"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
