"""Celery tasks of retrieval (queue ``embedding``): embedding-model upgrades."""
from __future__ import annotations

from celery import shared_task

from retrieval import generations
from supportbot.locks import LockHeld
from supportbot.tasks import RETRY_POLICY


@shared_task(bind=True, **RETRY_POLICY)
def generation_upgrade(self, model_dir: str, model_name: str) -> int | None:
    """Build the index generation of another embedding model, then switch to it atomically."""
    try:
        return generations.generation_upgrade(generations.embedder_load(model_dir, model_name),
                                              task_id=self.request.id or "", attempt=self.request.retries + 1).pk
    except LockHeld:
        return None


@shared_task(ignore_result=True, **RETRY_POLICY)
def generation_drop(generation_id: int) -> int:
    """A grace period after a switch: delete the retired generation's vectors."""
    return generations.generation_drop(generation_id)
