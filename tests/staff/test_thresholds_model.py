"""Thresholds belong to the embedding model they were measured on (issue 29, item 5): a staff
threshold and a judge recalibration name their model; after a switch to another model they are not
used, that model's hits of an intent without a measured threshold are held in shadow, staff are told
on the calibration page and the dashboard, and a recalibration on the new model serves again."""
from __future__ import annotations

import copy

import pytest

from caching import calibration
from caching.guards import DEFAULT_THRESHOLDS, classify
from caching.models import JudgeThreshold, ThresholdSetting
from caching.thresholds import (
    current_thresholds, invalidate_thresholds, judge_threshold, model_in_force, threshold_state,
)
from core.models import Tenant
from retrieval.embeddings import get_embedder, set_embedder
from retrieval.generations import embedder_register
from retrieval.models import IndexGeneration
from retrieval.services import active_generation_forget
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, decision, offer

QUESTION, PARAPHRASE = "What is your return policy?", "Can you tell me your return policy?"
OTHER = ("multilingual-e5-small", "0a1b2c3d4e5f")


@pytest.fixture
def switch_model():
    """Switch the embedding model in force to one the code defaults were not measured on (the same
    weights under another name: what a new model looks like to the thresholds); undone afterwards."""
    current = get_embedder()

    def switch(name: str = "multilingual-test-model"):
        other = copy.copy(current)
        other.name, other.version = name, current.version + "-ml"
        IndexGeneration.objects.filter(status=IndexGeneration.Status.ACTIVE).update(status=IndexGeneration.Status.RETIRED)
        IndexGeneration.objects.create(model_name=other.name, model_version=other.version,
                                       dimensions=other.dimensions, status=IndexGeneration.Status.ACTIVE)
        embedder_register(other)
        set_embedder(other)
        active_generation_forget()
        invalidate_thresholds()
        return other

    yield switch
    set_embedder(current)
    active_generation_forget()
    invalidate_thresholds()


def test_a_staff_threshold_names_its_model_and_is_used_with_that_model_only(db, django_capture_on_commit_callbacks):
    model = model_in_force()
    with django_capture_on_commit_callbacks(execute=True):
        row = calibration.threshold_apply("howto", 0.72, None, note="calibrated")
    assert (row.embedding_model, row.embedding_version) == model
    assert current_thresholds()["howto"] == pytest.approx(0.72)
    assert threshold_state().sources["howto"] == f"staff v{row.version}"

    other = threshold_state(model=OTHER)  # a model the code defaults were not measured on
    assert other.values["howto"] == DEFAULT_THRESHOLDS["howto"]  # a starting floor, not the other model's 0.72
    assert other.uncalibrated == frozenset(DEFAULT_THRESHOLDS) and not other.serves("howto") and not other.serves("")
    assert other.elsewhere == ((model[0], model[1], 1),)
    assert "recalibrate" in other.notice() and model[0] in other.notice()

    # the same model name with other weights: the code defaults (measured on the name) hold, the staff row does not
    reweighted = threshold_state(model=(model[0], "f" * 12))
    assert reweighted.values["howto"] == DEFAULT_THRESHOLDS["howto"] and reweighted.sources["howto"] == "code default"
    assert reweighted.serves("howto") and reweighted.notice() == ""


def test_settings_thresholds_apply_to_the_model_they_name(db, settings):
    settings.SEMANTIC_THRESHOLDS, settings.SEMANTIC_THRESHOLDS_MODEL = {"policy": 0.8}, OTHER[0]
    invalidate_thresholds()
    other = threshold_state(model=OTHER)
    assert other.values["policy"] == 0.8 and other.sources["policy"] == "settings" and other.serves("policy")
    assert not other.serves("howto")
    assert current_thresholds(refresh=True)["policy"] == DEFAULT_THRESHOLDS["policy"]  # not the model in force's


