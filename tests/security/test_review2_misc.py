"""Issue 29, second security review: single-use tokens fail closed on any Redis error; no customer
text in Django's admin log."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from redis.exceptions import ClusterDownError, RedisClusterException, SlotNotCoveredError

from caching.models import LabeledPair, PairVerification, SemanticEntry
from supportbot import auth
from supportbot.auth import AuthError, customer_token_issue, customer_token_redeem

pytestmark = pytest.mark.django_db
QUESTION = "Hello, this is Jane Quimbyfrost, do you ship to Canada?"


class Failing:
    def __init__(self, exc):
        self.exc = exc

    def set(self, *args, **kwargs):
        raise self.exc


@pytest.mark.parametrize("exc", [RedisClusterException("no node"), SlotNotCoveredError("slot 7"),
                                 ClusterDownError("down"), RuntimeError("anything else")])
def test_a_single_use_token_is_refused_on_any_redis_failure(acme, monkeypatch, exc):
    token = customer_token_issue(acme, "cust-1", single_use=True)
    monkeypatch.setattr(auth, "get_redis", lambda: Failing(exc))
    with pytest.raises(AuthError) as refused:
        customer_token_redeem(acme, token)
    assert refused.value.status == 503 and refused.value.code == "customer_token_unverifiable"


def test_labelled_pairs_entries_and_verifications_name_no_customer_text(acme):
    pair = LabeledPair.objects.create(tenant=acme, cached_question=QUESTION, new_question=QUESTION + " again",
                                      should_hit=True, source=LabeledPair.Source.LABEL)
    assert "Quimbyfrost" not in str(pair)
    entry = SemanticEntry(pk=7, tenant=acme, locale="en", question=QUESTION)
    assert "Quimbyfrost" not in str(entry)
    assert "Quimbyfrost" not in str(PairVerification(pk=3, question=QUESTION))


def test_retention_scrubs_admin_log_entries_that_quote_customer_text(acme, admin_user):
    from supportbot.retention import records_purge_older_than

    pair = LabeledPair.objects.create(tenant=acme, cached_question=QUESTION, new_question="x", should_hit=True,
                                      source=LabeledPair.Source.LABEL)
    for model, pk in ((LabeledPair, pair.pk), (SemanticEntry, 9), (PairVerification, 4)):
        LogEntry.objects.create(user=admin_user, content_type=ContentType.objects.get_for_model(model),
                                object_id=str(pk), object_repr=f"+ {QUESTION[:40]}", action_flag=CHANGE,
                                change_message="[]")
    records_purge_older_than(90)
    assert not LogEntry.objects.filter(object_repr__icontains="Quimbyfrost").exists()
    assert LogEntry.objects.count() == 3  # the log itself stays: who changed what, when


# --------------------------------------------------------------------------- API key scopes

def test_an_api_key_without_the_scope_is_refused_403_and_changes_nothing(acme, client, dead_model, no_rate_limits):
    import json as _json

    from caching.models import AskEvent
    from core.models import ApiKeyScope
    from supportbot.auth import api_key_create
    from tests.security.conftest import api_post

    _, minter = api_key_create(acme, "tokens only", scopes=[ApiKeyScope.CUSTOMER_TOKEN])
    _, asker = api_key_create(acme, "asks only", scopes=[ApiKeyScope.ASK])
    _, default = api_key_create(acme, "default")
    before = AskEvent.objects.count()
    refused = api_post(client, "acme", {"question": "Do you ship to Canada?"}, key=minter)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "api_key_scope"
    assert AskEvent.objects.count() == before
    mint = {"data": _json.dumps({"customer": "c-1"}), "content_type": "application/json"}
    refused = client.post("/api/t/acme/customer-token", HTTP_AUTHORIZATION=f"Bearer {asker}", **mint)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "api_key_scope"
    assert client.post("/api/t/acme/customer-token", HTTP_AUTHORIZATION=f"Bearer {minter}", **mint).status_code == 200
    # a key of the default scopes (what every key had before scopes) asks and mints
    assert api_post(client, "acme", {"question": "Do you ship to Canada?"}, key=default).status_code != 403
    assert client.post("/api/t/acme/customer-token", HTTP_AUTHORIZATION=f"Bearer {default}", **mint).status_code == 200


def test_the_timings_scope_is_the_breakdown_and_not_a_default(acme):
    from core.models import ApiKeyScope
    from supportbot.auth import api_key_create

    plain, _ = api_key_create(acme, "plain")
    granted, _ = api_key_create(acme, "diagnostics", timing_breakdown=True)
    assert sorted(plain.scopes) == ["ask", "customer_token"] and not plain.timing_breakdown
    assert ApiKeyScope.TIMINGS in granted.scopes and granted.timing_breakdown
    with pytest.raises(ValueError):
        api_key_create(acme, "bad", scopes=["admin"])


def test_retention_purges_the_verifiers_labelled_pairs_by_age(acme):
    from django.utils import timezone

    from supportbot.retention import records_purge_older_than

    def pair(source, days_old):
        p = LabeledPair.objects.create(tenant=acme, cached_question=QUESTION, new_question="Do you ship to Mexico?",
                                       should_hit=False, source=source)
        LabeledPair.objects.filter(pk=p.pk).update(created_at=timezone.now() - timedelta(days=days_old))
        return p.pk

    old, recent = pair(LabeledPair.Source.VERIFIER, 91), pair(LabeledPair.Source.VERIFIER, 1)
    pair_file = pair(LabeledPair.Source.FILE, 400)  # staff's pair files hold no customer's words
    counts = records_purge_older_than(90)
    assert counts["verifier_labels"] == 1
    assert set(LabeledPair.objects.values_list("pk", flat=True)) == {recent, pair_file}
    assert old not in set(LabeledPair.objects.values_list("pk", flat=True))
