"""Staff see only their tenants (core.tenancy): a tenant-A agent gets a 404 (or 403) on every
tenant-B object and sees no tenant-B row in any list, chart or count; global settings need staff
who see every tenant."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from caching.models import (AuditLog, Feedback, HourlyRollup, Label, LabeledPair, PurgeRecord, ReviewItem,
                            SampledHit, ThresholdSetting)
from caching.models import AskEvent
from caching.roles import CACHE_ADMINS, SUPPORT_AGENTS
from caching.rollups import floor_hour
from core.models import StaffMembership, Tenant, TenantApiKey
from core.tenancy import AllTenantsOnlyAdmin, TenantScopedAdmin, staff_tenant_ids, tenant_scope
from ingestion.models import Article, Chunk
from supportbot.auth import api_key_create
from supportbot.review import feedback_record, label_sample
from tests.staff.conftest import _user, served_hit

APPS = {"core", "supportbot", "caching", "ingestion", "retrieval"}
RETURN_A = ("What is your return policy for jackets?", "What is the return policy for jackets?")
RETURN_B = ("What is your return policy for televisions?", "What is the return policy for televisions?")


@pytest.fixture
def two_tenants(acme, initech, sample_everything, settings):
    """Records of every kind in both tenants: hits, samples, labels, labelled pairs, feedback,
    review items, API keys, purge records and roll-ups."""
    settings.SECOND_OPINION_ENABLED = False
    labeller = _user("labeller", None, all_tenants=True)
    out = {}
    for tenant, (cached, new) in ((acme, RETURN_A), (initech, RETURN_B)):
        ask, decision, _ = served_hit(tenant, cached, new)
        sample = SampledHit.objects.get(decision=decision)
        label_sample(sample, "correct", "", labeller)
        ask2, decision2, _ = served_hit(tenant, cached + " Thanks", new + " Thanks!")
        _, item = feedback_record(ask2, False, f"wrong for {tenant.slug}")
        key, _ = api_key_create(tenant, f"{tenant.slug} shop")
        PurgeRecord.objects.create(article_pk=0, tenant=tenant, trigger="manual")
        # an hour rolled up earlier (the hits above are in the current hour, read live)
        HourlyRollup.objects.create(hour=floor_hour(timezone.now()) - timedelta(hours=2), tenant=tenant,
                                    layer="exact", disposition="hit", intent="policy",
                                    count=7 if tenant == acme else 50)
        out[tenant.slug] = {"ask": ask, "sample": SampledHit.objects.get(decision=decision2), "item": item,
                            "key": key}
    return out


@pytest.fixture
def acme_agent(acme, initech):
    """Both roles' permissions (so only the tenant check can refuse), bound to acme alone."""
    user = _user("acme-agent", SUPPORT_AGENTS, tenants=[acme])
    user.groups.add(Group.objects.get(name=CACHE_ADMINS))
    for codename in ("view_tenantapikey", "change_tenantapikey", "view_purgerecord", "view_article",
                     "change_article", "view_chunk", "view_jobrun", "view_hourlyrollup"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    return user


def _login(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def _registered():
    return [(model, model_admin) for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in APPS]


def test_every_admin_of_the_project_applies_the_tenant_rule():
    """A new admin (another branch's, too) must choose: scoped by tenant, or platform staff only."""
    for model, model_admin in _registered():
        assert isinstance(model_admin, (TenantScopedAdmin, AllTenantsOnlyAdmin)), model


def test_scope_selector(acme, initech, acme_agent):
    assert staff_tenant_ids(acme_agent) == frozenset({acme.pk})
    nobody = _user("no-tenant", SUPPORT_AGENTS, tenants=[])
    assert staff_tenant_ids(nobody) == frozenset()  # fail closed
    platform = _user("platform", SUPPORT_AGENTS, tenants=[], all_tenants=True)
    assert staff_tenant_ids(platform) is None
    root = User.objects.create_superuser("root", "r@example.com", "pw-123-root-long")
    assert staff_tenant_ids(root) is None
    assert staff_tenant_ids(_user("not-staff", SUPPORT_AGENTS, staff=False, tenants=[acme])) == frozenset()
    scope = tenant_scope(acme_agent)
    assert list(scope.tenants()) == [acme]
    assert scope.allows(acme.pk) and not scope.allows(initech.pk)


def test_admin_lists_and_pages_hold_no_other_tenants_rows(two_tenants, acme, initech, acme_agent):
    c = _login(acme_agent)
    for model, model_admin in _registered():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = c.get(url)
        if isinstance(model_admin, AllTenantsOnlyAdmin):
            assert response.status_code == 403, model
            continue
        if response.status_code == 403:  # no view permission on this model at all
            continue
        assert response.status_code == 200, (model, response.status_code)
        path = model_admin.tenant_path
        listed = response.context["cl"].queryset
        assert not listed.filter(**{path: initech.pk}).exists(), model
        assert "initech" not in response.content.decode().lower(), model  # not even in the tenant filter
        for obj in model._default_manager.filter(**{path: initech.pk})[:3]:
            page = c.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk]))
            # the admin answers a missing object with a redirect to its index and a message
            assert page.status_code in (302, 403, 404), (model, obj.pk, page.status_code)
            assert "initech" not in page.content.decode().lower()
    # what acme's agent does see: acme's rows
    assert c.get(reverse("admin:caching_askevent_changelist")).context["cl"].queryset.filter(tenant=acme).exists()
    assert c.get(reverse("admin:caching_reviewitem_changelist")).context["cl"].queryset.exists()


