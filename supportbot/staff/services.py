"""Staff actions on tenants (thresholds and review live in ``caching``; the semantic mode, its gate
and its fallback in ``caching.modes``)."""
from __future__ import annotations

import logging

from django.db import transaction

from caching import tasks
from caching.calibration import calibration_upload_create, calibration_upload_unqueued
from caching.models import CalibrationUpload
from caching.modes import semantic_mode_set

log = logging.getLogger(__name__)

__all__ = ["calibration_upload_queue", "semantic_mode_set"]


def calibration_upload_queue(path, file_name: str, user, *, target: float, include_db: bool,
                             tenant_ids) -> CalibrationUpload:
    """Store a checked pair file (``caching.calibration.calibration_upload_create``; raises on bad
    input, storing nothing) and queue its calibration on a worker once committed."""
    with transaction.atomic():
        upload = calibration_upload_create(path, file_name, user, target=target, include_db=include_db,
                                           tenant_ids=tenant_ids)
        transaction.on_commit(lambda: _queue(upload.pk))
    return upload


def _queue(upload_id: int) -> None:
    try:
        tasks.calibration_upload_run.apply_async((upload_id,))
    except Exception as exc:  # noqa: BLE001 - the broker is down: the upload says so
        log.exception("could not queue calibration upload %s", upload_id)
        calibration_upload_unqueued(upload_id, str(exc))
