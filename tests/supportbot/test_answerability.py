"""Questions the help centre does not answer (issue 34): an answerability decision before any answer is
written, an honest hand-off with related links, nothing of it cached, and a new article that covers the
question makes it answerable at once. The real pipeline, the real embedding model and the committed
answerability artefact."""
from __future__ import annotations

import json

import pytest
from django.test import override_settings

from caching import admission
from caching.answer_checks import Evidence
from caching.answer_checks.answerable import AnswerableCheck
from caching.layers import exact_layer
from caching.models import AskEvent, CacheDecision, SemanticEntry
from core.models import Tenant
from generation.prompt import NOT_COVERED, not_covered_text
from retrieval.services import index_sync
from supportbot import pipeline
from supportbot.answerability import Verdict
from tests import factories
from tests.caching.helpers import scripted_model
from tests.supportbot.test_chat import parse_sse

pytestmark = pytest.mark.django_db


def ask(tenant, question, locale="en"):
    return pipeline.ask(pipeline.Asker(Tenant.objects.get(pk=tenant.pk), locale), question)


def assert_handed_off(outcome, tenant, locale="en"):
    assert outcome.status == AskEvent.Status.NOT_COVERED, (outcome.answer, outcome.reason)
    assert outcome.answer == not_covered_text(locale) and outcome.citations == []
    assert outcome.handoff == tenant.handoff_text
    assert len(outcome.related) <= 3
    api = outcome.to_api()
    assert api["status"] == "not_covered" and api["citations"] == []
    assert api["related"] == [{k: r[k] for k in ("article_id", "title", "url")} for r in outcome.related]


@pytest.mark.parametrize("question", [
    "Do you offer a student discount?",  # the price-match article's "discount code"
    "Is there an Acme app for Android tablets?",  # the articles that mention "the Acme app"
])
def test_a_shared_incidental_word_does_not_make_a_passage_an_answer(acme, question):
    outcome = ask(acme, question)
    assert_handed_off(outcome, acme)
    assert "not answerable" in outcome.reason


@pytest.mark.parametrize("question", [
    "Can I rent a tent for a weekend?",  # nearest: weekend delivery
    "Who is the CEO of Acme Outfitters?",  # nearest: contact support
])
def test_the_nearest_article_is_not_quoted_when_it_does_not_answer(acme, question):
    assert_handed_off(ask(acme, question), acme)


@pytest.mark.parametrize("question", [
    "Gibt es einen Studentenrabatt?",  # a shared compound part: "Rabatt" of the price-match sentences
    "Gibt es einen Outlet-Store in Zürich?",  # nearest: the Basecamp store's opening hours, the countries served
])
def test_german_questions_the_help_centre_does_not_answer_are_handed_off(acme, question):
    """Two training (``dev``) questions: German's held-out rate, well short of English's, is the benchmark's
    to report (``bench.answerability``); this is the decision's behaviour."""
    outcome = ask(acme, question, "de")
    assert_handed_off(outcome, acme, "de")
    assert outcome.answer != NOT_COVERED and "Hilfe-Center" in outcome.answer  # the hand-off in German


@pytest.mark.parametrize("tenant, locale, question, article", [
    ("acme", "en", "How long do I have to return an item?", "return-policy"),
    ("initech", "en", "How much does the Pro plan cost?", "subscription-plans"),
    ("acme", "de", "Wie lange habe ich Zeit, einen Artikel zurückzugeben?", "return-policy"),
])
def test_questions_the_help_centre_answers_are_still_answered(demo, tenant, locale, question, article):
    outcome = ask(demo[tenant], question, locale)
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
    assert article in [c["article_id"] for c in outcome.citations]
    assert outcome.related == [] and outcome.to_api()["related"] == []


