"""A fact of an answer must be in the passages where they say it of the same thing, and a range must be
a range of the passages (``caching.answer_checks.context``). The refused answers are ones the embedded
SmolLM2 model wrote in ``bench.answer_quality --answerer model``: each number in them is somewhere in
the passages, so the facts check alone admitted them. So did the model's echo of a German question,
which states nothing (``degenerate``: ``no_statement``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from caching.answer_checks import CHECKS, Evidence
from caching.answer_checks.context import FactContextCheck, ranges
from caching.answer_checks.degenerate import DegenerateCheck

KB = Path(__file__).resolve().parents[2] / "kb"


def passages(*articles: str, tenant: str = "acme", locale: str = "en") -> str:
    return "\n".join((KB / tenant / locale / f"{a}.md").read_text().split("---", 2)[2] for a in articles)


RESET = ("How long is the password reset link valid?", passages("password-reset", "change-email-address"))
HOURS = ("What are your phone support hours on Saturday?", passages("opening-hours"))
RETURNS = ("How long do I have to return an item?", passages("return-policy", "refunds"))


@pytest.mark.parametrize("context, answer, detail", [
    (RESET, "The password reset link is valid for 24 hours.", "24 hour: the passages say it of something else"),
    (HOURS, "The customer support team is open on Saturday, 10:00 a.m. – 11:00 a.m. in English and German.",
     "range 10:00-11:00 is no range of the passages"),
])
def test_a_fact_taken_from_a_passage_about_something_else_is_refused(context, answer, detail):
    question, source = context
    refusal = FactContextCheck().refusal(Evidence(question, answer, source, "en"))
    assert refusal is not None and str(refusal) == f"fact_out_of_context: {detail}"


@pytest.mark.parametrize("context, answer", [
    (RESET, "The reset link is valid for 30 minutes, and only the most recent link works [1]."),
    (RESET, "It is valid for thirty minutes [1]."),
    (HOURS, "On Saturday, phone support is open from 9:00 a.m. to 5:00 p.m. MT [1]."),
    (HOURS, "Saturday: 9 am – 5 pm MT [1]."),
    (RETURNS, "You can return an item within 30 days of delivery; Plus members have 60 days [1]."),
])
def test_the_same_facts_said_of_the_right_thing_pass(context, answer):
    question, source = context
    assert FactContextCheck().refusal(Evidence(question, answer, source, "en")) is None


def test_a_quoted_passage_sentence_passes_whatever_it_is_about():
    question, source = RESET
    quote = "We send a confirmation link to the new address. The link is valid for **24 hours**."
    assert FactContextCheck().refusal(Evidence(question, quote.replace("**", ""), source, "en")) is None


def test_ranges_of_times_amounts_and_days_in_both_languages():
    assert ranges("Monday to Friday: 8:00 a.m. – 8:00 p.m. MT, 2–4 business days") == {
        ("8:00", "8:00"), ("2:00", "4:00")}
    assert ranges("Montag bis Freitag 9:00–18:00 Uhr, 3 bis 5 Werktage") == {("9:00", "18:00"), ("3:00", "5:00")}
    assert ranges("+1 (555) 010-4400, AO-482913, 2024-2025") == set()


def test_admission_runs_the_check():
    assert any(isinstance(check, FactContextCheck) for check in CHECKS)


@pytest.mark.parametrize("answer", [
    "Wie lange ist der Link zum Zurücksetzen des Passworts gültig?",  # what SmolLM2 wrote, and it was admitted
    "Wie lange ist der Link zum Zurücksetzen des Passworts gültig",
    "Do you mean the reset link? Or the confirmation link?",
])
def test_an_answer_that_states_nothing_is_refused(answer):
    question = "Wie lange ist der Link zum Zurücksetzen des Passworts gültig?"
    refusal = DegenerateCheck().refusal(Evidence(question, answer, passages("password-reset", locale="de"), "de"))
    assert refusal is not None and refusal.code == "no_statement"
    stated = "Der Link ist 30 Minuten gültig [1]. Haben Sie ihn nicht bekommen?"
    assert DegenerateCheck().refusal(Evidence(question, stated, passages("password-reset", locale="de"), "de")) is None
