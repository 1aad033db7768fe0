"""What every layer's receivers share: queue work once the change that caused it is committed."""
from __future__ import annotations

from functools import partial, wraps

from django.db import transaction


def after_commit(func, *args) -> None:
    """Run ``func(*args)`` once the transaction commits; an error is logged, never raised into the
    save. The callable keeps ``func``'s name: Django logs a robust hook's failure by its
    ``__qualname__``, which a bare ``functools.partial`` lacks (the logging itself then raised)."""
    transaction.on_commit(wraps(func)(partial(func, *args)), robust=True)
