"""Which tenants a staff user may see and act on: the one rule every staff page and admin applies.

A staff user is bound to tenants by ``StaffMembership`` rows. A superuser, or a user holding
``core.view_all_tenants`` (platform staff), sees every tenant; anyone else sees only their
memberships, and a staff user with none sees nothing (fail closed). Three pieces apply the rule:

* ``tenant_scope(user)`` -> ``TenantScope``: the selector. ``scope.ids`` is the user's tenant ids
  (None: all tenants), ``scope.filter(queryset, path)`` narrows any queryset by the path from its
  model to the tenant (``"tenant"``, ``"ask__tenant"``, ``"pk"`` for ``Tenant`` itself), and
  ``scope.allows(tenant_id)`` answers an object-level question.
* ``scoped_object_or_404(request, queryset, path, **lookup)``: the view helper. An object of
  another tenant is a 404, the same answer as an object that does not exist, so ids of other
  tenants cannot be probed.
* ``TenantScopedAdmin``: the admin mixin (set ``tenant_path``). It filters the changelist, the
  change, delete and history pages and every action's queryset, checks objects in the
  ``has_*_permission`` hooks, limits tenant choices in forms and the tenant list filter.
  ``AllTenantsOnlyAdmin`` is for records that are not any one tenant's (the audit log, job
  runs, memberships): only users who see every tenant reach them.

Global settings that change every tenant at once (similarity thresholds) need ``scope.all``.
This module sits at the bottom: it imports Django and ``supportbot.models`` only.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib import admin
from django.http import Http404
from django.shortcuts import get_object_or_404

from core.models import StaffMembership, Tenant

ALL_TENANTS_PERMISSION = "core.view_all_tenants"
_CACHE_ATTR = "_ask_tenant_scope"


@dataclass(frozen=True)
class TenantScope:
    """The tenants one staff user may see. ``ids`` None means every tenant."""

    ids: frozenset[int] | None

    @property
    def all(self) -> bool:
        return self.ids is None

    def allows(self, tenant_id) -> bool:
        return self.ids is None or tenant_id in self.ids

    def filter(self, queryset, path: str = "tenant"):
        """``queryset`` narrowed to this scope; ``path`` leads from its model to the tenant."""
        if self.ids is None:
            return queryset
        return queryset.filter(**{f"{path}__in": sorted(self.ids)})

    def tenants(self):
        """The tenants in scope, by slug."""
        return self.filter(Tenant.objects.order_by("slug"), "pk")

    def require(self, tenant_id) -> None:
        """404 unless ``tenant_id`` is in scope (the same answer as for a missing object)."""
        if not self.allows(tenant_id):
            raise Http404("no such object")


def staff_tenant_ids(user) -> frozenset[int] | None:
    """The ids of the tenants ``user`` may see; None for every tenant. Empty for anyone who is not
    an active staff member."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    if user.is_superuser or user.has_perm(ALL_TENANTS_PERMISSION):
        return None
    if not user.is_staff:
        return frozenset()
    return frozenset(StaffMembership.objects.filter(user=user).values_list("tenant_id", flat=True))


def tenant_scope(user) -> TenantScope:
    """``user``'s scope, read once per request (kept on the user object the request holds)."""
    scope = getattr(user, _CACHE_ATTR, None)
    if scope is None:
        scope = TenantScope(staff_tenant_ids(user))
        try:
            setattr(user, _CACHE_ATTR, scope)
        except AttributeError:  # AnonymousUser and friends
            pass
    return scope


def scoped_object_or_404(request, queryset, path: str = "tenant", **lookup):
    """The object matching ``lookup`` among those of the request user's tenants; 404 otherwise."""
    return get_object_or_404(tenant_scope(request.user).filter(queryset, path), **lookup)


class ScopedTenantListFilter(admin.RelatedFieldListFilter):
    """The admin's tenant filter, offering only the tenants the user sees."""

    def field_choices(self, field, request, model_admin):
        return [(t.pk, str(t)) for t in tenant_scope(request.user).tenants()]


class TenantScopedAdmin(admin.ModelAdmin):
    """A model admin whose every list, page, action and form is limited to the user's tenants.

    ``tenant_path``: the lookup path from the model to its tenant (``"pk"`` on ``Tenant``). Rows
    whose path ends in no tenant (a nullable one left empty) are shown only to users who see
    every tenant."""

    tenant_path = "tenant"
    # Foreign keys whose choices are narrowed to the user's tenants by a path other than ``tenant``
    # (field name -> path from the related model to its tenant); a related model with a ``tenant``
    # foreign key is narrowed by that without being listed.
    related_tenant_paths: dict[str, str] = {}

    def get_queryset(self, request):
        return tenant_scope(request.user).filter(super().get_queryset(request), self.tenant_path)

    def _in_scope(self, request, obj) -> bool:
        if obj is None or tenant_scope(request.user).all:
            return True
        return self.get_queryset(request).filter(pk=obj.pk).exists()

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) and self._in_scope(request, obj)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._in_scope(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._in_scope(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        related = db_field.related_model
        if related is Tenant:
            kwargs["queryset"] = tenant_scope(request.user).tenants()
        else:
            path = self.related_tenant_paths.get(db_field.name)
            if path is None and any(f.name == "tenant" and f.related_model is Tenant
                                    for f in related._meta.concrete_fields):
                path = "tenant"
            if path is not None:
                base = kwargs.get("queryset", related._default_manager.all())
                kwargs["queryset"] = tenant_scope(request.user).filter(base, path)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_filter(self, request):
        return [(f, ScopedTenantListFilter) if f == "tenant" else f for f in super().get_list_filter(request)]


class AllTenantsOnlyAdmin(admin.ModelAdmin):
    """Records that belong to no single tenant: only users who see every tenant reach them."""

    def has_module_permission(self, request):
        return tenant_scope(request.user).all and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_view_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return tenant_scope(request.user).all and super().has_delete_permission(request, obj)

    def has_add_permission(self, request, *args):
        return tenant_scope(request.user).all and super().has_add_permission(request, *args)