def test_a_hand_off_is_never_stored_in_a_cache_and_asked_again_it_is_decided_again(acme):
    question = "Do you offer a student discount?"
    first = ask(acme, question)
    second = ask(acme, question)
    assert_handed_off(first, acme)
    assert_handed_off(second, acme)
    assert second.layer == AskEvent.ServingLayer.NONE  # neither the exact nor the semantic cache served it
    state = pipeline.prepare(pipeline.Asker(acme, "en"), question)
    assert exact_layer.lookup(state.key, acme.pk).disposition == "miss"
    assert not SemanticEntry.objects.filter(tenant=acme, normalized_question=state.normalized).exists()
    admissions = CacheDecision.objects.filter(ask__request_id__in=[first.request_id, second.request_id],
                                              layer="admission")
    assert [d.disposition for d in admissions] == ["refused", "refused"]
    assert not CacheDecision.objects.filter(ask__request_id__in=[first.request_id, second.request_id],
                                            disposition="stored").exists()


def test_a_new_article_covering_the_question_makes_it_answerable_without_a_restart(acme):
    question = "Do you offer gift wrapping?"
    assert_handed_off(ask(acme, question), acme)
    factories.article(acme, "gift-wrapping", "# Gift wrapping\n\nWe gift wrap any order for $4.95 an item: choose "
                      "Gift wrapping at checkout and add a message for the card.", title="Gift wrapping")
    index_sync(tenant_id=acme.pk)
    after = ask(acme, question)
    assert after.status == AskEvent.Status.ANSWERED, after.reason
    assert [c["article_id"] for c in after.citations] == ["gift-wrapping"] and "$4.95" in after.answer


def test_admission_refuses_an_answer_citing_no_passage_that_passed_the_check(acme):
    state = pipeline.prepare(pipeline.Asker(acme, "en"), "Do you offer a student discount?")
    pipeline.retrieve(state)
    first = state.passages[0]
    state.answer = first.text[:200] + " [1]"
    state.citations = [pipeline.citation(first, state.article_pks[first.chunk_id])]
    state.result = pipeline.GenerationResult(text=state.answer, finish_reason="stop", model="extractive",
                                             prompt_tokens=0, completion_tokens=0, cached_tokens=None,
                                             ttft_ms=None, total_ms=0.0)
    state.answerability = Verdict(False, 0.1, 0.5, first.chunk_id, "not answerable")
    decision = admission.check(state)
    assert decision.disposition == "refused" and decision.reason.startswith("not_answerable"), decision.reason
    assert AnswerableCheck().refusal(Evidence("q", "a", "p", "en", answerable=None)) is None  # not checked: no say


def test_with_the_model_answerer_an_unanswerable_question_never_reaches_the_model(acme):
    with scripted_model("Students get 10% off with the code STUDENT10 [1].") as model, \
            override_settings(ASK_ANSWERER="model"):
        outcome = ask(acme, "Do you offer a student discount?")
    assert_handed_off(outcome, acme)
    assert model.requests == []  # no GPU time for a question the knowledge base cannot answer


def test_the_chat_page_and_the_api_show_the_hand_off_with_related_links_not_as_the_answer(client, acme):
    response = client.post("/api/t/acme/ask", data=json.dumps({"question": "Do you offer a student discount?"}),
                           content_type="application/json")
    body = response.json()
    assert response.status_code == 200 and body["status"] == "not_covered" and body["citations"] == []
    assert body["handoff"] == acme.handoff_text and 1 <= len(body["related"]) <= 3
    page = client.post("/t/acme/ask", {"question": "Do you offer a student discount?", "locale": "en"})
    html = page.content.decode()
    assert "Not an answer to your question, but perhaps related" in html
    assert body["related"][0]["url"] in html
    streamed = client.post("/api/t/acme/ask", data=json.dumps({"question": "Do you offer a student discount?",
                                                               "stream": True}), content_type="application/json")
    events = parse_sse(b"".join(streamed.streaming_content).decode())
    done = json.loads(events[-1][1])
    assert events[-1][0] == "done" and done["status"] == "not_covered" and done["related"] == body["related"]


