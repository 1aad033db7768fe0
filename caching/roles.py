"""Staff roles: which Django permissions a support agent and a cache admin hold.

A support agent reads the dashboard, labels sampled hits and works the review queue. Only a
cache admin changes what the caches do: similarity thresholds (``caching.change_thresholdsetting``)
and a tenant's semantic mode (``core.change_semantic_mode``)."""
from __future__ import annotations

from django.contrib.auth.models import Group, Permission
from django.db import transaction

SUPPORT_AGENTS = "Support agents"
CACHE_ADMINS = "Cache admins"

AGENT_PERMISSIONS = (
    "caching.view_hourlyrollup", "caching.view_reviewitem", "caching.change_reviewitem", "caching.label_hits",
    "caching.add_label", "caching.view_label", "caching.view_sampledhit", "caching.view_feedback",
    "caching.view_labeledpair", "caching.view_semanticentry", "caching.view_cachedecision",
    "caching.view_thresholdsetting", "caching.view_askevent", "core.view_tenant",
)
ADMIN_PERMISSIONS = AGENT_PERMISSIONS + (
    "caching.add_thresholdsetting", "caching.change_thresholdsetting", "caching.change_labeledpair",
    "caching.view_auditlog", "caching.change_semanticentry", "caching.view_purgerecord",
    "core.change_semantic_mode", "core.change_tenant", "caching.view_semanticmodechange",
)
ROLES = {SUPPORT_AGENTS: AGENT_PERMISSIONS, CACHE_ADMINS: ADMIN_PERMISSIONS}


def _permission(name: str) -> Permission:
    app_label, codename = name.split(".", 1)
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@transaction.atomic
def roles_setup() -> dict[str, int]:
    """Create or reset the groups to exactly their permissions (idempotent)."""
    out = {}
    for name, perms in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set([_permission(p) for p in perms])
        out[name] = len(perms)
    return out
