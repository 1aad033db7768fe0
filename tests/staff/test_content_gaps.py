"""The content-gap page: questions handed off as not covered, per tenant and locale, grouped by meaning and
ranked by how often they were asked; only the staff user's tenants; gone with the customer's data."""
from __future__ import annotations

import pytest
from django.test import Client

from caching.models import AskEvent
from caching.roles import SUPPORT_AGENTS
from core.models import Tenant
from supportbot import pipeline
from supportbot.retention import customer_erase, records_purge_older_than
from tests.staff.conftest import _user

pytestmark = pytest.mark.django_db
URL = "/admin/ask/gaps/"


def hand_off(tenant, question, customer=None, locale="en"):
    outcome = pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=tenant.pk), locale, customer), question)
    assert outcome.status == AskEvent.Status.NOT_COVERED, outcome.reason
    return outcome


def rows(page) -> list[tuple[str, int]]:
    return [(g.question, g.asked) for g in page.context["gaps"]]


def test_handed_off_questions_are_grouped_by_meaning_ranked_by_asks_and_scoped_to_the_tenant(acme, initech):
    hand_off(acme, "Do you offer a student discount?", customer="c-1")
    hand_off(acme, "Do you offer a student discount?")
    hand_off(acme, "Is there a discount for students?")
    hand_off(acme, "Who is the CEO of Acme Outfitters?")
    hand_off(initech, "Do you install dishwashers?")
    answered = pipeline.ask(pipeline.Asker(acme, "en"), "How long do I have to return an item?")
    assert answered.status == AskEvent.Status.ANSWERED

    c = Client()
    c.force_login(_user("acme-agent", SUPPORT_AGENTS, tenants=[acme]))
    page = c.get(URL, {"tenant": "acme", "locale": "en", "range": "24h"})
    assert page.status_code == 200
    [discount, ceo] = page.context["gaps"]
    assert (discount.question, discount.asked) == ("Do you offer a student discount?", 3)
    assert {w for w, _ in discount.wordings} == {"Do you offer a student discount?", "Is there a discount for students?"}
    assert (ceo.question, ceo.asked) == ("Who is the CEO of Acme Outfitters?", 1)
    assert "How long do I have to return an item?" not in page.content.decode()

    other = c.get(URL, {"tenant": "initech", "locale": "en"})  # not this user's tenant: their own instead
    assert other.context["tenant"] == acme and "dishwashers" not in other.content.decode()
    assert c.get(URL, {"tenant": "acme", "locale": "fr"}).status_code == 400

    platform = Client()
    platform.force_login(_user("platform", SUPPORT_AGENTS, all_tenants=True))
    assert rows(platform.get(URL, {"tenant": "initech", "locale": "en"})) == [("Do you install dishwashers?", 1)]

    nobody = Client()
    nobody.force_login(_user("no-perm", None, tenants=[acme]))
    assert nobody.get(URL).status_code == 403


def test_the_customers_questions_leave_the_page_with_their_data_and_with_the_records_retention(acme):
    hand_off(acme, "Can I buy shares of Acme on the stock market?", customer="c-erase")
    hand_off(acme, "Do you offer a student discount?")
    c = Client()
    c.force_login(_user("acme-agent", SUPPORT_AGENTS, tenants=[acme]))
    assert len(rows(c.get(URL, {"tenant": "acme", "locale": "en"}))) == 2

    customer_erase(acme, "c-erase")
    assert rows(c.get(URL, {"tenant": "acme", "locale": "en"})) == [("Do you offer a student discount?", 1)]

    AskEvent.objects.update(created_at="2000-01-01T00:00:00Z")
    records_purge_older_than(30)
    assert rows(c.get(URL, {"tenant": "acme", "locale": "en", "range": "90d"})) == []
