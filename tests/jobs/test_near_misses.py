"""Learning from near misses off the request path, proven with a real Celery worker (issue 12).

The worker asks a model server speaking vLLM's OpenAI protocol (a local one that answers yes or
no on cue: the embedded model cannot be told what to reply; ``tests/generation/test_verifier.py``
runs the verifier against the real embedded model). The learned judge is another branch's work;
``stand_in_judge`` gives the best candidate its contract fields."""
from __future__ import annotations

import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import call_command
from django.test import override_settings

from caching import learning
from caching.models import AskEvent, LabeledPair, PairVerification, SemanticEntry
from caching.purge import purge_citing
from ingestion.models import Article
from supportbot import pipeline
from tests.caching.helpers import cached_lookup, offer, stand_in_judge
from tests.jobs.conftest import start_worker_process, stop_worker_process, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = {"VLLM_MODEL": "verifier-model", "VLLM_MODEL_REVISION": "r1"}
POLICY = "What is your return policy?"
# No strict match for POLICY and no veto: by default (SEMANTIC_JUDGE_SERVES off) a miss, the verifier says yes
REFUND = "What is your refund policy?"
NO_PAIR = "how long do I have to send a parcel back"  # the verifier says no
BOOM = "how long do I have to send stuff back boom"  # the verifier's server fails


class VerifierServer:
    """Answers chat completions with "yes", or "no" when the new question says "parcel", or HTTP 500
    when it says "boom"; keeps the new questions it was asked."""

    def __init__(self):
        self.asked: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                user = body["messages"][-1]["content"]
                new = user.split("New question:", 1)[1]
                server.asked.append(new)
                if "boom" in new:
                    status, payload = 500, {"error": {"message": "model crashed"}}
                else:
                    status, payload = 200, {"model": MODEL["VLLM_MODEL"], "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "no" if "parcel" in new else "yes"},
                         "finish_reason": "stop"}], "usage": {"prompt_tokens": 300, "completion_tokens": 1}}
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def verifier():
    server = VerifierServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def verifier_worker(verifier, django_db_setup, django_db_blocker):
    worker = start_worker_process({"VLLM_BASE_URL": verifier.url, **MODEL, "JUDGE_VERIFIER_TIMEOUT_S": "5"})
    yield worker
    stop_worker_process(worker)


@pytest.fixture
def learning_on(verifier, monkeypatch):
    verifier.asked.clear()
    with override_settings(VLLM_BASE_URL=verifier.url, JUDGE_LEARN_FROM_MISSES=True, **MODEL):
        yield stand_in_judge(monkeypatch)
    # Let the worker finish the checks this test queued before the test's tables are flushed: a
    # check still writing its verdict while the flush truncates deadlocks the two.
    wait_until(lambda: not PairVerification.objects.filter(verdict="pending").exists(), timeout=30)


def test_an_approved_near_miss_becomes_an_alias_and_a_label(demo, verifier, verifier_worker, learning_on):
    acme = demo["acme"]
    asker = pipeline.Asker(acme, "en", None)
    entry = SemanticEntry.objects.get(source_ask__request_id=offer(asker, POLICY).request_id)
    learning_on[REFUND] = learning_on[NO_PAIR] = learning_on[BOOM] = 0.6

    _, served = cached_lookup(asker, REFUND)
    assert served is None  # the customer got a fresh answer; the check runs on the worker
    alias = wait_until(lambda: PairVerification.objects.filter(entry=entry, verdict="approved").first(), timeout=30,
                       why=lambda: verifications_of(entry))
    assert alias.question == REFUND and alias.judge_probability == 0.6 and alias.verifier_model == "verifier-model"
    label = LabeledPair.objects.get(source=LabeledPair.Source.VERIFIER, new_question=REFUND)
    assert (label.should_hit, label.cached_question, label.judge_version) == (True, POLICY, "judge-test")

    state, served = cached_lookup(asker, REFUND)  # the next asker of that question hits
    assert served is not None and served.answer == entry.answer and state.layer == "semantic", decisions_of(state)

    # a rejection is a negative label and no alias; a verifier error is neither
    missed = [cached_lookup(asker, NO_PAIR)[0], cached_lookup(asker, BOOM)[0]]
    rows = wait_until(lambda: [r for r in PairVerification.objects.filter(entry=entry).exclude(verdict="pending")
                               if r.question != REFUND] if PairVerification.objects.filter(
        entry=entry, verdict="pending").count() == 0 else None, timeout=30,
        why=lambda: (verifications_of(entry), [decisions_of(s) for s in missed]))
    verdicts = {r.question: r.verdict for r in rows}
    assert verdicts == {NO_PAIR: "rejected", BOOM: "error"}
    assert LabeledPair.objects.filter(source="verifier", new_question=NO_PAIR, should_hit=False).exists()
    assert not LabeledPair.objects.filter(new_question=BOOM).exists()
    for q in (NO_PAIR, BOOM):
        _, served = cached_lookup(asker, q)
        assert served is None, q
    # each pair was put to the verifier once, however often it was missed
    assert sorted(q.count("boom") + q.count("parcel") for q in verifier.asked) == [0, 1, 1]

    # a purge of the article the entry cites reaches its alias
    purge_citing(Article.objects.get(tenant=acme, locale="en", external_id="return-policy").pk, None)
    _, served = cached_lookup(asker, REFUND)
    assert served is None


