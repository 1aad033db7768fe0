"""Threshold calibration on a known labelled set, from pair files and labelled pairs."""
import io
import json

import pytest
from django.core.management import call_command

from caching import calibration
from caching.calibration import Pair
from caching.models import CalibrationUpload, LabeledPair, ThresholdSetting
from core.models import JobRun
from retrieval.embeddings import get_embedder

RETURN = ("How do I return an item?", "How can I return an item?")
RESET = ("How do I reset my password?", "How can I reset my password?")
ADDRESS = ("How do I change my shipping address?", "How can I change the shipping address?")
SALE = ("Can I return a sale item?", "Can I return an item?")  # the guards refuse it: condition "sale"


def known_set(wrong_similarity: float) -> list[Pair]:
    """Four right pairs at 0.95-0.80 and one pair labelled wrong (that the guards accept)."""
    return [Pair(*RETURN, True, 0.95), Pair(*RESET, True, 0.90), Pair(*ADDRESS, True, 0.85),
            Pair(*RETURN, True, 0.80), Pair(*RESET, False, wrong_similarity), Pair(*SALE, False, 0.99)]


def point(curve, t):
    return next(p for p in curve.points if p.threshold == pytest.approx(t))


def test_precision_coverage_and_the_recommendation_on_a_known_set(db):
    curves = calibration.calibrate(known_set(0.70), target=0.99)
    howto = curves["howto"]
    assert (howto.positives, howto.negatives, howto.blocked) == (4, 1, 0)
    assert (point(howto, 0.70).served, point(howto, 0.70).precision) == (5, pytest.approx(0.8))
    assert (point(howto, 0.71).precision, point(howto, 0.71).coverage) == (1.0, 1.0)
    assert point(howto, 0.85).coverage == pytest.approx(0.75)
    assert point(howto, 0.96).served == 0 and point(howto, 0.96).precision is None
    assert howto.recommended == pytest.approx(0.71)  # the lowest threshold from which precision holds
    assert "lower bound" in howto.note  # four pairs prove little
    sale = curves[next(i for i, c in curves.items() if c.blocked)]
    assert sale.recommended is None and "no pair passes the guards" in sale.note
    # a lower target accepts the wrong pair's threshold too
    assert calibration.calibrate(known_set(0.70), target=0.75)["howto"].recommended == pytest.approx(0.40)


def test_a_wrong_pair_at_high_similarity_gets_no_threshold_but_a_note(db):
    howto = calibration.calibrate(known_set(0.97), target=0.99)["howto"]
    assert howto.recommended is None
    assert "fix the guards" in howto.note


def test_only_positives_is_no_evidence(db):
    curves = calibration.calibrate([Pair(*RETURN, True, 0.9)], target=0.99)
    assert curves["howto"].recommended is None and "no negative pairs" in curves["howto"].note


def test_labelled_pairs_get_real_similarities_once(acme):
    LabeledPair.objects.create(tenant=acme, cached_question=RETURN[0], new_question=RETURN[1], should_hit=True,
                               source="label")
    LabeledPair.objects.create(tenant=acme, cached_question=RESET[0], new_question="How do I delete my account?",
                               should_hit=False, reason="intent", source="review")
    pairs = calibration.pairs_from_db()
    sims = {p.new: p.similarity for p in pairs}
    assert sims[RETURN[1]] > 0.9 > sims["How do I delete my account?"]
    assert set(LabeledPair.objects.values_list("embedding_version", flat=True)) == {get_embedder().version}


def _write_pairs(tmp_path) -> str:
    ctx = {"tenant": "t1", "locale": "en", "user": None}
    rows = [
        {"id": "p1", "kind": "paraphrase", "cached": RETURN[0], "new": RETURN[1], "should_hit": True},
        {"id": "p2", "kind": "paraphrase", "cached": RESET[0], "new": RESET[1], "should_hit": True},
        {"id": "n1", "kind": "condition", "cached": SALE[0], "new": SALE[1], "should_hit": False},
        {"id": "n2", "kind": "different", "cached": RETURN[0], "new": "How do I reset my password?",
         "should_hit": False},
        {"id": "x1", "kind": "tenant", "cached": RETURN[0], "new": RETURN[0], "should_hit": False,
         "ctx_new": {"tenant": "t2", "locale": "en", "user": None}},
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"ctx_cached": ctx, "ctx_new": ctx, **r}) for r in rows))
    return str(path)


