"""What follows the learned judge on the request path (issue 12): the unsure band, a tenant's
recalibrated threshold, aliases the verifier approved and the optional second stage.

The learned judge itself is built on another branch (i12a); ``judge_scores`` stands in for its
contract only: the real semantic lookup runs, and its best candidate then carries the judge's
probability and version (``LayerResult.judge_probability``, ``judge_version``)."""
from __future__ import annotations

import json
import socket
import time

import pytest
from django.test import override_settings
from django.utils import timezone

from caching import learning
from caching.models import JudgeThreshold, PairVerification, SemanticEntry
from caching.thresholds import invalidate_judge_thresholds, model_in_force
from core.cachelayer import LayerResult
from core.models import Tenant
from generation.verifier import VERIFIER_SYSTEM
from supportbot import pipeline
from tests.caching.helpers import JUDGE, cached_lookup, decided, offer, scripted_model, stand_in_judge

POLICY = "What is your return policy?"
# No strict match for POLICY (operations differ: refund vs return) and no veto: by default
# (SEMANTIC_JUDGE_SERVES off) only a strict match serves, so whatever the judge says it is a miss
# the judge may have been unsure about
REFUND = "What is your refund policy?"
RETURN_Q = "How do I return an item?"
PARAPHRASE = "What's the process for sending back a product?"  # the guards serve it


def measured_on() -> dict:
    """A judge recalibration names the embedding model it was measured on (the one in force)."""
    name, version = model_in_force()
    return {"embedding_model": name, "embedding_version": version}


@pytest.fixture
def judge_scores(monkeypatch):
    """{new question: judge probability}."""
    yield stand_in_judge(monkeypatch)
    invalidate_judge_thresholds()


