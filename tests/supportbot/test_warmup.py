"""A web worker starts with the query embedder loaded and its start-up objects out of the
collector's scans; without a database it still starts."""
from __future__ import annotations

import gc

import pytest
from django.db import DatabaseError, connection


@pytest.fixture
def unfreeze():
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.django_db(transaction=True)
def test_warm_up_loads_the_query_embedder_then_freezes(unfreeze):
    from retrieval.generations import query_embedder
    from supportbot.warmup import warm_up

    gc.unfreeze()
    done = warm_up()
    assert done["embedder_loaded"] and query_embedder(cached=True)._model is not None
    # Django, the app and the model (a frozen object freed since then leaves the count)
    assert done["frozen"] > 10_000 and gc.get_freeze_count() > 10_000
    assert connection.connection is None  # this thread serves no request: nothing left open


def test_without_a_database_the_worker_still_starts(monkeypatch, unfreeze, caplog):
    from retrieval import generations
    from supportbot.warmup import warm_up

    def unreachable(**kwargs):
        raise DatabaseError("connection refused")

    monkeypatch.setattr(generations, "query_embedder", unreachable)
    done = warm_up()
    assert not done["embedder_loaded"] and done["frozen"] > 0
    assert "loads on first use" in caplog.text


def test_a_model_that_cannot_load_is_logged_and_the_worker_still_starts(monkeypatch, unfreeze, caplog):
    from retrieval import generations
    from supportbot.warmup import warm_up

    class Broken:
        @property
        def model(self):
            raise RuntimeError("weights are corrupt")

    monkeypatch.setattr(generations, "query_embedder", lambda **kwargs: Broken())
    assert not warm_up()["embedder_loaded"]
    assert "did not load" in caplog.text and "weights are corrupt" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_warm_up_sets_the_collectors_thresholds_for_a_process_holding_streams(settings, unfreeze):
    from supportbot.warmup import warm_up

    gc.set_threshold(700, 10, 10)
    settings.WEB_GC_THRESHOLDS = [10_000, 20, 10]
    warm_up()
    assert gc.get_threshold() == (10_000, 20, 10)
    gc.set_threshold(700, 10, 10)
    settings.WEB_GC_THRESHOLDS = []  # empty keeps CPython's
    warm_up()
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("value", ["10000,20", "10000,twenty,-1"])
def test_thresholds_that_are_not_three_whole_numbers_stop_the_start(value):
    """A mistyped ``WEB_GC_THRESHOLDS`` is a configuration error at start-up, not silently CPython's."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, WEB_GC_THRESHOLDS=value, DJANGO_SETTINGS_MODULE="supportbot.settings")
    done = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "WEB_GC_THRESHOLDS must be three whole numbers" in done.stderr
    ok = subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                         "print(settings.WEB_GC_THRESHOLDS)"], env=dict(env, WEB_GC_THRESHOLDS="5000,15,10"),
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.strip() == "[5000, 15, 10]", ok.stderr
