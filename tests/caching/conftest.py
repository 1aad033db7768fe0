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
