"""The record writer's own parts: rows written with COPY read back as written, and the writer
thread batches what arrives during its linger."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from django.db import models, transaction

from caching.models import AskEvent, CacheDecision
from supportbot.records import HitRecordWriter, copy_insert, pks_allocate
from tests import factories

# Every character COPY's text format gives a meaning to, and some it does not.
AWKWARD = "tab\there, line\nbreak, return\r, back\\slash, \\N, quote \" ' , ünïcødé ✓ 🙂, end\\"


@pytest.mark.django_db
def test_copied_rows_read_back_exactly_as_written():
    tenant = factories.tenant("records-copy")
    ask_pks, decision_pks = pks_allocate([(AskEvent, 2), (CacheDecision, 1)])
    request_ids = [str(uuid.uuid4()), str(uuid.uuid4())]
    with transaction.atomic():
        copy_insert(AskEvent, [
            dict(request_id=request_ids[0], tenant_id=tenant.pk, locale="en", question=AWKWARD,
                 normalized_question=AWKWARD.casefold(), answer=AWKWARD, status="answered",
                 citations=[{"title": AWKWARD, "version": 3}], timings={"total": 1.25, "note": AWKWARD},
                 cached_tokens=None, ttft_ms=None, total_ms=1.25, streamed=True, prompt_tokens=7),
            dict(request_id=request_ids[1], tenant_id=tenant.pk, locale="de", question="kurz", status="answered"),
        ], ask_pks)
        copy_insert(CacheDecision, [dict(ask_id=ask_pks[0], tenant_id=tenant.pk, layer="semantic",
                                         disposition="miss", reason=AWKWARD, filters={"k": [AWKWARD, None, 1.5]},
                                         similarity=0.123456789012345, threshold=None, signature_difference=None,
                                         lookup_ms=float("inf"))], decision_pks)
    first, second = (AskEvent.objects.get(request_id=r) for r in request_ids)
    assert (first.pk, second.pk) == tuple(ask_pks)
    assert first.question == first.answer == AWKWARD and first.normalized_question == AWKWARD.casefold()
    assert first.citations == [{"title": AWKWARD, "version": 3}]
    assert first.timings == {"total": 1.25, "note": AWKWARD}
    assert (first.cached_tokens, first.ttft_ms, first.total_ms, first.streamed, first.prompt_tokens) == (
        None, None, 1.25, True, 7)
    assert first.created_at is not None and first.created_at == second.created_at  # the batch's time
    # missing fields took their defaults
    assert (second.answer, second.citations, second.timings, second.streamed, second.total_ms) == ("", [], {}, False, 0)
    decision = CacheDecision.objects.get(pk=decision_pks[0])
    assert decision.reason == AWKWARD and decision.filters == {"k": [AWKWARD, None, 1.5]}
    assert decision.similarity == 0.123456789012345 and decision.threshold is None
    assert decision.lookup_ms == float("inf") and decision.ask_id == ask_pks[0]


@pytest.mark.django_db
def test_a_bad_row_writes_nothing_and_says_why():
    tenant = factories.tenant("records-bad")
    pks = pks_allocate([(AskEvent, 2)])[0]
    good = dict(request_id=str(uuid.uuid4()), tenant_id=tenant.pk, locale="en", question="fine", status="answered")
    with pytest.raises(ValueError):  # a value of the wrong type: refused before anything is sent
        with transaction.atomic():
            copy_insert(AskEvent, [good, dict(good, request_id=str(uuid.uuid4()), total_ms="fast")], pks)
    with pytest.raises(Exception, match="invalid input syntax for type uuid"):  # the database checks the rest
        with transaction.atomic():
            copy_insert(AskEvent, [good, dict(good, request_id="not-a-uuid")], pks)
    assert not AskEvent.objects.filter(tenant=tenant).exists()
    with pytest.raises(ValueError):
        copy_insert(AskEvent, [good], pks[:1] + pks)  # as many keys as rows


def test_a_field_type_copy_insert_cannot_write_is_refused():
    from supportbot.records import _copy_spec

    class Odd(models.Model):
        blob = models.BinaryField()

        class Meta:
            app_label = "supportbot"
            managed = False

    with pytest.raises(TypeError, match="Odd.blob"):
        _copy_spec(Odd)


def test_the_writer_wakes_once_a_batch_and_writes_everything_it_was_given(monkeypatch, settings):
    """Records submitted while the writer lingers go in one batch; more than a batch is split;
    flush cuts the linger short; a failing batch does not stop the next one."""
    from supportbot import records

    settings.RECORDS_LINGER_MS = 10_000.0  # only flush ends a linger in this test
    batches, failed = [], []

    def write(batch):
        if not failed:
            failed.append(batch)
            raise RuntimeError("the database went away")
        batches.append(list(batch))

    monkeypatch.setattr(records, "in_web_request", lambda: True)
    monkeypatch.setattr(records, "close_old_connections", lambda: None)
    writer = HitRecordWriter(write, max_batch=4)
    try:
        assert writer.submit("lost")
        assert writer.flush(timeout_s=5)
        started = time.monotonic()
        for i in range(10):
            assert writer.submit(i)
        assert writer.flush(timeout_s=5) and time.monotonic() - started < 5
        assert failed == [["lost"]]
        assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        writers = [t for t in threading.enumerate() if t.name == "hit-record-writer"]
        assert writers
    finally:
        writer.stop(timeout_s=5)
    assert not writer._running()


def test_the_writer_refuses_when_its_queue_is_full(monkeypatch, settings):
    from supportbot import records

    settings.RECORDS_LINGER_MS = 10_000.0
    written = []
    monkeypatch.setattr(records, "in_web_request", lambda: True)
    monkeypatch.setattr(records, "close_old_connections", lambda: None)
    writer = HitRecordWriter(written.extend, max_batch=10, max_queued=3)
    try:
        assert [writer.submit(i) for i in range(5)] == [True, True, True, False, False]  # the caller writes those
        assert writer.flush(timeout_s=5)
    finally:
        writer.stop(timeout_s=5)
    assert written == [0, 1, 2]