def test_an_irregular_verb_form_is_the_subject_the_article_states(acme):
    """'wore' is the return policy's 'worn': the question is answered, not handed off."""
    result = pipeline.ask(pipeline.Asker(acme, "en"), "Can I return a jacket I wore once?")
    assert result.status == "answered", result.reason


def artefact_with(tmp_path, **thresholds):
    """The committed answerability artefact with some thresholds changed, as a file of its own."""
    from django.conf import settings

    body = json.loads(open(settings.ANSWERABILITY_MODEL).read())
    body["thresholds"].update(thresholds)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(body))
    return path


def test_a_german_passage_whose_article_does_not_state_the_asked_noun_needs_the_nouns_threshold(acme, tmp_path):
    """The warehouse in Leipzig is stated, Dresden is not: the passage about the warehouses must reach the
    nouns threshold, not only German's own. A question whose nouns the article states is not affected. (The
    names check, which hands off "in Dresden" before any threshold, is off here: this is the threshold's test.)"""
    question = "Haben Sie ein Lager in Dresden?"
    with override_settings(ANSWERABILITY_MODEL=artefact_with(tmp_path, **{"de:nouns": 0.999}), NAME_CHECK_LOCALES=[]):
        outcome = ask(acme, question, "de")
        assert_handed_off(outcome, acme, "de")
        assert "its article does not state Dresden" in outcome.reason, outcome.reason
        stated = ask(acme, "Wie lange dauert der Expressversand nach Deutschland?", "de")
        assert stated.status == AskEvent.Status.ANSWERED, stated.reason
    (tmp_path / "plain").mkdir()
    with override_settings(ANSWERABILITY_MODEL=artefact_with(tmp_path / "plain", **{"de:nouns": 0.0}), NAME_CHECK_LOCALES=[]):
        state = pipeline.prepare(pipeline.Asker(acme, "de"), question)
        pipeline.retrieve(state)
        if state.vector is None:
            state.vector = pipeline.embed_question(state)
        pipeline.check_answerable(state)
        verdict = state.answerability  # without a nouns threshold, German's own decides
        own = json.loads((tmp_path / "plain" / "model.json").read_text())["thresholds"]["de"]
        assert verdict.threshold == pytest.approx(own)
        assert verdict.answerable == (verdict.probability >= verdict.threshold)


def test_a_german_passage_whose_article_does_not_state_the_first_noun_needs_the_head_threshold(acme, tmp_path):
    """"Welches Gewicht hat die GPS-Uhr?" asks about a weight; the returns and warranty articles name the GPS
    watch but no weight: their passages must reach the head threshold. "Haben Sie ein Lager in Dresden?" asks about
    a warehouse, which the article states; only a later noun (Dresden) is unstated, so the nouns threshold
    decides, however high the head threshold is."""
    model = artefact_with(tmp_path, **{"de:head": 0.999, "de:nouns": 0.0})
    # (the property check, which would hand "Gewicht" off first, is off: this is the head threshold's test)
    with override_settings(ANSWERABILITY_MODEL=model, NAME_CHECK_LOCALES=[], PROPERTY_CHECK_LOCALES=[]):
        outcome = ask(acme, "Welches Gewicht hat die GPS-Uhr?", "de")
        assert_handed_off(outcome, acme, "de")
        assert "< 0.999" in outcome.reason, outcome.reason
        state = pipeline.prepare(pipeline.Asker(acme, "de"), "Haben Sie ein Lager in Dresden?")
        pipeline.retrieve(state)
        if state.vector is None:
            state.vector = pipeline.embed_question(state)
        pipeline.check_answerable(state)
        own = json.loads(model.read_text())["thresholds"]["de"]
        assert state.answerability.threshold == pytest.approx(own)


def test_a_german_question_whose_nouns_the_article_states_is_answered(demo):
    """Every noun stated, one through the parts of a compound ("Expressversand" = "Express" + "Versand")."""
    outcome = ask(demo["acme"], "Wie lange dauert der Expressversand nach Deutschland?", "de")
    assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
    assert "shipping-times-and-costs" in [c["article_id"] for c in outcome.citations]


