"""A hop to the async server's pools (``serving._run_in_request``) takes care of the thread's
database connection as Django does at a request's start and end, but makes the health check's
round trip (a ``SELECT 1`` before the next query) only on a thread idle for a while: a fresh ask
makes three hops, and a busy pool thread's connection was used a moment ago."""
from __future__ import annotations

import pytest
from django.db import connection, connections

from supportbot import serving

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as on a pool thread


def hop(fn) -> None:
    serving._run_in_request(fn, (), {})


def query() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@pytest.fixture
def health_checks(monkeypatch):
    """The health checks made on this thread's connection, counted."""
    monkeypatch.setattr(serving._thread, "last_hop", float("-inf"), raising=False)
    # a fresh connection: one opened more than CONN_MAX_AGE ago by an earlier test is closed as obsolete at the
    # next hop, without a health check (the count then depended on how long the suite had run)
    connection.close()
    query()  # the connection open
    checks, wrapper = [], type(connections["default"])
    usable = wrapper.is_usable
    monkeypatch.setattr(wrapper, "is_usable", lambda self: checks.append(1) or usable(self))
    return checks


def test_a_busy_threads_hops_skip_the_health_check_and_an_idle_threads_first_hop_makes_it(health_checks,
                                                                                             monkeypatch):
    hop(query)  # the thread's first hop: checked, as Django checks at a request's start
    hop(query)
    hop(query)  # right after the last one: not checked
    assert len(health_checks) == 1
    monkeypatch.setattr(serving, "HEALTH_CHECK_IDLE_S", 0.0)  # every thread counts as idle
    hop(query)
    assert len(health_checks) == 2


def test_a_connection_that_failed_is_closed_before_a_busy_threads_next_hop(health_checks, monkeypatch):
    hop(query)
    connection.errors_occurred = True  # a query of the last hop failed, and the server is gone
    monkeypatch.setattr(type(connections["default"]), "is_usable", lambda self: False)
    hop(lambda: None)
    assert connection.connection is None  # closed: the next query opens a new one
    hop(query)
    assert connection.connection is not None
