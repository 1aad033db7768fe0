"""A follow-up that points back at the conversation, asked in the customer's own words, is answered from the article
the assistant's last reply came from (``pipeline.continued``), and never cached; a message that asks in its own words
after such a reply is still judged by its own words."""
from __future__ import annotations

import pytest

from supportbot import pipeline
from supportbot.conversation import Conversation, Turn


@pytest.fixture(autouse=True)
def extractive(settings):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"


# set 18's lc18-09 (in-sample since the twenty-third session)
EXPORT = ("can i get my acme order history as a spreadsheet? doing my gear budget for the year",
          "Yes. Go to Account > Settings > Privacy > Download your data, tick Orders, choose a date range and pick CSV "
          "as the format, then click Request export. We email you when the file is ready, usually within 2 hours.",
          "got the email and downloaded the zip, theres an orders.csv in there",
          "That's the one. The ZIP contains one CSV file per data set you selected. Dates use the ISO format, amounts "
          "use a dot as the decimal separator, and the currency is in a separate column.")
WEIRD = "yeah but when i double click it in excel all the product names with ä and é turn into weird symbols"


def asked(tenant, *texts: str, locale: str = "en") -> pipeline.AskOutcome:
    return pipeline.ask(pipeline.Asker(tenant, locale), Conversation(tuple(
        Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts))))


def admission(outcome) -> dict:
    return next(d for d in outcome.decisions if d["layer"] == "admission")


def test_a_follow_up_pointing_back_is_answered_from_the_last_replys_article_and_never_cached(acme):
    """Was: handed off ("the help centre never states symbol, weird"): the customer's words for what goes wrong are
    not the article's, and the conversation's words lower the model's probability further."""
    messages = (*EXPORT, WEIRD)
    outcome = asked(acme, *messages)
    assert outcome.status == "answered", outcome.answer
    assert "From Text/CSV" in outcome.answer and "UTF-8" in outcome.answer, outcome.answer
    assert admission(outcome)["disposition"] != "stored"
    again = asked(acme, *messages)
    assert again.layer not in ("exact", "semantic") and "From Text/CSV" in again.answer


def test_a_question_in_its_own_words_after_the_reply_is_not_answered_by_the_thread(acme):
    """The same thread, then a question of its own about something no article states: still handed off, though
    the export article states "file", "order" and "email"."""
    outcome = asked(acme, *EXPORT, "Do you also send the order file to my accountant's email every month?")
    assert outcome.status == "not_covered", outcome.answer


def test_without_a_reply_from_the_help_centre_nothing_is_continued(acme):
    """A reply that is small talk states no article's words: the follow-up is judged by itself."""
    outcome = asked(acme, "hi there", "Hello! How can I help?", WEIRD)
    assert outcome.status != "answered" or "From Text/CSV" not in outcome.answer
