"""The automatic fallback: a tenant in serve whose labelled semantic hits are wrong, or whose
customers say No to them, past the bounds, goes back to shadow by itself; the change is recorded,
the dashboard shows it and /metrics carries the series the alert reads."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from caching import modes
from caching.models import Feedback, SemanticModeChange
from core import metrics
from core.models import Tenant
from supportbot.schedules import DEFAULT_SCHEDULES
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def serving(db, settings):
    settings.SEMANTIC_FALLBACK_WRONG_LABELS, settings.SEMANTIC_FALLBACK_WRONG_SHARE = 2, 0.05
    settings.SEMANTIC_FALLBACK_CUSTOMER_NO, settings.SEMANTIC_FALLBACK_NO_SHARE = 3, 0.25
    return factories.tenant("small-shop", semantic_mode=Tenant.SemanticMode.SERVE)


def mode_of(tenant) -> str:
    return Tenant.objects.get(pk=tenant.pk).semantic_mode


def fell_back_gauge(client) -> dict[str, float]:
    text = client.get("/metrics").content.decode()
    return {s.labels["tenant"]: s.value for f in text_string_to_metric_families(text)
            if f.name == "ask_semantic_fell_back" for s in f.samples}


def test_a_small_tenants_two_wrong_labels_switch_it_back_with_the_alerts_series(client, serving):
    before = metrics.SEMANTIC_FALLBACKS.labels("small-shop", "wrong_labels")._value.get()
    for _ in range(8):
        factories.labelled_hit(serving, "correct")
    factories.labelled_hit(serving, "wrong")
    assert modes.fallback_check(serving.pk) is None and mode_of(serving) == "serve"  # 1 of 9: within bounds
    assert fell_back_gauge(client) == {}
    factories.labelled_hit(serving, "wrong")
    change = modes.fallback_check(serving.pk)
    assert mode_of(serving) == "shadow"
    assert (change.kind, change.previous, change.mode, change.changed_by) == ("fallback", "serve", "shadow", None)
    assert (change.figures["wrong"], change.figures["labelled"], change.figures["cause"]) == (2, 10, "wrong_labels")
    assert "2 of 10 labelled semantic hits wrong" in change.reason
    assert metrics.SEMANTIC_FALLBACKS.labels("small-shop", "wrong_labels")._value.get() == before + 1
    assert fell_back_gauge(client) == {"small-shop": 1.0}  # AskSemanticFellBackToShadow fires on it
    assert modes.fallback_check(serving.pk) is None  # in shadow now: nothing more to do


def test_a_wrong_share_under_the_bound_keeps_serving(serving):
    for _ in range(60):
        factories.labelled_hit(serving, "correct")
    for _ in range(2):
        factories.labelled_hit(serving, "wrong")  # 2 of 62: 3.2 %, under 5 %
    assert modes.fallback_check(serving.pk) is None and mode_of(serving) == "serve"


def test_labels_of_hits_before_the_last_switch_to_serve_do_not_count(serving, settings):
    settings.SERVE_GATE_MIN_LABELS = 0
    serving.semantic_mode, serving.serve_target_precision = Tenant.SemanticMode.SHADOW, 0.0  # the gate is open
    serving.save()
    factories.labelled_hit(serving, "wrong")
    factories.labelled_hit(serving, "wrong")
    assert modes.semantic_mode_set(serving, "serve", None).kind == "manual"
    assert modes.fallback_check(serving.pk) is None and mode_of(serving) == "serve"


def test_customers_no_on_semantic_hits_switch_it_back(serving):
    for helpful in (False, True, False, True, False):
        decision = factories.cache_decision(serving, "semantic", "hit")
        Feedback.objects.create(ask=decision.ask, helpful=helpful)
    fresh = factories.cache_decision(serving, "exact", "miss")
    Feedback.objects.create(ask=fresh.ask, helpful=False)  # a No on a fresh answer is not the layer's
    change = modes.fallback_check(serving.pk)
    assert change is not None and change.figures["cause"] == "customer_no"
    assert (change.figures["no"], change.figures["verdicts"]) == (3, 5)
    assert mode_of(serving) == "shadow"


def test_the_dashboard_shows_the_fallback(client, serving, cache_admin):
    factories.labelled_hit(serving, "wrong")
    factories.labelled_hit(serving, "wrong")
    modes.fallback_check(serving.pk)
    client.force_login(cache_admin)
    page = client.get("/admin/ask/").content.decode()
    assert 'id="fell-back"' in page and "small-shop" in page and "Automatic fallback to shadow" in page


def test_beat_checks_every_minute():
    schedule = next(s for s in DEFAULT_SCHEDULES if s.task == "caching.tasks.semantic_fallback_check")
    assert schedule.crontab == {"minute": "*"} and "hour" not in schedule.crontab


def test_the_fallback_change_is_in_the_history(serving):
    factories.labelled_hit(serving, "wrong")
    factories.labelled_hit(serving, "wrong")
    modes.fallback_check_all()
    assert modes.fell_back_tenants() == ["small-shop"]
    assert [c.kind for c in modes.recent_changes(serving.pk)] == [SemanticModeChange.Kind.FALLBACK]
