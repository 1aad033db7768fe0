"""Staff only; a support agent labels and reviews; only a cache admin changes thresholds or modes."""
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from caching.models import AuditLog, ThresholdSetting
from caching.thresholds import current_thresholds
from core.models import Tenant

PAGES = ["/admin/ask/", "/admin/ask/queue/", "/admin/ask/label/", "/admin/ask/calibration/"]


def test_anonymous_and_non_staff_are_sent_to_the_admin_login(client, db):
    User.objects.create_user("customer", password="pw-123456789", is_staff=False)
    for who in (None, "customer"):
        if who:
            client.login(username=who, password="pw-123456789")
        for url in PAGES:
            response = client.get(url)
            assert response.status_code == 302 and "/admin/login/" in response["Location"], (who, url)


def test_staff_without_a_role_is_forbidden(client, bare_staff):
    client.force_login(bare_staff)
    for url in PAGES:
        assert client.get(url).status_code == 403, url
    assert client.post("/admin/ask/calibration/apply", {"intent": "howto", "value": "0.7"}).status_code == 403


def test_support_agent_reads_labels_and_reviews_but_cannot_change_thresholds_or_modes(client, agent, acme):
    client.force_login(agent)
    for url in PAGES:
        assert client.get(url).status_code == 200, url
    assert client.post("/admin/ask/calibration/apply", {"intent": "howto", "value": "0.7"}).status_code == 403
    assert client.post(f"/admin/ask/mode/{acme.slug}", {"mode": "off"}).status_code == 403
    assert not ThresholdSetting.objects.exists()
    assert Tenant.objects.get(pk=acme.pk).semantic_mode == acme.semantic_mode
    assert b"apply-threshold" not in client.get("/admin/ask/calibration/").content


def test_cache_admin_applies_and_reverts_thresholds_with_an_audit_trail(client, cache_admin,
                                                                       django_capture_on_commit_callbacks):
    client.force_login(cache_admin)
    before = current_thresholds(refresh=True)["howto"]
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/admin/ask/calibration/apply", {"intent": "howto", "value": "0.72"}).status_code == 302
    assert current_thresholds()["howto"] == pytest.approx(0.72)  # the cache is invalidated on commit
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/ask/calibration/apply", {"intent": "howto", "value": f"{before:.4f}", "note": "revert"})
    rows = list(ThresholdSetting.objects.filter(intent="howto").order_by("version"))
    assert [(r.version, r.value, r.created_by) for r in rows] == [(1, 0.72, cache_admin), (2, before, cache_admin)]
    assert current_thresholds()["howto"] == pytest.approx(before)
    audit = list(AuditLog.objects.filter(action="threshold_apply").order_by("pk").values_list("details", flat=True))
    assert [(a["value"], a["previous"]) for a in audit] == [(0.72, before), (before, 0.72)]
    # nonsense is refused, not stored
    client.post("/admin/ask/calibration/apply", {"intent": "howto", "value": "1.5"})
    client.post("/admin/ask/calibration/apply", {"intent": "no-such-intent", "value": "0.5"})
    assert ThresholdSetting.objects.count() == 2


def test_cache_admin_switches_a_tenant_mode_audited(client, cache_admin, acme):
    client.force_login(cache_admin)
    response = client.post(f"/admin/ask/mode/{acme.slug}", {"mode": "shadow"})
    assert response.status_code == 302
    assert Tenant.objects.get(pk=acme.pk).semantic_mode == "shadow"
    log = AuditLog.objects.get(action="semantic_mode_set")
    assert (log.actor, log.details["mode"], log.object_id) == (cache_admin, "shadow", str(acme.pk))
    assert client.post(f"/admin/ask/mode/{acme.slug}", {"mode": "bogus"}).status_code == 400


def test_setup_roles_is_idempotent(db):
    call_command("setup_roles")
    call_command("setup_roles")
    from django.contrib.auth.models import Group

    agents, admins = Group.objects.get(name="Support agents"), Group.objects.get(name="Cache admins")
    agent_perms = {p.codename for p in agents.permissions.all()}
    admin_perms = {p.codename for p in admins.permissions.all()}
    assert {"label_hits", "change_reviewitem"} <= agent_perms
    assert not {"change_thresholdsetting", "change_semantic_mode", "change_tenant"} & agent_perms
    assert {"change_thresholdsetting", "change_semantic_mode"} <= admin_perms
