"""A count question is answered with the figure that counts the asked thing, over the demo help centre,
and an answer giving another thing's figure is not cached (``caching.answer_checks.counted``).
Found by the lead's third held-out set: "How many wishlists am I allowed to have?" was answered with
"If a SKU is already on the wishlist, the quantities are added together, up to a maximum of 10." and
that answer was served from the exact and the semantic cache."""
from __future__ import annotations

import pytest

from supportbot import pipeline


@pytest.fixture(autouse=True)
def extractive(settings):
    settings.VLLM_BASE_URL, settings.ASK_ANSWERER = "", "extractive"


@pytest.mark.django_db
@pytest.mark.parametrize("question, fact, neighbour", [
    ("How many wishlists am I allowed to have?", "20 wishlists", "maximum of 10"),
    ("How many rows can my wishlist CSV have?", "200 rows", "maximum of 10"),
])
def test_the_figure_counting_the_asked_thing_leads(acme, question, fact, neighbour):
    outcome = pipeline.ask(pipeline.Asker(acme, "en"), question)
    assert outcome.status == "answered", outcome.status
    assert fact in outcome.answer.replace("**", ""), outcome.answer
    assert neighbour not in outcome.answer, outcome.answer
    admission = next(d for d in outcome.decisions if d["layer"] == "admission")
    # stored, unless a rule of its own keeps it out ("my wishlist CSV" is about the customer's own account)
    assert admission["disposition"] == "stored" or admission["reason"].startswith("ineligible"), admission