def verifier_reply(text: str) -> tuple[int, dict, bytes]:
    """A non-streamed OpenAI chat completion, as vLLM sends it."""
    body = {"model": "scripted-model", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                    "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 310, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 288}}}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def semantic(state) -> LayerResult:
    return decided(state, "semantic")


# --------------------------------------------------------------------------- the unsure band

def band(p, **fields) -> LayerResult:
    return LayerResult("semantic", fields.pop("disposition", "miss"), candidate="7", judge_probability=p,
                       judge_version=JUDGE, **fields)


def test_the_unsure_band(settings):
    settings.JUDGE_LEARN_MIN_PROBABILITY = 0.3
    assert learning.unsure(band(0.5, reason="judge: p=0.500 below 0.900"))
    assert learning.unsure(band(0.3))  # the floor is in the band
    assert not learning.unsure(band(0.29))
    assert not learning.unsure(band(None))  # the judge did not score it (refused before, or no judge)
    assert not learning.unsure(band(0.5, disposition="hit"))
    assert not learning.unsure(LayerResult("semantic", "miss", judge_probability=0.5))  # no candidate
    # a reliable veto, a locale the judge cannot read and a changed article are final
    assert not learning.unsure(band(0.5, reason="veto: numbers (cached ['30'] vs new ['60'])"))
    assert not learning.unsure(band(0.5, reason="judge abstains: locale de; strict match refused: ..."))
    assert not learning.unsure(band(0.95, reason="cited article changed"))
    # a tenant's recalibrated threshold is the top of the band when it refused the candidate
    assert learning.unsure(band(0.93), tenant_threshold=0.97)
    assert not learning.unsure(band(0.98), tenant_threshold=0.97)


# --------------------------------------------------------------------------- a tenant's threshold

def test_a_tenants_recalibrated_threshold_tightens_the_judge(acme, judge_scores):
    asker = pipeline.Asker(acme, "en", None)
    offer(asker, RETURN_Q)
    judge_scores[PARAPHRASE] = 0.95
    state, served = cached_lookup(asker, PARAPHRASE)
    assert served is not None and semantic(state).judge_version == JUDGE

    JudgeThreshold.objects.create(tenant=acme, judge_version=JUDGE, value=0.97, version=1, target=0.99, **measured_on())
    invalidate_judge_thresholds()
    state, served = cached_lookup(asker, PARAPHRASE)
    assert served is None
    result = semantic(state)
    assert result.disposition == "miss" and "recalibrated threshold 0.97" in result.reason
    recorded = state_decision(state)
    assert (recorded.judge_version, recorded.judge_probability) == (JUDGE, 0.95)

    # another judge version's threshold does not apply; a lower one does not loosen anything
    JudgeThreshold.objects.create(tenant=acme, judge_version=JUDGE, value=0.5, version=2, target=0.99, **measured_on())
    invalidate_judge_thresholds()
    judge_scores[REFUND] = 0.6
    offer(asker, POLICY)
    state, served = cached_lookup(asker, REFUND)
    assert served is None and semantic(state).disposition == "miss"


def state_decision(state):
    from caching.models import AskEvent

    return AskEvent.objects.get(request_id=state.request_id).decisions.get(layer="semantic")


# --------------------------------------------------------------------------- aliases

def approve_alias(entry: SemanticEntry, question: str) -> PairVerification:
    return PairVerification.objects.create(
        entry=entry, tenant_id=entry.tenant_id, question=question,
        normalized_question=pipeline.normalize_question(question), verdict=PairVerification.Verdict.APPROVED,
        verified_at=timezone.now(), judge_probability=0.6, judge_version=JUDGE)


def test_an_approved_alias_serves_its_entry_to_that_question_in_its_scope(acme, initech, judge_scores):
    asker = pipeline.Asker(acme, "en", None)
    offered = offer(asker, POLICY)
    entry = SemanticEntry.objects.get(source_ask__request_id=offered.request_id)
    state, served = cached_lookup(asker, REFUND)
    assert served is None  # before the verifier approved it

    approve_alias(entry, REFUND)
    state, served = cached_lookup(asker, "what is your refund policy")  # same normalised question
    assert served is not None and served.answer == entry.answer
    result = semantic(state)
    assert result.disposition == "hit" and result.candidate == str(entry.pk) and "alias of entry" in result.reason

    # shadow mode: a would-hit, the fresh answer is served
    Tenant.objects.filter(pk=acme.pk).update(semantic_mode=Tenant.SemanticMode.SHADOW)
    acme.refresh_from_db()
    state, served = cached_lookup(pipeline.Asker(acme, "en", None), REFUND)
    assert served is None and semantic(state).disposition == "shadow_hit"
    Tenant.objects.filter(pk=acme.pk).update(semantic_mode=Tenant.SemanticMode.SERVE)
    acme.refresh_from_db()

    # another tenant or locale never reaches the alias
    state, served = cached_lookup(pipeline.Asker(initech, "en", None), REFUND)
    assert served is None or served.answer != entry.answer
    state, served = cached_lookup(pipeline.Asker(acme, "de", None), REFUND)
    assert served is None

    # a purge of the entry (its article changed) takes the alias with it
    SemanticEntry.objects.filter(pk=entry.pk).update(status=SemanticEntry.Status.PURGED)
    state, served = cached_lookup(asker, REFUND)
    assert served is None


def test_a_rejected_or_failed_check_is_no_alias(acme, judge_scores):
    asker = pipeline.Asker(acme, "en", None)
    entry = SemanticEntry.objects.get(source_ask__request_id=offer(asker, POLICY).request_id)
    row = approve_alias(entry, REFUND)
    for verdict in (PairVerification.Verdict.REJECTED, PairVerification.Verdict.ERROR,
                    PairVerification.Verdict.PENDING):
        PairVerification.objects.filter(pk=row.pk).update(verdict=verdict)
        _, served = cached_lookup(asker, REFUND)
        assert served is None, verdict


# --------------------------------------------------------------------------- queueing near misses

def test_a_near_miss_is_queued_after_the_commit(acme, judge_scores, settings, django_capture_on_commit_callbacks):
    settings.JUDGE_LEARN_FROM_MISSES = True
    asker = pipeline.Asker(acme, "en", None)
    offer(asker, POLICY)
    judge_scores[REFUND] = 0.6
    with django_capture_on_commit_callbacks(execute=False) as queued:
        state, served = cached_lookup(asker, REFUND)
    assert served is None and state.near_miss is semantic(state)
    assert len(queued) == 1

    judge_scores[REFUND] = 0.1  # below the floor: not worth a model call
    with django_capture_on_commit_callbacks(execute=False) as queued:
        state, _ = cached_lookup(asker, REFUND)
    assert state.near_miss is None and not queued

    settings.JUDGE_LEARN_FROM_MISSES = False
    judge_scores[REFUND] = 0.6
    with django_capture_on_commit_callbacks(execute=False) as queued:
        cached_lookup(asker, REFUND)
    assert not queued


# --------------------------------------------------------------------------- the second stage

def test_second_stage_serves_what_the_verifier_approves(acme, judge_scores, settings):
    judge_scores[REFUND] = 0.6
    with scripted_model(verifier_reply("Yes"), verifier_reply("no")) as server:
        asker = pipeline.Asker(Tenant.objects.get(pk=acme.pk), "en", None)
        entry_answer = offer(asker, POLICY).answer
        state, served = cached_lookup(asker, REFUND)
        assert served is None and not server.requests  # off by default

        # override_settings, not the settings fixture: one made inside scripted_model's override
        # would restore that override's settings (its dead server's URL) after the test.
        with override_settings(JUDGE_SECOND_STAGE_ENABLED=True):
            state, served = cached_lookup(asker, REFUND)
            assert served is not None and served.answer == entry_answer
            result = semantic(state)
            assert result.disposition == "hit" and result.reason.startswith("second stage: the verifier approved")
            assert "second_stage" in state.timings
            body = server.requests[0]["body"]
            assert body["max_tokens"] == 2 and body["temperature"] == 0.0 and body["stream"] is False
            # static first: the instructions are the system message, the pair comes last
            assert body["messages"][0] == {"role": "system", "content": VERIFIER_SYSTEM}
            user = body["messages"][1]["content"]
            assert user.index(POLICY) < user.index(REFUND) and user.rstrip().endswith("Reply yes or no.")

            state, served = cached_lookup(asker, REFUND)  # the verifier says no this time
            assert served is None and "second stage: reply 'no'" in semantic(state).reason


def test_second_stage_timeout_is_a_miss(acme, judge_scores, settings):
    """A verifier that does not answer within the timeout costs the timeout, and it is a miss."""
    judge_scores[REFUND] = 0.6
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections are accepted by the kernel and never answered
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        with scripted_model() as _, override_settings(VLLM_BASE_URL=url, JUDGE_SECOND_STAGE_ENABLED=True,
                                                      JUDGE_SECOND_STAGE_TIMEOUT_S=0.3):
            asker = pipeline.Asker(Tenant.objects.get(pk=acme.pk), "en", None)
            offer(asker, POLICY)
            started = time.perf_counter()
            state, served = cached_lookup(asker, REFUND)
            took = time.perf_counter() - started
    finally:
        silent.close()
    assert served is None
    result = semantic(state)
    assert result.disposition == "miss" and "verifier timeout" in result.reason
    assert 0.3 <= state.timings["second_stage"] / 1000 < 1.5, took


def test_an_alias_of_another_entry_keeps_no_judge_score_of_that_pair(acme, judge_scores):
    """The judge scored the nearest candidate; an alias serving another entry was not scored by it,
    so its decision (and any label made from it) carries no probability to calibrate with."""
    asker = pipeline.Asker(acme, "en", None)
    policy = SemanticEntry.objects.get(source_ask__request_id=offer(asker, POLICY).request_id)
    shipping = SemanticEntry.objects.get(source_ask__request_id=offer(
        asker, "How long does shipping take?", article="shipping-countries").request_id)
    judge_scores[REFUND] = 0.6
    state, _ = cached_lookup(asker, REFUND)
    nearest = semantic(state).candidate
    assert nearest in (str(policy.pk), str(shipping.pk)) and semantic(state).judge_probability == 0.6
    other = shipping if nearest == str(policy.pk) else policy
    approve_alias(other, REFUND)
    state, served = cached_lookup(asker, REFUND)
    result = semantic(state)
    assert served is not None and result.candidate == str(other.pk)
    assert result.judge_probability is None and result.judge_version == JUDGE
    assert state_decision(state).judge_probability is None