def test_a_judge_recalibration_of_another_embedding_model_is_not_used(acme):
    name, version = model_in_force()
    JudgeThreshold.objects.create(tenant=acme, judge_version="judge-x", value=0.9, version=1, target=0.99,
                                  embedding_model=OTHER[0], embedding_version=OTHER[1])
    assert judge_threshold(acme.pk, "judge-x", refresh=True) is None
    JudgeThreshold.objects.create(tenant=acme, judge_version="judge-x", value=0.8, version=2, target=0.99,
                                  embedding_model=name, embedding_version=version)
    assert judge_threshold(acme.pk, "judge-x", refresh=True) == 0.8
    assert judge_threshold(acme.pk, "judge-x", model=OTHER) == 0.9


def test_after_a_model_switch_hits_are_held_in_shadow_until_staff_recalibrate(
        acme, switch_model, client, cache_admin, django_capture_on_commit_callbacks):
    acme.semantic_mode = Tenant.SemanticMode.SERVE
    acme.save(update_fields=["semantic_mode"])
    intent = classify(PARAPHRASE).intent
    old = model_in_force()
    with django_capture_on_commit_callbacks(execute=True):
        calibration.threshold_apply(intent, 0.3, cache_admin, note="measured on the old model")
    asker = pipeline.Asker(Tenant.objects.get(pk=acme.pk), "en")
    offer(asker, QUESTION)
    state, served = cached_lookup(asker, PARAPHRASE)
    assert served is not None and decision(state, "semantic").threshold == pytest.approx(0.3)

    new = switch_model()
    offer(asker, QUESTION)  # admitted again under the new model
    state, served = cached_lookup(asker, PARAPHRASE)
    held = decision(state, "semantic")
    assert served is None and held.disposition == "shadow_hit"
    assert f"no {intent} threshold measured on embedding model {new.name}" in held.reason
    assert held.threshold == pytest.approx(DEFAULT_THRESHOLDS[intent])  # the old model's 0.3 is not used

    client.force_login(cache_admin)
    page = client.get("/admin/ask/calibration/").content.decode()
    assert 'id="recalibrate"' in page and new.name in page and old[0] in page
    assert f'data-intent="{intent}" data-source="uncalibrated"' in page
    assert 'id="recalibrate"' in client.get("/admin/ask/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):  # staff recalibrate the intent on the new model
        assert client.post("/admin/ask/calibration/apply", {"intent": intent, "value": "0.5"}).status_code == 302
    row = ThresholdSetting.objects.order_by("-pk").first()
    assert (row.embedding_model, row.embedding_version) == (new.name, new.version)
    state, served = cached_lookup(asker, PARAPHRASE)
    assert served is not None and decision(state, "semantic").threshold == pytest.approx(0.5)
    page = client.get("/admin/ask/calibration/").content.decode()
    assert f'data-intent="{intent}" data-source="staff v{row.version}"' in page


def test_the_migration_gives_earlier_rows_the_model_in_force(acme):
    """Rows made before thresholds named their model were measured on the model in force when it runs."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("caching.migrations.0013_thresholds_embedding_model")
    earlier = ThresholdSetting.objects.create(intent="howto", value=0.7, version=1)
    judged = JudgeThreshold.objects.create(tenant=acme, judge_version="judge-x", value=0.9, version=1, target=0.99)
    named = ThresholdSetting.objects.create(intent="policy", value=0.6, version=1, embedding_model=OTHER[0],
                                            embedding_version=OTHER[1])
    migration.measured_on_model_in_force(apps, None)
    generation = IndexGeneration.objects.get(status=IndexGeneration.Status.ACTIVE)
    for row in (earlier, judged):
        row.refresh_from_db()
        assert (row.embedding_model, row.embedding_version) == (generation.model_name, generation.model_version)
    named.refresh_from_db()
    assert (named.embedding_model, named.embedding_version) == OTHER  # rows that name theirs are left alone