def test_a_german_passage_whose_article_states_no_subject_term_never_answers(acme, tmp_path):
    """German rests on the words the question shares with an article (the embedding model is English): a
    compound whose head alone an article has ("Studentenrabatt", "Rabatt") is handed off whatever the
    model's probability, here with every threshold at 0; a compound stated through its parts is answered.
    ``SUBJECT_GROUNDED_LOCALES`` empty turns the rule off."""
    zero = {"de": 0.0, "de:nouns": 0.0, "de:head": 0.0, "default": 0.0}
    with override_settings(ANSWERABILITY_MODEL=artefact_with(tmp_path, **zero)):
        outcome = ask(acme, "Gibt es einen Studentenrabatt?", "de")
        assert_handed_off(outcome, acme, "de")
        assert "no retrieved article states any word the question asks about" in outcome.reason, outcome.reason
        parts = ask(acme, "Wie teuer ist die Samstagslieferung in den USA?", "de")
        assert parts.status == AskEvent.Status.ANSWERED, parts.reason
        assert "weekend-delivery" in [c["article_id"] for c in parts.citations]
        with override_settings(SUBJECT_GROUNDED_LOCALES=[]):
            assert ask(acme, "Gibt es einen Studentenrabatt?", "de").status == AskEvent.Status.ANSWERED


def test_an_answer_below_the_store_threshold_is_shown_and_recorded_but_never_cached(acme, tmp_path, settings):
    """A cache repeats an answer to every later customer, so admission asks for more certainty than answering
    once: with the English store threshold out of reach, a question the help centre answers is answered on
    every ask, refused at admission with ``uncertain_answerable``, and neither cache holds it. Off
    (``ANSWERABILITY_STORE_CHECK``), the same answer is stored."""
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"
    question = "How long do I have to return an item?"
    with override_settings(ANSWERABILITY_MODEL=artefact_with(tmp_path, **{"en:store": 1.01})):
        first, second = ask(acme, question), ask(acme, question)
        for outcome in (first, second):
            assert outcome.status == AskEvent.Status.ANSWERED, outcome.reason
            assert "30 days" in outcome.answer, outcome.answer
        assert second.layer == AskEvent.ServingLayer.NONE
        admissions = CacheDecision.objects.filter(ask__request_id__in=[first.request_id, second.request_id],
                                                  layer="admission")
        assert [d.reason.split(":")[0] for d in admissions] == ["uncertain_answerable"] * 2
        state = pipeline.prepare(pipeline.Asker(acme, "en"), question)
        assert exact_layer.lookup(state.key, acme.pk).disposition == "miss"
        assert not SemanticEntry.objects.filter(tenant=acme, normalized_question=state.normalized).exists()
        with override_settings(ANSWERABILITY_STORE_CHECK=False):
            off = ask(acme, question)
        assert CacheDecision.objects.get(ask__request_id=off.request_id, layer="admission").disposition == "stored"


def test_a_german_question_that_names_nothing_is_never_cached(acme, settings):
    """"Wie alt bist du?" shares only "alt" with the password article ("altes Passwort"); whatever it is answered
    with, it is not cached (it was served from the exact cache on the second ask). A question naming what it asks
    about is cached as before."""
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"
    question = "Wie alt bist du?"
    first, second = ask(acme, question, "de"), ask(acme, question, "de")
    assert second.layer == AskEvent.ServingLayer.NONE
    for outcome in (first, second):
        if outcome.status == AskEvent.Status.ANSWERED:
            decision = CacheDecision.objects.get(ask__request_id=outcome.request_id, layer="admission")
            assert decision.reason.startswith("uncertain_answerable"), decision.reason
    named = "Wie lange dauert der Expressversand nach Deutschland?"
    ask(acme, named, "de")
    assert ask(acme, named, "de").layer == AskEvent.ServingLayer.EXACT
