"""The calibration upload's wiring with a real Celery worker (issue 29, second security review): the
web request stores the pair file and answers 202 without embedding anything; the worker embeds and
calibrates it as a job run, and the staff page then shows its curves."""
from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from caching.models import CalibrationUpload
from core.models import JobRun
from retrieval.embeddings import get_embedder
from tests.jobs.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

CTX = {"tenant": "t1", "locale": "en", "user": None}
ROWS = [
    ("p1", "How do I return an item?", "How can I return an item?", True),
    ("p2", "How do I reset my password?", "How can I reset my password?", True),
    ("n1", "How do I return an item?", "How do I reset my password?", False),
]


def test_an_uploaded_pair_file_is_embedded_and_calibrated_by_the_worker(db, celery_worker, client, tmp_path):
    admin = User.objects.create_superuser("calibrator", password="a-long-test-password-42")
    client.force_login(admin)
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(json.dumps({"id": i, "kind": "paraphrase", "cached": c, "new": n, "should_hit": hit,
                                          "ctx_cached": CTX, "ctx_new": CTX}) for i, c, n, hit in ROWS))
    embedded = get_embedder().model_calls
    with open(path, "rb") as fh:
        page = client.post("/admin/ask/calibration/", {"pairs": fh, "target": "0.99"})
    assert page.status_code == 202
    assert get_embedder().model_calls == embedded  # the web process embedded nothing
    upload = CalibrationUpload.objects.get()

    def done():
        return client.get(f"/admin/ask/calibration/uploads/{upload.pk}").json()["status"] in ("succeeded", "failed")

    wait_until(done, timeout=120, why=lambda: celery_worker.log()[-2000:])
    upload.refresh_from_db()
    assert upload.status == "succeeded", upload.error
    assert upload.calibrated_pairs == 3 and upload.pairs == []
    run = JobRun.objects.get(pk=upload.job_run_id)
    assert (run.job, run.status, run.scanned) == ("calibration_upload", "succeeded", 3)
    assert run.task_id  # run by the worker, not in this process
    assert run.embedded + run.cache_hits == 4  # four distinct texts, embedded (or found) by the worker
    html = client.get(f"/admin/ask/calibration/?upload={upload.pk}").content.decode()
    assert 'data-status="succeeded"' in html and 'data-intent="howto"' in html
