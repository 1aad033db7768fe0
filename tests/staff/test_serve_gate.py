"""The gate before serve: a tenant switches from shadow to serve only when the lower 95% (Wilson)
bound of its labelled shadow would-hits' precision reaches its target, from enough labels; an
override needs its own permission and a reason, and is recorded with the figures."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User

from caching.models import AuditLog, SemanticModeChange
from caching.modes import serve_gate
from core.models import Tenant
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def shadow_tenant(db, settings):
    settings.SERVE_GATE_MIN_LABELS = 30
    return factories.tenant("gate-co", semantic_mode=Tenant.SemanticMode.SHADOW, serve_target_precision=0.9)


def label_would_hits(tenant, correct: int, wrong: int = 0) -> None:
    for _ in range(correct):
        factories.labelled_hit(tenant, "correct", stratum="shadow")
    for _ in range(wrong):
        factories.labelled_hit(tenant, "wrong", stratum="shadow")


def mode_of(tenant) -> str:
    return Tenant.objects.get(pk=tenant.pk).semantic_mode


def test_serve_is_refused_below_the_bound_and_the_page_shows_why(client, cache_admin, shadow_tenant):
    label_would_hits(shadow_tenant, correct=30)  # 30/30: lower bound 88.6 %, below the 90 % target
    gate = serve_gate(shadow_tenant)
    assert (gate.correct, gate.labelled, gate.open) == (30, 30, False)
    assert gate.low == pytest.approx(30 / (30 + 1.959964 ** 2), abs=1e-4)
    client.force_login(cache_admin)
    response = client.post("/admin/ask/mode/gate-co", {"mode": "serve"})
    assert response.status_code == 409
    page = response.content.decode()
    assert "the serve gate is closed" in page and "88.6%" in page and "90.0%" in page
    assert mode_of(shadow_tenant) == "shadow"
    assert not SemanticModeChange.objects.filter(tenant=shadow_tenant).exists()


def test_too_few_labels_close_the_gate_whatever_their_precision(shadow_tenant):
    shadow_tenant.serve_target_precision = 0.5
    label_would_hits(shadow_tenant, correct=12)  # bound 75.8 % over a 50 % target, but 12 < 30 labels
    gate = serve_gate(shadow_tenant)
    assert gate.low > 0.5 and not gate.open and "at least 30" in gate.verdict


def test_serve_is_allowed_above_the_bound_and_recorded_with_its_figures(client, cache_admin, shadow_tenant):
    label_would_hits(shadow_tenant, correct=40)  # 40/40: lower bound 91.2 %
    client.force_login(cache_admin)
    page = client.get("/admin/ask/mode/gate-co")
    assert page.status_code == 200 and 'id="gate-state">open' in page.content.decode()
    response = client.post("/admin/ask/mode/gate-co", {"mode": "serve"})
    assert response.status_code == 302
    assert mode_of(shadow_tenant) == "serve"
    change = SemanticModeChange.objects.get(tenant=shadow_tenant)
    assert (change.previous, change.mode, change.kind, change.changed_by) == ("shadow", "serve", "manual", cache_admin)
    assert (change.figures["correct"], change.figures["labelled"], change.figures["open"]) == (40, 40, True)
    assert change.figures["low"] >= 0.9


def test_a_wrong_would_hit_counts_against_the_gate(shadow_tenant):
    label_would_hits(shadow_tenant, correct=40, wrong=3)
    assert not serve_gate(shadow_tenant).open


def test_an_override_needs_its_permission_and_a_reason_and_is_recorded(client, cache_admin, shadow_tenant):
    label_would_hits(shadow_tenant, correct=5)
    client.force_login(cache_admin)  # may switch modes, may not override the gate
    refused = client.post("/admin/ask/mode/gate-co", {"mode": "serve", "override_reason": "pilot week"})
    assert refused.status_code == 403 and mode_of(shadow_tenant) == "shadow"
    cache_admin.user_permissions.add(Permission.objects.get(codename="override_serve_gate"))
    cache_admin = User.objects.get(pk=cache_admin.pk)  # permissions are cached on the instance
    client.force_login(cache_admin)
    page = client.get("/admin/ask/mode/gate-co").content.decode()
    assert 'name="override_reason"' in page
    assert client.post("/admin/ask/mode/gate-co", {"mode": "serve", "override_reason": "  "}).status_code == 409
    response = client.post("/admin/ask/mode/gate-co", {"mode": "serve", "override_reason": "pilot week, watched live"})
    assert response.status_code == 302 and mode_of(shadow_tenant) == "serve"
    change = SemanticModeChange.objects.get(tenant=shadow_tenant)
    assert (change.kind, change.reason, change.changed_by) == ("override", "pilot week, watched live", cache_admin)
    assert (change.figures["labelled"], change.figures["open"]) == (5, False)
    audit = AuditLog.objects.get(action="semantic_mode_set", object_id=str(shadow_tenant.pk))
    assert (audit.details["kind"], audit.details["reason"]) == ("override", "pilot week, watched live")
    history = client.get("/admin/ask/mode/gate-co").content.decode()
    assert "pilot week, watched live" in history and "Staff, serve gate overridden" in history


def test_other_modes_need_no_gate_and_the_admin_form_cannot_bypass_it(client, cache_admin, shadow_tenant):
    client.force_login(cache_admin)
    assert client.post("/admin/ask/mode/gate-co", {"mode": "off"}).status_code == 302
    assert mode_of(shadow_tenant) == "off"
    assert client.post("/admin/ask/mode/gate-co", {"mode": "bogus"}).status_code == 400
    form = client.get(f"/admin/core/tenant/{shadow_tenant.pk}/change/").content.decode()
    assert 'name="semantic_mode"' not in form