def test_calibrate_command_reads_pair_files_and_applies(tmp_path, db, django_capture_on_commit_callbacks):
    path = _write_pairs(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    call_command("calibrate", path, "--target", "0.99", stdout=out, stderr=err)
    assert "1 pairs across tenants or locales left out" in err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == "4 pairs, target precision 0.990"
    howto = next(line for line in lines if line.startswith("howto"))
    assert howto.split()[1:3] == ["2", "1"]  # two right pairs, one wrong, in the howto class
    out = io.StringIO()
    call_command("calibrate", path, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["howto"]["recommended"] == pytest.approx(0.40)  # the wrong pair is refused by the guards
    with django_capture_on_commit_callbacks(execute=True):
        call_command("calibrate", path, "--apply", stdout=io.StringIO())
    assert ThresholdSetting.objects.get(intent="howto").value == pytest.approx(0.40)


def test_calibration_page_shows_curves_and_takes_an_upload(client, cache_admin, tmp_path, monkeypatch):
    """Issue 29: the web request checks and stores the file (202) and embeds nothing; the worker's
    service calibrates it (the wiring with a real worker: tests/jobs/test_calibration_upload_worker.py)."""
    client.force_login(cache_admin)
    LabeledPair.objects.create(cached_question=RESET[0], new_question=RESET[1], should_hit=False, source="review",
                               reason="other")
    page = client.get("/admin/ask/calibration/")
    assert page.status_code == 200 and b'data-intent="howto"' in page.content and b"<svg" in page.content

    def no_embedding(*args, **kwargs):
        raise AssertionError("the web request embedded")

    with monkeypatch.context() as m:
        m.setattr(calibration, "embed_texts", no_embedding)
        with open(_write_pairs(tmp_path), "rb") as fh:
            page = client.post("/admin/ask/calibration/", {"pairs": fh, "target": "0.99"})
    assert page.status_code == 202
    upload = CalibrationUpload.objects.get()
    assert (upload.status, upload.file_pairs, upload.crossed, upload.include_db) == ("queued", 4, 1, False)
    html = page.content.decode()
    assert f'data-upload="{upload.pk}" data-status="queued"' in html and "a worker embeds and calibrates it" in html
    status = client.get(f"/admin/ask/calibration/uploads/{upload.pk}").json()
    assert (status["status"], status["file_pairs"]) == ("queued", 4)

    calibration.calibration_upload_run(upload.pk)  # what the worker runs
    upload.refresh_from_db()
    assert upload.status == "succeeded" and upload.calibrated_pairs == 4 and upload.pairs == []  # texts dropped
    assert JobRun.objects.get(pk=upload.job_run_id).job == "calibration_upload"
    html = client.get(f"/admin/ask/calibration/?upload={upload.pk}").content.decode()
    assert "pairs.jsonl: 4 pairs (1 across tenants or locales left out)" in html
    assert "4 labelled pairs" in html  # the database pair is left out when the box is unticked
    assert 'data-intent="howto"' in html and "apply-threshold" in html


@pytest.mark.parametrize("content, why", [
    (b"not json at all\n", "pairs.jsonl:1: not JSON"),
    (b'{"id": "p1", "cached": "a"}\n', "pairs.jsonl:1: missing"),
    (b"\n\n", "pairs.jsonl: no pairs"),
])
def test_a_bad_pair_file_is_a_400_that_stores_nothing(client, cache_admin, tmp_path, content, why):
    client.force_login(cache_admin)
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(content)
    with open(path, "rb") as fh:
        page = client.post("/admin/ask/calibration/", {"pairs": fh, "target": "0.99"})
    assert page.status_code == 400 and why in page.content.decode() and "nothing stored" in page.content.decode()
    assert not CalibrationUpload.objects.exists() and not JobRun.objects.filter(job="calibration_upload").exists()


def test_a_target_out_of_range_is_a_400(client, cache_admin, tmp_path):
    client.force_login(cache_admin)
    with open(_write_pairs(tmp_path), "rb") as fh:
        page = client.post("/admin/ask/calibration/", {"pairs": fh, "target": "0.2"})
    assert page.status_code == 400 and "between 0.5 and 1" in page.content.decode()
    assert not CalibrationUpload.objects.exists()


def test_an_upload_is_seen_by_its_uploader_and_platform_staff_only(client, cache_admin, agent, tmp_path):
    client.force_login(cache_admin)
    with open(_write_pairs(tmp_path), "rb") as fh:
        assert client.post("/admin/ask/calibration/", {"pairs": fh, "target": "0.99"}).status_code == 202
    upload = CalibrationUpload.objects.get()
    client.force_login(agent)  # a support agent of some tenants, not the uploader
    assert client.get(f"/admin/ask/calibration/uploads/{upload.pk}").status_code == 404
    assert client.get(f"/admin/ask/calibration/?upload={upload.pk}").status_code == 404


def test_an_upload_past_the_cap_is_refused_413_unread(client, cache_admin, tmp_path, settings, monkeypatch):
    """Issue 29 (second security review): a large pair file would embed under the encoder lock."""
    settings.CALIBRATION_UPLOAD_MAX_BYTES = 200
    client.force_login(cache_admin)

    def unread(*args, **kwargs):
        raise AssertionError("the pair file was read")

    monkeypatch.setattr(calibration, "read_pairs", unread)
    with open(_write_pairs(tmp_path), "rb") as fh:
        page = client.post("/admin/ask/calibration/", {"pairs": fh, "target": "0.99"})
    assert page.status_code == 413 and "CALIBRATION_UPLOAD_MAX_BYTES" in page.content.decode()
    assert not CalibrationUpload.objects.exists()


def test_retention_deletes_old_calibration_uploads_with_their_pairs(db):
    from datetime import timedelta

    from django.utils import timezone

    from supportbot.retention import records_purge_older_than

    old = CalibrationUpload.objects.create(file_name="old.jsonl", pairs=[["a", "b", True]], target=0.99,
                                           status="failed")
    recent = CalibrationUpload.objects.create(file_name="new.jsonl", pairs=[["c", "d", True]], target=0.99)
    CalibrationUpload.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=400))
    counts = records_purge_older_than(days=30)
    assert counts["calibration_uploads"] == 1
    assert list(CalibrationUpload.objects.values_list("pk", flat=True)) == [recent.pk]
