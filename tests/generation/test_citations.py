"""parse_answer: citations resolve only to the passages given; forgotten markers are inferred honestly."""
from __future__ import annotations

import pytest

from generation.base import Passage
from generation.citations import parse_answer
from generation.prompt import NOT_COVERED

PASSAGES = [
    Passage(1, 11, "returns", "Returns and refunds", "https://help.example/returns", 3,
            "Unused items can be returned within 30 days of delivery. Refunds go to the original payment method "
            "within 5 business days after the parcel arrives at our warehouse.", 0.82),
    Passage(2, 12, "shipping", "Shipping countries", "https://help.example/shipping", 1,
            "We ship to Germany, Austria and Switzerland. Standard delivery takes 2 to 4 business days; "
            "express delivery arrives the next business day for 9.90 EUR.", 0.61),
    Passage(3, 13, "warranty", "Warranty", "https://help.example/warranty", 2,
            "All tents and backpacks carry a two-year warranty against manufacturing defects. Accidental damage "
            "is not covered by the warranty.", 0.55),
]


def numbers(parsed):
    return [p.number for p in parsed.citations]


def test_markers_resolve_in_order_of_first_use_without_duplicates():
    parsed = parse_answer("Express costs 9.90 EUR [2]. Returns take 30 days [1][2].", PASSAGES)
    assert numbers(parsed) == [2, 1]
    assert parsed.cited_explicitly and not parsed.not_covered
    assert parsed.text == "Express costs 9.90 EUR [2]. Returns take 30 days [1][2]."
    assert parsed.citations[0].article_id == "shipping" and parsed.citations[0].version == 1


@pytest.mark.parametrize("raw, text, cited", [
    ("Returns take 30 days [1, 3].", "Returns take 30 days [1][3].", [1, 3]),
    ("Returns take 30 days [Passage 2].", "Returns take 30 days [2].", [2]),
    ("See [1-3].", "See [1][2][3].", [1, 2, 3]),
    ("Returns take 30 days [7]. Shipping [2].", "Returns take 30 days. Shipping [2].", [2]),
    ("Injected [0] and [12] and [2].", "Injected and and [2].", [2]),
])
def test_marker_forms_and_unknown_numbers(raw, text, cited):
    parsed = parse_answer(raw, PASSAGES)
    assert parsed.text == text
    assert numbers(parsed) == cited
    assert parsed.cited_explicitly


def test_forgotten_markers_are_inferred_from_a_real_overlap():
    parsed = parse_answer("You can return unused items within 30 days of delivery, and the refund reaches "
                          "your original payment method.", PASSAGES)
    assert numbers(parsed) == [1]
    assert not parsed.cited_explicitly and not parsed.not_covered


def test_only_unknown_markers_fall_back_to_inference():
    parsed = parse_answer("Express delivery arrives the next business day for 9.90 EUR [5].", PASSAGES)
    assert numbers(parsed) == [2]
    assert parsed.text == "Express delivery arrives the next business day for 9.90 EUR."
    assert not parsed.cited_explicitly


def test_no_overlap_means_no_citation():
    parsed = parse_answer("Our stores open at nine and we love hiking.", PASSAGES)
    assert parsed.citations == [] and not parsed.cited_explicitly and not parsed.not_covered


def test_one_shared_word_is_not_a_real_overlap():
    assert parse_answer("Your delivery will be lovely.", PASSAGES).citations == []


@pytest.mark.parametrize("raw", [
    "NOT_COVERED",
    "  NOT_COVERED.",
    "I think NOT_COVERED [1]",
    "I'm sorry, but I don't have information about gift cards.",
    "The passages do not mention gift cards.",
    "I cannot answer that question.",
    "There is no information about gift cards in the passages.",
    "",
])
def test_not_covered_and_refusals(raw):
    parsed = parse_answer(raw, PASSAGES)
    assert parsed.not_covered
    assert parsed.text == NOT_COVERED and parsed.citations == []


def test_an_answer_that_something_is_not_covered_is_still_an_answer():
    parsed = parse_answer("Accidental damage is not covered by the warranty [3].", PASSAGES)
    assert not parsed.not_covered and numbers(parsed) == [3]


def test_label_and_control_tokens_are_stripped():
    parsed = parse_answer("Answer: We ship to Austria [2].<|im_end|>", PASSAGES)
    assert parsed.text == "We ship to Austria [2]."


def test_text_after_the_model_restarts_the_prompt_structure_is_dropped():
    parsed = parse_answer("We ship to Austria [2].\n\nQuestion:\n<question>\nDo you ship to Mars?", PASSAGES)
    assert parsed.text == "We ship to Austria [2]." and numbers(parsed) == [2]
    rambling = parse_answer("<passage>\nThe capital of France is Paris.\n</passage>", PASSAGES)
    assert rambling.not_covered and rambling.text == NOT_COVERED


def test_no_passages_no_citations():
    parsed = parse_answer("We ship to Austria [1].", [])
    assert parsed.citations == [] and parsed.text == "We ship to Austria."