def decisions_of(state) -> list[tuple[str, str, str]]:
    """What each layer decided for an Ask, and why: what a failed assertion here prints."""
    return list(AskEvent.objects.get(request_id=state.request_id).decisions.values_list("layer", "disposition", "reason"))


def verifications_of(entry) -> tuple[str, list[tuple[str, str, str]]]:
    """The entry's status and its verification rows (question, verdict, detail): what a timed-out wait prints."""
    entry.refresh_from_db()
    return entry.status, list(PairVerification.objects.filter(entry=entry).values_list("question", "verdict", "detail"))


def test_erasing_a_customer_removes_the_aliases_their_questions_made(demo, verifier_worker, learning_on):
    acme = demo["acme"]
    entry = SemanticEntry.objects.get(
        source_ask__request_id=offer(pipeline.Asker(acme, "en", None), POLICY).request_id)
    learning_on[REFUND] = 0.6
    cached_lookup(pipeline.Asker(acme, "en", "cust-9"), REFUND)
    wait_until(lambda: PairVerification.objects.filter(entry=entry, verdict="approved").exists(), timeout=30,
               why=lambda: verifications_of(entry))
    state, served = cached_lookup(pipeline.Asker(acme, "en", None), REFUND)
    assert served is not None, decisions_of(state)

    out = io.StringIO()
    call_command("customer_erase", "--tenant", "acme", "--customer", "cust-9", stdout=out)
    counts = dict(kv.split("=") for kv in out.getvalue().split())
    assert counts["pairverification"] == "1" and counts["verifier_labels"] == "1"
    assert not PairVerification.objects.exists() and not LabeledPair.objects.filter(new_question=REFUND).exists()
    assert cached_lookup(pipeline.Asker(acme, "en", None), REFUND)[1] is None
    # that miss is a near miss again (another asker's now): let its check finish before the flush
    wait_until(lambda: not PairVerification.objects.filter(verdict="pending").exists(), timeout=30)


def test_the_queue_is_deduplicated_and_rate_limited(demo, learning_on, settings, monkeypatch):
    """The queueing alone (no worker: the tasks wait in the test broker)."""
    settings.JUDGE_VERIFY_MAX_PER_MINUTE = 2
    monkeypatch.setattr(learning, "rate_window", lambda: 30_000_000)  # one rate window throughout
    acme = demo["acme"]
    asker = pipeline.Asker(acme, "en", None)
    offered = offer(asker, POLICY)
    entry = SemanticEntry.objects.get(source_ask__request_id=offered.request_id)
    ask_id = entry.source_ask_id

    def enqueue(question):
        return learning.near_miss_enqueue(acme.pk, ask_id, entry.pk, question,
                                          pipeline.normalize_question(question), 0.6, "judge-test")

    assert enqueue("first question about returns") is not None
    assert enqueue("First question about returns?") is None  # the same normalised question: known
    assert enqueue("second question about returns") is not None
    assert enqueue("third question about returns") is None  # over the tenant's rate this minute
    assert PairVerification.objects.filter(entry=entry).count() == 2


def test_the_nightly_recalibration_runs_on_the_worker(demo, verifier_worker, settings):
    from caching.models import JudgeThreshold
    from modelbuild.tasks import judge_recalibrate_tenants

    acme = demo["acme"]
    LabeledPair.objects.bulk_create(
        [LabeledPair(tenant=acme, cached_question="q", new_question=f"n{i}", should_hit=True, source="label",
                     judge_probability=0.97, judge_version="judge-test") for i in range(60)]
        + [LabeledPair(tenant=acme, cached_question="q", new_question="bad", should_hit=False, source="review",
                       judge_probability=0.93, judge_version="judge-test")])
    judge_recalibrate_tenants.delay()
    row = wait_until(lambda: JudgeThreshold.objects.filter(tenant=acme).first(), timeout=30)
    assert (row.value, row.judge_version, row.positives, row.negatives) == (0.94, "judge-test", 60, 1)
