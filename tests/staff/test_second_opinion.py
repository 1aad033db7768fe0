"""The automatic second opinion: a fresh answer for a sampled semantic hit, never served."""
from caching.models import ReviewItem, SampledHit
from supportbot import review
from tests.caching.helpers import scripted_model
from tests.staff.conftest import served_hit

RETURN_Q = "How do I return an item?"
PARAPHRASE = "How can I return an item?"
CACHED = "Unused items can be returned within 30 days of delivery for a full refund [1]."


def test_disagreeing_fresh_answer_flags_the_hit(acme, sample_everything, settings,
                                                django_capture_on_commit_callbacks):
    settings.SECOND_OPINION_ENABLED = True
    with django_capture_on_commit_callbacks(execute=False) as queued:
        ask, decision, _ = served_hit(acme, RETURN_Q, PARAPHRASE, answer=CACHED)
    assert len(queued) == 1  # the task is queued after the commit, for the semantic sample only
    sample = SampledHit.objects.get(decision=decision)
    with scripted_model("Our Denver flagship store is open from 9 a.m. to 8 p.m. every day [1].") as server:
        item = review.second_opinion(sample)
    assert len(server.requests) == 1
    assert item is not None and (item.source, item.status, item.decision_id) == ("auto_flag", "open", decision.pk)
    assert "Second opinion disagrees" in item.note and "Denver" in item.note
    ask.refresh_from_db()
    assert ask.answer == CACHED  # nothing served or stored from the second opinion


def test_agreeing_fresh_answer_flags_nothing(acme, sample_everything):
    _, decision, _ = served_hit(acme, RETURN_Q, PARAPHRASE, answer=CACHED)
    with scripted_model("You can return unused items within 30 days of delivery and get a full refund [1]."):
        assert review.second_opinion(SampledHit.objects.get(decision=decision)) is None
    assert not ReviewItem.objects.exists()
