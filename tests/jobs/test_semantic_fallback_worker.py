"""The fallback's wiring with a real Celery worker: wrong labels, once committed, queue the check
of their tenant, and the worker switches the tenant back to shadow well within a minute (beat
checks every tenant every minute besides: ``test_semantic_fallback``)."""
from __future__ import annotations

import time

import pytest

from caching.models import SemanticModeChange
from core.models import Tenant
from tests import factories
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_injected_wrong_labels_switch_the_tenant_back_within_a_minute(db, celery_worker, client):
    tenant = factories.tenant("fallback-worker", semantic_mode=Tenant.SemanticMode.SERVE)
    factories.labelled_hit(tenant, "correct")
    factories.labelled_hit(tenant, "wrong")
    started = time.monotonic()
    factories.labelled_hit(tenant, "wrong")  # the bound: 2 wrong (SEMANTIC_FALLBACK_WRONG_LABELS)

    change = wait_until(lambda: SemanticModeChange.objects.filter(tenant=tenant, kind="fallback").first(), timeout=60,
                        why=lambda: celery_worker.log()[-2000:])
    assert time.monotonic() - started < 60
    assert Tenant.objects.get(pk=tenant.pk).semantic_mode == "shadow"
    assert change.figures["wrong"] == 2 and change.figures["cause"] == "wrong_labels"
    scrape = client.get("/metrics").content.decode()
    assert 'ask_semantic_fell_back{tenant="fallback-worker"} 1.0' in scrape  # AskSemanticFellBackToShadow
