"""The chat page's Content-Security-Policy (issue 29, second security review): scripts and styles
from this site only, no inline script or handler, nothing framed or posted elsewhere. The page
itself carries no inline script, so the policy breaks nothing (the browser tests run under it)."""
from __future__ import annotations

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def directives(response) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return {d.split()[0]: " ".join(d.split()[1:]) for d in policy.split(";") if d.strip()}


def test_the_chat_page_sends_a_strict_policy_and_holds_no_inline_script(acme):
    page = Client().get("/t/acme/")
    assert page.status_code == 200
    csp = directives(page)
    assert csp["default-src"] == "'self'" and csp["script-src"] == "'self'"
    assert "unsafe-inline" not in page["Content-Security-Policy"] and "unsafe-eval" not in page["Content-Security-Policy"]
    assert csp["object-src"] == "'none'" and csp["base-uri"] == "'none'" and csp["frame-ancestors"] == "'none'"
    assert csp["form-action"] == "'self'"
    html = page.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"
    assert not re.search(r"\son[a-z]+\s*=", html) and "hx-on" not in html, "an inline handler"
    assert '"allowEval":false' in html.replace(" ", "")  # htmx evaluates no attribute text


def test_chat_error_pages_carry_the_policy_too(acme):
    refused = Client().get("/t/acme/?customer_token=x")
    assert refused.status_code == 400 and "script-src 'self'" in refused["Content-Security-Policy"]
