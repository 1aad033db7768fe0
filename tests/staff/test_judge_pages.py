"""The learned judge on the staff pages (issue 12): shadow mode by default and the would-hit
precision staff see before switching a tenant to serve; the judge's version in decision views;
the locales the judge abstains for; the judge's precision/coverage curve and per-tenant
recalibration from staff labels."""
from __future__ import annotations

import pytest

from caching import guards
from modelbuild import judge_calibration
from caching.models import AuditLog, CacheDecision, JudgeThreshold, LabeledPair, SampledHit
from caching.thresholds import judge_threshold
from core.models import Tenant
from supportbot import pipeline
from supportbot.evaluation import Scope
from supportbot.review import label_sample
from tests import factories
from tests.caching.helpers import JUDGE, cached_lookup, decided, offer, stand_in_judge

RETURN_Q = "How do I return an item?"
PARAPHRASE = "What's the process for sending back a product?"  # the guards serve it
OTHER = "How can I return an item?"


def test_a_new_tenant_starts_in_shadow_mode(demo, client, admin_user):
    assert factories.tenant("brand-new").semantic_mode == Tenant.SemanticMode.SHADOW
    client.force_login(admin_user)
    response = client.post("/admin/core/tenant/add/", {
        "slug": "from-admin", "name": "From admin", "locales": "en", "default_locale": "en", "few_shot": "[]",
        "policy_version": 1, "semantic_mode": "shadow", "instructions": "", "handoff_text": ""})
    assert response.status_code == 302, response.content[:2000]
    assert Tenant.objects.get(slug="from-admin").semantic_mode == "shadow"
    # the demo tenants are created serving (kb/tenants.json), and evaluation runs the serve path
    assert demo["acme"].semantic_mode == demo["initech"].semantic_mode == "serve"
    scope = Scope()
    try:
        assert scope.tenant("eval", "en").semantic_mode == "serve"
    finally:
        scope.drop()


def shadow_would_hits(tenant, verdicts: list[str], user):
    """Shadow would-hits of the tenant, sampled and labelled with ``verdicts``."""
    Tenant.objects.filter(pk=tenant.pk).update(semantic_mode=Tenant.SemanticMode.SHADOW)
    tenant.refresh_from_db()
    asker = pipeline.Asker(tenant, "en", None)
    offer(asker, RETURN_Q)
    for verdict in verdicts:
        state, served = cached_lookup(asker, PARAPHRASE)
        assert served is None and decided(state, "semantic").disposition == "shadow_hit"
    samples = SampledHit.objects.filter(tenant=tenant, stratum="shadow").order_by("pk")
    assert samples.count() == len(verdicts)
    for sample, verdict in zip(samples, verdicts):
        label_sample(sample, verdict, "intent" if verdict == "wrong" else "", user)


def test_the_dashboard_shows_would_hit_precision_before_the_switch(client, agent, acme, initech, sample_everything,
                                                                 monkeypatch):
    stand_in_judge(monkeypatch)
    shadow_would_hits(acme, ["correct", "correct", "correct", "wrong"], agent)
    client.force_login(agent)
    page = client.get("/admin/ask/", {"range": "24h"}).content.decode()
    # 3 of 4 right, with the 95% Wilson interval and the counts, next to the tenant's mode
    assert "75.0% [30.1–95.4%] (3/4)" in page
    assert "not ready" in page and "below the target 99.0%" in page
    tenant_page = client.get("/admin/ask/", {"range": "24h", "tenant": "acme"}).content.decode()
    assert 'id="shadow-precision"' in tenant_page and "(3/4)" in tenant_page
    # initech has no shadow labels
    assert "no labels" in page


def test_decision_views_show_the_judge_version(client, agent, acme, sample_everything, monkeypatch):
    scores = stand_in_judge(monkeypatch)
    scores[PARAPHRASE] = 0.953
    offer(pipeline.Asker(acme, "en", None), RETURN_Q)
    cached_lookup(pipeline.Asker(acme, "en", None), PARAPHRASE)
    client.force_login(agent)
    page = client.get("/admin/ask/label/").content.decode()
    assert f"{JUDGE} · probability 0.953" in page


