"""A tenant's slug never changes (issue 29, second security review): ``customer_ref`` and the
customer-token key derive from it, so a renamed tenant's earlier records would escape export and
erasure. The admin shows it read-only after creation, and the model refuses a change."""
from __future__ import annotations

import pytest
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.test import Client, RequestFactory
from django.urls import reverse

from core.models import Tenant
from tests.staff.conftest import PASSWORD, cache_admin  # noqa: F401 (a fixture)


def test_the_admin_shows_the_slug_read_only_once_the_tenant_exists(acme, cache_admin):
    request = RequestFactory().get("/")
    request.user = cache_admin
    model_admin = admin.site._registry[Tenant]
    assert "slug" in model_admin.get_readonly_fields(request, acme)
    assert "slug" not in model_admin.get_readonly_fields(request, None)  # chosen once, when it is created
    c = Client()
    c.login(username=cache_admin.username, password=PASSWORD)
    page = c.get(reverse("admin:core_tenant_change", args=[acme.pk]))
    assert page.status_code == 200 and "slug" not in page.context["adminform"].form.fields


def test_the_model_refuses_a_new_slug_for_an_existing_tenant(acme):
    acme.slug = "acme-renamed"
    with pytest.raises(ValidationError):
        acme.save()
    assert Tenant.objects.filter(slug="acme").exists() and not Tenant.objects.filter(slug="acme-renamed").exists()
    acme = Tenant.objects.get(slug="acme")
    acme.name = "Acme Outfitters Ltd"
    acme.save()  # everything else may change
    assert Tenant.objects.get(pk=acme.pk).name == "Acme Outfitters Ltd"
    with pytest.raises(ValidationError):
        Tenant.objects.filter(pk=acme.pk).update(slug="acme-renamed")
