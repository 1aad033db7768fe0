"""Production settings: CSRF on the chat form, `check --deploy` clean, admin for staff only."""
from __future__ import annotations

import os
import secrets
import subprocess
import sys

from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

ROOT = settings.BASE_DIR


def test_chat_form_enforces_csrf(demo, dead_model):
    browser = Client(enforce_csrf_checks=True)
    refused = browser.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en"},
                           HTTP_HX_REQUEST="true")
    assert refused.status_code == 403
    page = browser.get("/t/acme/")
    token = page.content.decode().split('name="csrfmiddlewaretoken" value="')[1].split('"')[0]
    accepted = browser.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en",
                                            "csrfmiddlewaretoken": token}, HTTP_HX_REQUEST="true")
    assert accepted.status_code == 200
    # htmx sends the token as a header (hx-headers on <body>)
    header = browser.post("/t/acme/ask", {"question": "What is your return policy?", "locale": "en"},
                          HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token)
    assert header.status_code == 200


def test_api_needs_no_csrf_because_it_never_reads_cookies(demo, dead_model):
    # A forged cross-site request carries the victim's cookies; the API ignores them (identity is
    # the bearer key or the customer token header, which a browser never adds on its own).
    browser = Client(enforce_csrf_checks=True)
    from supportbot.auth import customer_token_issue

    acme = demo["acme"]
    acme.embed_origins = ["https://shop.acme.example"]
    acme.save()
    signed_in = browser.post("/t/acme/sign-in", {"customer_token": customer_token_issue(acme, "victim")},
                             HTTP_ORIGIN="https://shop.acme.example")
    assert signed_in.status_code == 303
    response = browser.post("/api/t/acme/ask", data={"question": "Where is my order AO-123456?"},
                            content_type="application/json")
    from caching.models import AskEvent

    assert response.status_code in (200, 503)
    assert AskEvent.objects.get().scope == "anonymous"


def test_check_deploy_is_clean_in_production(tmp_path):
    env = dict(os.environ, DJANGO_ENV="production", DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
               CACHE_SALT_SECRET=secrets.token_urlsafe(32), CUSTOMER_REF_SECRET=secrets.token_urlsafe(32),
               DJANGO_ALLOWED_HOSTS="ask.example.com",
               DJANGO_SETTINGS_MODULE="supportbot.settings")
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    # and production refuses to start without its secrets
    env.pop("DJANGO_SECRET_KEY")
    missing = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=240)
    assert missing.returncode != 0 and "DJANGO_SECRET_KEY" in missing.stderr
    for name in ("CACHE_SALT_SECRET", "CUSTOMER_REF_SECRET"):
        without = {k: v for k, v in env.items() if k != name} | {"DJANGO_SECRET_KEY": secrets.token_urlsafe(50)}
        refused = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=without, capture_output=True,
                                 text=True, timeout=240)
        assert refused.returncode != 0 and name in refused.stderr


def test_admin_is_staff_only(demo):
    for url in ("/admin/", "/admin/caching/askevent/", "/admin/core/tenantapikey/"):
        anonymous = Client().get(url)
        assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    customer = User.objects.create_user("customer", "c@example.com", "pw-123-not-staff")
    c = Client()
    c.force_login(customer)
    response = c.get("/admin/caching/askevent/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    staff = User.objects.create_user("staffer", "s@example.com", "pw-123-staff", is_staff=True)
    s = Client()
    s.force_login(staff)
    assert s.get("/admin/caching/askevent/").status_code == 403  # staff, but no permission on records
    root = User.objects.create_superuser("root", "r@example.com", "pw-123-root")
    r = Client()
    r.force_login(root)
    assert r.get("/admin/caching/askevent/").status_code == 200
    keys = r.get("/admin/core/tenantapikey/")
    assert keys.status_code == 200


def test_the_security_middleware_check_names_a_missing_one(settings):
    """Django's own W001-W003 are silenced for our subclasses; ours must still fire when one is gone."""
    from supportbot.checks import security_middleware_check

    assert security_middleware_check(None) == []
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if not m.endswith("CsrfViewMiddleware")]
    assert [w.id for w in security_middleware_check(None)] == ["ask.W003"]