def test_the_dashboard_reports_the_locales_the_judge_abstains_for(client, agent, acme, sample_nothing, monkeypatch):
    stand_in_judge(monkeypatch, abstain_locales=("de",))
    en, de = pipeline.Asker(acme, "en", None), pipeline.Asker(acme, "de", None)
    offer(en, RETURN_Q)
    cached_lookup(en, PARAPHRASE)  # an English hit
    offer(de, "Wie kann ich einen Artikel zurückgeben?", article="return-policy")
    for q in ("Wie gebe ich einen Artikel zurück?", "Wie funktioniert die Rücksendung?"):
        state, served = cached_lookup(de, q)
        assert served is None and decided(state, "semantic").reason.startswith("judge abstains")
    client.force_login(agent)
    page = client.get("/admin/ask/", {"range": "24h", "tenant": "acme"}).content.decode()
    assert 'id="judge-abstains"' in page and "The learned judge abstains for de" in page
    locale_table = page.split('id="locale-table"', 1)[1].split("</table>", 1)[0]
    de_row = locale_table.split('data-locale="de"', 1)[1].split("</tr>", 1)[0]
    en_row = locale_table.split('data-locale="en"', 1)[1].split("</tr>", 1)[0]
    assert ">2<" in de_row and "0.0%" in de_row and "2 (100.0%)" in de_row  # German shown apart: 0 of 2
    assert "100.0%" in en_row and "0 (0.0%)" in en_row


# --------------------------------------------------------------------------- recalibration

def staff_labels(tenant, positives: list[float], negatives: list[float], version: str = JUDGE):
    rows = [LabeledPair(tenant=tenant, cached_question="q", new_question=f"n{i}", should_hit=ok, source=source,
                        judge_probability=p, judge_version=version)
            for i, (p, ok, source) in enumerate([(p, True, "label") for p in positives]
                                                + [(p, False, "review") for p in negatives])]
    LabeledPair.objects.bulk_create(rows)


def test_the_judge_curve_on_a_known_set(db):
    pairs = [(0.99, True), (0.97, True), (0.95, True), (0.93, False), (0.91, True), (0.60, False)]
    c = judge_calibration.judge_curve(pairs, target=0.99, grid=[0.5, 0.9, 0.92, 0.94, 0.98])
    by = {p.threshold: p for p in c.points}
    assert (by[0.5].served, by[0.5].precision, by[0.5].coverage) == (6, pytest.approx(4 / 6), 1.0)
    assert (by[0.92].served, by[0.92].precision) == (4, pytest.approx(0.75))
    assert (by[0.94].precision, by[0.94].coverage) == (1.0, pytest.approx(0.75))
    assert c.recommended == 0.94 and "lower bound" in c.note
    assert judge_calibration.judge_curve([(0.99, False), (0.9, True)], target=0.99).recommended is None


def test_a_tenant_is_recalibrated_from_staff_labels_only_once_there_are_enough(acme, initech, settings):
    settings.JUDGE_RECALIBRATE_MIN_LABELS = 40
    staff_labels(acme, [0.95 + 0.001 * i for i in range(30)], [0.91, 0.92])
    # verifier labels never count, another tenant's neither
    LabeledPair.objects.create(tenant=acme, cached_question="q", new_question="v", should_hit=False,
                               source="verifier", judge_probability=0.99, judge_version=JUDGE)
    staff_labels(initech, [0.5] * 20, [0.99] * 20)
    curve, row = judge_calibration.judge_recalibrate(acme)
    assert row is None and "needs 40" in curve.note and curve.negatives == 2
    staff_labels(acme, [0.96] * 10, [0.5])
    curve, row = judge_calibration.judge_recalibrate(acme)
    assert row is not None and (row.version, row.judge_version, row.positives, row.negatives) == (1, JUDGE, 40, 3)
    assert row.value == pytest.approx(0.93) and row.precision == 1.0
    assert judge_threshold(acme.pk, JUDGE, refresh=True) == pytest.approx(0.93)
    assert judge_threshold(acme.pk, "another-judge") is None and judge_threshold(initech.pk, JUDGE) is None
    assert judge_calibration.judge_recalibrate(acme)[1] is None  # nothing new: no new version
    assert AuditLog.objects.filter(action="judge_recalibrate").count() == 1
    # initech's labels show no threshold reaches the target: no row, a note
    curve, row = judge_calibration.judge_recalibrate(initech)
    assert row is None and "keep this tenant in shadow mode" in curve.note
    assert judge_calibration.judge_recalibrate_all() == []