def test_tenant_choices_and_new_tenants_are_limited(two_tenants, acme, initech, acme_agent):
    c = _login(acme_agent)
    form = c.get(reverse("admin:core_tenant_change", args=[acme.pk]))
    assert form.status_code == 200
    assert c.get(reverse("admin:core_tenant_add")).status_code == 403
    c.post(reverse("admin:core_tenant_change", args=[initech.pk]), {"name": "taken over"})
    assert Tenant.objects.get(pk=initech.pk).name != "taken over"


def test_staff_pages_show_and_count_only_the_agents_tenants(two_tenants, acme, initech, acme_agent):
    c = _login(acme_agent)
    for url in ("/admin/ask/", "/admin/ask/?tenant=initech", "/admin/ask/?range=30d", "/admin/ask/queue/",
                "/admin/ask/queue/?status=open", "/admin/ask/label/", "/admin/ask/calibration/"):
        response = c.get(url)
        assert response.status_code == 200, url
        html = response.content.decode().lower().replace("tenant=initech", "")  # the page's own address
        assert "initech" not in html and "televisions" not in html, url
    dash = c.get("/admin/ask/").context
    assert [t.slug for t in dash["tenants"]] == ["acme"]
    assert [row["tenant"].slug for row in dash["per_tenant"]] == ["acme"]
    assert dash["open_items"] == ReviewItem.objects.filter(tenant=acme, status="open").count() == 1
    assert dash["to_label"] == SampledHit.objects.filter(tenant=acme, labeled=False).count()
    # the numbers and charts are acme's alone: the same as a platform user's view of acme
    platform = _login(_user("platform", SUPPORT_AGENTS, tenants=[], all_tenants=True))
    only_acme = platform.get("/admin/ask/?tenant=acme").context
    everyone = platform.get("/admin/ask/").context
    lookups = [(r["layer"], r["lookups"], r["hits"]) for r in dash["layer_rows"]]
    assert lookups == [(r["layer"], r["lookups"], r["hits"]) for r in only_acme["layer_rows"]]
    assert lookups != [(r["layer"], r["lookups"], r["hits"]) for r in everyone["layer_rows"]]
    assert str(dash["rate_chart"]) == str(only_acme["rate_chart"])
    # the labelling page offers only acme samples; the calibration set is acme's pairs only
    label = c.get("/admin/ask/label/").context["card"]
    assert label is not None and label["sample"].tenant_id == acme.pk
    assert c.get("/admin/ask/calibration/").context["pairs"] == LabeledPair.objects.filter(tenant=acme).count()


def test_every_action_on_another_tenants_object_is_a_404_and_changes_nothing(two_tenants, acme, initech,
                                                                              acme_agent):
    c = _login(acme_agent)
    b = two_tenants["initech"]
    for action, data in (("confirm", {"reason": "entity"}), ("dismiss", {}), ("correct", {"answer": "x [1]"})):
        assert c.post(f"/admin/ask/queue/{b['item'].pk}/{action}", data).status_code == 404
    assert ReviewItem.objects.get(pk=b["item"].pk).status == "open"
    assert c.post(f"/admin/ask/label/{b['sample'].pk}", {"verdict": "wrong", "reason": "entity"}).status_code == 404
    assert not Label.objects.filter(decision=b["sample"].decision).exists()
    mode = Tenant.objects.get(pk=initech.pk).semantic_mode
    assert c.post("/admin/ask/mode/initech", {"mode": "off"}).status_code == 404
    assert Tenant.objects.get(pk=initech.pk).semantic_mode == mode
    # thresholds apply to every tenant: a tenant-bound admin cannot set them
    assert c.post("/admin/ask/calibration/apply", {"intent": "howto", "value": "0.7"}).status_code == 403
    assert not ThresholdSetting.objects.exists()
    assert b"apply-threshold" not in c.get("/admin/ask/calibration/").content
    # the admin's revoke action only reaches the agent's own tenant's keys
    keys = reverse("admin:core_tenantapikey_changelist")
    c.post(keys, {"action": "revoke", "_selected_action": [b["key"].pk, two_tenants["acme"]["key"].pk]})
    assert TenantApiKey.objects.get(pk=b["key"].pk).revoked_at is None
    assert TenantApiKey.objects.get(pk=two_tenants["acme"]["key"].pk).revoked_at is not None
    # and the acme agent's own actions still work
    a = two_tenants["acme"]
    assert c.post(f"/admin/ask/queue/{a['item'].pk}/dismiss").status_code == 302
    assert ReviewItem.objects.get(pk=a["item"].pk).status == "dismissed"
    assert c.post("/admin/ask/mode/acme", {"mode": "shadow"}).status_code == 302
    assert Tenant.objects.get(pk=acme.pk).semantic_mode == "shadow"


