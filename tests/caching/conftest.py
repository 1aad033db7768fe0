"""Fixtures of the cache tests that need no database."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from caching import guards  # noqa: E402


@pytest.fixture(scope="module")
def learned():
    """The semantic judge built for the current data and recipe (``var/judge``)."""
    judge = guards.learned_judge()
    assert judge is not None, "the judge is not built: manage.py train_judge (the tests build theirs in tests/conftest.py)"
    return judge


@pytest.fixture
def small_redis(settings, tmp_path):
    """A redis-server of this test's own (to be filled to its memory limit), as ``REDIS_URL``."""
    from core.redis_client import reset_redis_state
    from core.servers import start_redis

    proc = start_redis(data_dir=tmp_path)
    settings.REDIS_URL = f"redis://127.0.0.1:{proc.port}/0"
    reset_redis_state()
    yield proc
    proc.kill()
    proc.wait(timeout=10)
    reset_redis_state()
