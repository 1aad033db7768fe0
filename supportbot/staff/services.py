"""Staff actions on tenants (thresholds and review live in ``caching``; the semantic mode, its gate
and its fallback in ``caching.modes``)."""
from __future__ import annotations

from caching.modes import semantic_mode_set

__all__ = ["semantic_mode_set"]
