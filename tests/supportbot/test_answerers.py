"""The answerers: the extractive one quotes the help centre (sentences, list items, table rows
chosen with the real embedding model, in document order, within the budget, each group with its
citation, streamed line by line); which answerer runs follows the settings; the answerer is part
of the answer spec, so the two never share a cache entry."""
from __future__ import annotations

import json

import pytest

from caching.layers.exact import exact_key
from generation.base import Passage
from generation.prompt import TenantPrompt
from retrieval.embeddings import embed_texts
from supportbot import pipeline
from supportbot.answerers import Answer, AnswerRequest, answerer_name, extractive, get_answerer
from supportbot.answerers.extractive import ExtractiveAnswerer, split_units
from tests.caching.helpers import cached_lookup, offer

UK = ("- **Standard** (4–7 business days): £5.95, free on orders over £70\n"
      "- **Express** (2–3 business days): £12.95\n\nImport VAT and duties are included in the price.")


def passage(number, text, article="shipping", heading="Shipping — United Kingdom", chunk_id=None):
    return Passage(number=number, chunk_id=chunk_id or number, article_id=article, title=heading.split(" — ")[0],
                   url=f"https://help.example/{article}", version=1, text=text, similarity=0.6, heading=heading)


def answer(question, passages, **settings_values) -> tuple[list[str], Answer]:
    request = AnswerRequest(tenant_slug="acme", tenant_prompt=TenantPrompt("Acme", "", ()), passages=passages,
                            question=question, embed=lambda texts: embed_texts(texts))
    deltas, final = [], None
    for item in ExtractiveAnswerer().stream(request):
        if isinstance(item, Answer):
            final = item
        else:
            deltas.append(item)
    return deltas, final


def test_units_are_sentences_list_items_and_table_rows_in_document_order():
    text = ("Orders placed before 2:00 p.m. Mountain Time ship the same day. We deliver to Washington, D.C. and "
            "all 50 states.\n\n1. Sign in.\n2. Open **Orders**.\n\n| Plan | Price |\n|---|---|\n| Pro | $9 |")
    units = split_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("sentence", "Orders placed before 2:00 p.m. Mountain Time ship the same day."),
        ("sentence", "We deliver to Washington, D.C. and all 50 states."),
        ("item", "Sign in."), ("item", "Open Orders."), ("row", "Plan: Pro · Price: $9")]
    assert [u.marker for u in units[2:4]] == ["1.", "2."]


def test_the_answer_quotes_the_units_that_answer_in_document_order_with_their_citation(db):
    deltas, final = answer("How long does shipping to the United Kingdom take?",
                           [passage(1, UK), passage(2, "Gift cards never expire.", article="gift-cards",
                                                    heading="Gift cards")])
    assert final.text == "".join(deltas) and len(deltas) == len(final.text.split("\n")) > 1  # a line a delta
    lines = final.text.split("\n")
    assert lines[0] == "United Kingdom:"
    standard = next(i for i, line in enumerate(lines) if "4–7 business days" in line)
    express = next(i for i, line in enumerate(lines) if "2–3 business days" in line)
    assert standard < express  # document order, whatever their scores
    assert "**" not in final.text and final.text.endswith("[1]") and "never expire" not in final.text
    assert [p.article_id for p in final.citations] == ["shipping"]
    assert final.result.finish_reason == "stop" and not final.not_covered


def test_the_budget_keeps_the_best_unit_only(db, settings):
    settings.ASK_EXTRACT_MAX_CHARS = 20
    _, final = answer("How much does express shipping to the UK cost?", [passage(1, UK)])
    assert final.text.count("•") == 1 and "£12.95" in final.text


def test_nothing_similar_enough_is_not_covered(db, settings):
    settings.ASK_EXTRACT_MIN_SIMILARITY = 0.99
    deltas, final = answer("How long does shipping to the United Kingdom take?", [passage(1, UK)])
    assert deltas == [] and final.not_covered and final.text == ""


def test_each_article_is_cited_under_its_own_number(db, monkeypatch):
    monkeypatch.setattr(extractive, "MARGIN", 1.0)  # keep every unit that fits the budget
    _, final = answer("Tell me about UK shipping and gift cards.",  # no fact asked: every unit within MARGIN
                      [passage(1, UK), passage(2, "Gift cards never expire and have no fees.", article="gift-cards",
                                               heading="Gift cards")])
    assert {p.article_id for p in final.citations} == {"shipping", "gift-cards"}
    numbers = {p.article_id: f"[{i}]" for i, p in enumerate(dict.fromkeys(final.citations), start=1)}
    assert "[1]" in final.text and "[2]" in final.text and len(numbers) == 2


def test_which_answerer_runs_follows_the_settings(settings):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", ""
    assert answerer_name() == "extractive" and get_answerer().name == "extractive"
    settings.VLLM_BASE_URL = "http://127.0.0.1:9"
    assert answerer_name() == "model" and get_answerer().name == "model"
    settings.ASK_ANSWERER = "extractive"
    assert get_answerer().name == "extractive"


