"""Review actions: confirm wrong takes the entry out of every answer cache at once."""
import pytest

from caching.layers.exact import ExactLayer
from caching.models import AuditLog, Label, LabeledPair, ReviewItem, SemanticEntry
from core.models import Tenant
from supportbot import pipeline, review
from tests.caching.helpers import cached_lookup
from tests.staff.conftest import served_hit

RETURN_Q = "How do I return an item?"
PARAPHRASE = "How can I return an item?"


def _open_item(ask, decision):
    _, item = review.feedback_record(ask, False, "wrong answer")
    assert item is not None and item.decision_id == decision.pk
    return item


def _still_served(tenant, question) -> str:
    """Which answer layer serves the question now ('none' when no cache does)."""
    state, served = cached_lookup(pipeline.Asker(tenant, "en", None), question)
    return state.layer if served is not None else "none"


def test_confirm_wrong_quarantines_a_semantic_hit_from_every_layer(acme, agent, sample_nothing):
    ask, decision, offered = served_hit(acme, RETURN_Q, PARAPHRASE)
    entry = SemanticEntry.objects.get(pk=int(decision.candidate))
    assert ExactLayer().lookup(offered.key, acme.pk).hit  # the cached question's own exact entry
    assert _still_served(acme, RETURN_Q) == "exact"

    removed = review.review_confirm_wrong(_open_item(ask, decision), "scope", agent)

    assert removed == {"semantic": 1, "exact": 1}
    entry.refresh_from_db()
    assert entry.status == SemanticEntry.Status.QUARANTINED
    assert not ExactLayer().lookup(offered.key, acme.pk).hit
    assert _still_served(acme, PARAPHRASE) == "none"
    assert _still_served(acme, RETURN_Q) == "none"
    item = ReviewItem.objects.get(ask=ask)
    assert (item.status, item.reason, item.resolved_by) == ("confirmed_wrong", "scope", agent)
    pair = LabeledPair.objects.get(decision=decision)
    assert (pair.should_hit, pair.reason, pair.source) == (False, "scope", "review")
    assert Label.objects.get(decision=decision).verdict == "wrong"
    actions = set(AuditLog.objects.filter(actor=agent).values_list("action", flat=True))
    assert actions == {"quarantine", "review_confirm_wrong"}
    with pytest.raises(review.ReviewError):  # resolved once
        review.review_dismiss(ReviewItem.objects.get(pk=item.pk), agent)


def test_confirm_wrong_on_an_exact_only_entry_finds_its_key(acme, agent, sample_nothing):
    Tenant.objects.filter(pk=acme.pk).update(semantic_mode=Tenant.SemanticMode.OFF)
    acme.refresh_from_db()
    ask, decision, offered = served_hit(acme, RETURN_Q, RETURN_Q)
    assert ask.serving_layer == "exact"
    assert not SemanticEntry.objects.filter(tenant=acme, status="active").exists()

    removed = review.review_confirm_wrong(_open_item(ask, decision), "stale_source", agent)

    assert removed == {"semantic": 0, "exact": 1}
    assert not ExactLayer().lookup(offered.key, acme.pk).hit
    assert not LabeledPair.objects.exists()  # the same question: no threshold to calibrate


def test_not_wrong_dismisses_and_keeps_serving(acme, agent, sample_nothing):
    ask, decision, _ = served_hit(acme, RETURN_Q, PARAPHRASE)
    review.review_dismiss(_open_item(ask, decision), agent)
    assert ReviewItem.objects.get(ask=ask).status == "dismissed"
    assert SemanticEntry.objects.get(pk=int(decision.candidate)).status == "active"
    assert LabeledPair.objects.get(decision=decision).should_hit is True
    assert _still_served(acme, PARAPHRASE) == "semantic"
    assert AuditLog.objects.filter(action="review_dismiss", actor=agent).count() == 1


def test_edit_and_approve_stores_a_verified_staff_answer(acme, agent, sample_nothing):
    ask, decision, _ = served_hit(acme, RETURN_Q, PARAPHRASE)
    corrected = "Start a return from your order history within 30 days [1]."
    entry = review.review_correct(_open_item(ask, decision), corrected, "other", agent)

    assert entry.source == SemanticEntry.Source.STAFF and entry.question == PARAPHRASE
    assert entry.citations == ask.citations
    assert SemanticEntry.objects.get(pk=int(decision.candidate)).status == "quarantined"
    state, served = cached_lookup(pipeline.Asker(acme, "en", None), PARAPHRASE)
    assert state.layer == "exact" and served.answer == corrected
    item = ReviewItem.objects.get(ask=ask)
    assert (item.status, item.corrected_entry_id) == ("corrected", entry.pk)
    log = AuditLog.objects.get(action="review_correct")
    assert log.actor == agent and log.details["entry"] == entry.pk


def test_review_actions_through_the_queue_page(client, acme, agent, sample_nothing):
    ask, decision, _ = served_hit(acme, RETURN_Q, PARAPHRASE)
    item = _open_item(ask, decision)
    client.force_login(agent)
    page = client.get("/admin/ask/queue/")
    assert page.status_code == 200
    html = page.content.decode()
    for text in (PARAPHRASE, RETURN_Q, "Confirm wrong", "wrong answer", f"{decision.similarity:.3f}"):
        assert text in html, text
    # without a reason nothing happens and the card says why
    response = client.post(f"/admin/ask/queue/{item.pk}/confirm", {}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"choose a reason" in response.content
    assert ReviewItem.objects.get(pk=item.pk).status == "open"
    response = client.post(f"/admin/ask/queue/{item.pk}/confirm", {"reason": "entity"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert b'data-status="confirmed_wrong"' in response.content
    assert SemanticEntry.objects.get(pk=int(decision.candidate)).status == "quarantined"


def test_a_quarantine_whose_exact_delete_fails_says_so_and_never_reports_it_removed(acme, monkeypatch):
    """Issue 29 (second security review): Redis refusing the delete is an error, not "removed"."""
    import redis as redis_lib

    from caching.layers import exact as exact_module
    from caching.models import AuditLog
    from supportbot.review import ReviewError, entry_quarantine
    from tests.caching.helpers import offer

    state = offer(pipeline.Asker(acme, "en"), "What is your return policy?")
    entry = SemanticEntry.objects.get(exact_key=state.key)

    class Down:
        def pipeline(self, *a, **k):
            raise redis_lib.ConnectionError("refused")

    monkeypatch.setattr(exact_module, "get_redis", lambda: Down())
    with pytest.raises(ReviewError, match="exact cache could not be reached"):
        entry_quarantine(entry, [state.key], None, why="test")
    entry.refresh_from_db()
    assert entry.status == SemanticEntry.Status.QUARANTINED
    assert AuditLog.objects.filter(action="quarantine_incomplete").exists()
    assert not AuditLog.objects.filter(action="quarantine").exists()
    monkeypatch.undo()
    assert entry_quarantine(entry, [state.key], None, why="again") == {"semantic": 0, "exact": 1}