def test_the_calibration_page_shows_the_judge_curve_and_recalibrates(client, agent, cache_admin, acme, settings):
    settings.JUDGE_RECALIBRATE_MIN_LABELS = 10
    staff_labels(acme, [0.97] * 12, [0.92])
    client.force_login(agent)
    page = client.get("/admin/ask/calibration/", {"judge_tenant": "acme"}).content.decode()
    assert 'id="judge"' in page and "13 staff labels" in page and "Precision and coverage by threshold: learned judge, by probability" in page
    assert 'class="judge-recommended">0.93<' in page
    assert "button judge-recalibrate" not in page  # agents may look, not recalibrate
    assert client.post("/admin/ask/calibration/judge/acme").status_code == 403
    client.force_login(cache_admin)
    response = client.post("/admin/ask/calibration/judge/acme", {"target": "0.99"})
    assert response.status_code == 302
    row = JudgeThreshold.objects.get(tenant=acme)
    assert row.value == pytest.approx(0.93) and row.created_by == cache_admin
    page = client.get("/admin/ask/calibration/", {"judge_tenant": "acme"}).content.decode()
    assert 'class="judge-current">0.93<' in page and "v1" in page and "button judge-recalibrate" in page


def test_the_calibration_page_says_from_which_cosine_the_judge_serves_alone(client, agent, settings):
    """The judge in force, its threshold and its least cosine: the one chosen with it at training,
    or SEMANTIC_JUDGE_MIN_SIMILARITY's when set; with SEMANTIC_JUDGE_SERVES off, that it does not serve alone."""
    judge = guards.learned_judge()
    client.force_login(agent)
    page = client.get("/admin/ask/calibration/").content.decode()
    assert f"Judge in force: {judge.version}, threshold {judge.threshold:.3f}." in page
    assert f'class="judge-least">{judge.min_similarity:.2f}<' in page and "chosen with the judge at training" in page
    settings.SEMANTIC_JUDGE_MIN_SIMILARITY = 0.83
    page = client.get("/admin/ask/calibration/").content.decode()
    assert 'class="judge-least">0.83<' in page
    assert f"SEMANTIC_JUDGE_MIN_SIMILARITY; chosen with the judge: {judge.min_similarity:.2f}" in page
    settings.SEMANTIC_JUDGE_SERVES = False
    page = client.get("/admin/ask/calibration/").content.decode()
    assert "It does not serve alone (SEMANTIC_JUDGE_SERVES off)" in page and "judge-least" not in page


def test_the_calibrate_command_recalibrates_the_judge(acme, settings):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    settings.JUDGE_RECALIBRATE_MIN_LABELS = 10
    staff_labels(acme, [0.97] * 12, [0.92])
    out = io.StringIO()
    call_command("calibrate", "--judge", "acme", "--curve", stdout=out)
    assert "13 staff labels of judge judge-test" in out.getvalue() and "recommended 0.93" in out.getvalue()
    assert not JudgeThreshold.objects.exists()
    call_command("calibrate", "--judge", "acme", "--apply", stdout=out)
    assert "applied judge threshold 0.93 (v1)" in out.getvalue()
    with pytest.raises(CommandError, match="no tenant"):
        call_command("calibrate", "--judge", "nobody", stdout=io.StringIO())


def test_a_label_on_a_strict_match_is_scored_by_the_judge_when_staff_make_it(agent, acme, sample_everything):
    """A strict match serves without the judge on the request path (it would not change the
    decision); the staff label on it still carries the real judge's probability, for recalibration."""
    shadow_would_hits(acme, ["correct"], agent)
    decision = CacheDecision.objects.get(ask__tenant=acme, layer="semantic", ask__question=PARAPHRASE)
    assert decision.judge_probability is None and "judge not consulted" in decision.reason
    pair = LabeledPair.objects.get(decision=decision)
    expected, version = guards.score_pair(RETURN_Q, PARAPHRASE, decision.similarity)
    assert version == guards.judge_version() != "" and pair.judge_version == version
    assert pair.judge_probability == pytest.approx(expected) and 0.0 <= expected <= 1.0