def test_the_default_install_answers_from_the_help_centre_and_caches_it(client, acme, settings):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", ""
    body = {"question": "How long does shipping to the United Kingdom take?", "stream": True}
    response = client.post("/api/t/acme/ask", data=json.dumps(body), content_type="application/json")
    events = b"".join(response.streaming_content).decode().split("\n\n")
    deltas = [e for e in events if e.startswith("event: delta")]
    done = json.loads(next(e for e in events if e.startswith("event: done")).split("data: ", 1)[1])
    assert len(deltas) > 1 and done["answerer"] == "extractive" and done["model"] == "extractive"
    assert "4–7 business days" in done["answer"] and done["status"] == "answered"
    assert [c["article_id"] for c in done["citations"]][0] == "shipping-times-and-costs"

    again = client.post("/api/t/acme/ask", data=json.dumps({"question": body["question"]}),
                        content_type="application/json").json()
    assert again["cache"]["layer"] == "exact" and again["answer"] == done["answer"]
    assert again["answerer"] == "extractive"


def test_the_two_answerers_never_share_a_cache_entry(acme, settings):
    question = "How long do I have to return an item?"
    settings.ASK_ANSWERER = "extractive"
    extractive = offer(pipeline.Asker(acme, "en"), question, "You can send it back within 30 days of delivery [1].")
    assert extractive.admitted and extractive.spec.answerer == "extractive"
    settings.ASK_ANSWERER = "model"
    state, served = cached_lookup(pipeline.Asker(acme, "en"), question)
    assert state.spec.answerer == "model" and exact_key(state.spec) != extractive.key
    assert served is None  # neither the exact nor the semantic cache serves the other answerer's answer
    assert pipeline.semantic_scope(state).prompt_version != pipeline.semantic_scope(extractive).prompt_version


@pytest.mark.parametrize("question, expected, article", [
    ("Do you ship to Canada?", "Canada", "shipping-countries"),
    ("How long do I have to return an item?", "30 days", "return-policy"),
    ("Hello, 12, how long does shipping to the United Kingdom take?", "4–7 business days", "shipping-times-and-costs"),
])
def test_the_issues_questions_get_correct_cited_answers(acme, settings, question, expected, article):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", ""
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), question)
    assert outcome.status == "answered" and expected in outcome.answer, outcome.answer
    assert article in [c["article_id"] for c in outcome.citations]
    assert "not ship to Canada" not in outcome.answer and "12 days" not in outcome.answer


REFUND_AMOUNT = ("You get back the price you paid for each returned item. The return label fee ($5.95, CA$7.95, £4.95 "
                 "or €5.95) is deducted unless you are a Plus member or the item was faulty.")


@pytest.mark.parametrize("question, mine, others", [
    # was: "The return label fee ($5.95, CA$7.95, £4.95 or €5.95) is deducted ..." (the lead's held-out set: every
    # currency's fee beside the asked country's, judged wrong)
    ("How much is the return label fee in Canada?", "(CA$7.95)", ("$5.95", "£4.95", "€5.95")),
    ("What do I pay for the return label in Austria?", "(€5.95)", ("$5.95 ", "CA$", "£")),
])
def test_an_amount_given_in_every_currency_is_quoted_in_the_asked_countrys(db, question, mine, others):
    _, final = answer(question, [passage(1, REFUND_AMOUNT, article="refunds", heading="Refunds — How much is refunded")])
    assert mine in final.text and not [o for o in others if o in final.text], final.text


def test_an_amount_given_in_every_currency_stays_whole_for_a_question_about_no_country(db):
    _, final = answer("How much is the return label fee?",
                      [passage(1, REFUND_AMOUNT, article="refunds", heading="Refunds — How much is refunded")])
    assert "($5.95, CA$7.95, £4.95 or €5.95)" in final.text, final.text


WARRANTY_DE_INTRO = (
    "Outdoor-Ausrüstung muss einiges aushalten, und wir stehen hinter dem, was wir verkaufen. Für jedes Produkt, das Sie "
    "bei Acme Outfitters kaufen, ob Eigenmarke oder Fremdmarke, gilt eine **eingeschränkte Garantie von 2 Jahren** ab "
    "dem Zustelldatum. In diesem Artikel erfahren Sie, was die Garantie abdeckt, wie Sie einen Garantiefall melden und "
    "was Reparaturen nach Ablauf der Garantie kosten.")
WARRANTY_DE_REPAIRS = (
    "Unser Basecamp Repair Centre in Denver repariert auch Ausrüstung, für die keine Garantie mehr besteht.\n"
    "- **Diagnosegebühr**: 35 € (35 $ bzw. 30 £). Sie wird mit den Reparaturkosten verrechnet, wenn Sie die Reparatur "
    "beauftragen.\n"
    "- **Kostenvoranschlag**: innerhalb von 5 Werktagen.\n"
    "- **Bearbeitungszeit**: 10–15 Werktage, nachdem Sie den Kostenvoranschlag angenommen haben.")


def test_a_sentence_saying_what_the_article_covers_does_not_answer_a_fact_question(db):
    # was: "In diesem Artikel erfahren Sie, was die Garantie abdeckt, ... und was Reparaturen nach Ablauf der Garantie
    # kosten." (it holds the question's words and no figure), refused as incomplete
    _, final = answer("Wie lange dauert eine Reparatur nach Ablauf der Garantie?", [
        passage(1, WARRANTY_DE_INTRO, article="warranty", heading="Garantie und Reparaturen"),
        passage(2, WARRANTY_DE_REPAIRS, article="warranty",
                heading="Garantie und Reparaturen — Reparaturen nach Ablauf der Garantie")])
    assert "10–15 Werktage" in final.text and "In diesem Artikel" not in final.text, final.text
