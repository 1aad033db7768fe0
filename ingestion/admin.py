from django import forms
from django.contrib import admin, messages

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
class ArticleAdmin(admin.ModelAdmin):
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
class ChunkAdmin(admin.ModelAdmin):
    list_display = ("article", "ordinal", "heading", "is_current", "content_hash")
    list_filter = ("is_current",)
    search_fields = ("text",)
    list_select_related = ("article",)
