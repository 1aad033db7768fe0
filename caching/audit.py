"""The audit trail: every staff action on the caches (labels, reviews, quarantines, threshold and
judge calibrations, mode switches) is one ``AuditLog`` row."""
from __future__ import annotations

from caching.models import AuditLog


def audit(actor, action: str, obj, **details) -> AuditLog:
    """Record a staff action; ``obj`` is a model instance or an ``(object_type, object_id)`` pair."""
    object_type, object_id = obj if isinstance(obj, tuple) else (obj._meta.label, obj.pk)
    return AuditLog.objects.create(actor=actor if getattr(actor, "pk", None) else None, action=action,
                                   object_type=object_type, object_id=str(object_id), details=details)