def test_mode_switch_redirects_only_to_this_site(acme, cache_admin):
    c = _login(cache_admin)
    for bad in ("https://evil.example/", "//evil.example/x", "javascript:alert(1)"):
        response = c.post("/admin/ask/mode/acme", {"mode": "off", "next": bad})
        assert response.status_code == 302 and response["Location"] == "/admin/ask/mode/acme", bad
    ok = c.post("/admin/ask/mode/acme", {"mode": "shadow", "next": "/admin/ask/?range=30d"})
    assert ok["Location"] == "/admin/ask/?range=30d"


def test_revoking_a_key_needs_the_change_permission_is_audited_and_cannot_be_undone(acme, acme_agent):
    key, _ = api_key_create(acme, "shop")
    viewer = _user("viewer", None, tenants=[acme])
    viewer.user_permissions.add(Permission.objects.get(codename="view_tenantapikey"))
    url = reverse("admin:core_tenantapikey_changelist")
    _login(viewer).post(url, {"action": "revoke", "_selected_action": [key.pk]})
    assert TenantApiKey.objects.get(pk=key.pk).revoked_at is None
    c = _login(acme_agent)
    c.post(url, {"action": "revoke", "_selected_action": [key.pk]})
    revoked_at = TenantApiKey.objects.get(pk=key.pk).revoked_at
    assert revoked_at is not None
    log = AuditLog.objects.get(action="api_key_revoke")
    assert (log.actor, log.object_id, log.details["prefix"]) == (acme_agent, str(key.pk), key.prefix)
    # revoked_at is read-only: a change form cannot clear it
    c.post(reverse("admin:core_tenantapikey_change", args=[key.pk]), {"name": "renamed", "revoked_at": ""})
    row = TenantApiKey.objects.get(pk=key.pk)
    assert row.name == "renamed" and row.revoked_at == revoked_at


def test_memberships_are_managed_by_platform_staff_only(acme, acme_agent):
    assert _login(acme_agent).get(reverse("admin:core_staffmembership_changelist")).status_code == 403
    root = User.objects.create_superuser("root", "r@example.com", "pw-123-root-long")
    listing = _login(root).get(reverse("admin:core_staffmembership_changelist"))
    assert listing.status_code == 200 and StaffMembership.objects.filter(user=acme_agent).exists()
    assert "acme-agent" in listing.content.decode()


def test_records_of_both_tenants_exist(two_tenants, acme, initech):
    """The fixture really made tenant-B rows of every kind the tests above look for."""
    for model, path in ((AskEvent, "tenant"), (ReviewItem, "tenant"), (SampledHit, "tenant"),
                        (Label, "decision__tenant"), (LabeledPair, "tenant"), (Feedback, "ask__tenant"),
                        (TenantApiKey, "tenant"), (PurgeRecord, "tenant"), (HourlyRollup, "tenant"),
                        (Article, "tenant"), (Chunk, "article__tenant")):
        assert model.objects.filter(**{path: initech.pk}).exists(), model


def test_a_new_agents_tenants_are_set_on_the_user_page(acme):
    root = User.objects.create_superuser("root", "r@example.com", "pw-123-root-long")
    agent = _user("new-agent", SUPPORT_AGENTS, tenants=[])
    c = _login(root)
    page = c.get(reverse("admin:auth_user_change", args=[agent.pk]))
    assert page.status_code == 200 and "tenant_memberships-TOTAL_FORMS" in page.content.decode()
    form = page.context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None and k not in ("groups", "user_permissions",
                                                                                 "password", "last_login")}
    data.update({"groups": [g.pk for g in agent.groups.all()], "date_joined_0": "2026-01-01",
                 "date_joined_1": "00:00:00", "tenant_memberships-TOTAL_FORMS": "1",
                 "tenant_memberships-INITIAL_FORMS": "0", "tenant_memberships-0-tenant": str(acme.pk),
                 "is_staff": "on", "is_active": "on"})
    response = c.post(reverse("admin:auth_user_change", args=[agent.pk]), data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert staff_tenant_ids(User.objects.get(pk=agent.pk)) == frozenset({acme.pk})


def test_the_chunk_admins_drop_downs_offer_only_the_agents_articles_and_versions(acme, initech, acme_agent):
    """Issue 29 (second security review): every foreign-key choice is narrowed, not only a tenant's."""
    user = acme_agent
    user.user_permissions.add(Permission.objects.get(codename="change_chunk"))
    user = User.objects.get(pk=user.pk)  # permissions are cached per instance
    chunk = Chunk.objects.filter(article__tenant=acme).first()
    page = _login(user).get(reverse("admin:ingestion_chunk_change", args=[chunk.pk]))
    assert page.status_code == 200
    fields = page.context["adminform"].form.fields
    articles = fields["article"].queryset
    versions = fields["article_version"].queryset
    assert articles.filter(tenant=acme).exists() and not articles.filter(tenant=initech).exists()
    assert versions.filter(article__tenant=acme).exists() and not versions.filter(article__tenant=initech).exists()
