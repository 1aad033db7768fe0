"""The learned eligibility model: trained on labelled intents, evaluated on held-out intents, and
allowed to pass over soft rules only.

A model trained on a slice of the labelled intents (seconds) stands in for the full artefact
(``manage.py train_eligibility``, about two minutes) where a test needs one it can steer: the code
path is the same, only the data is smaller."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from django.test import override_settings

from caching import eligibility_train as et
from caching import guards
from caching.guards import eligibility_model as em
from caching.guards.eligibility import RULES, classify, classify_rules, set_eligibility_model
from caching.guards.signature import parsed
from tests.caching.helpers import cached_lookup, decided, decision
from supportbot import pipeline

SMALL = em.EligibilityConfig(folds=3, min_selected=5)


@pytest.fixture(scope="module")
def slice_examples() -> list[et.Example]:
    """Every fourth labelled intent's first 40 training questions (every category is present)."""
    examples = et.load_examples(splits=("train",))
    intents = sorted({e.intent for e in examples})[::4]
    taken: dict[str, int] = {}
    out = []
    for e in examples:
        if e.intent in intents and taken.get(e.intent, 0) < 40:
            taken[e.intent] = taken.get(e.intent, 0) + 1
            out.append(e)
    assert {e.category for e in out} == set(et.CATEGORIES)
    return out


@pytest.fixture(scope="module")
def small_artefact(tmp_path_factory, slice_examples) -> Path:
    out = tmp_path_factory.mktemp("elig") / "elig-test"
    et.train_artefact(out, SMALL, version="elig-test", examples=slice_examples, progress=lambda m: None)
    return out


@pytest.fixture
def eager_model(small_artefact):
    """The small model with its threshold at 0: it would let in every question a soft rule refuses."""
    model = em.EligibilityModel(small_artefact)
    model.threshold = 0.0
    set_eligibility_model(model)
    yield model
    set_eligibility_model(None)


def digest(path: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(path.iterdir())}


# --------------------------------------------------------------------------- labels and training

def test_every_intent_of_clinc150_and_banking77_has_one_known_label():
    intents = json.loads((em.DATA_DIR / "eligibility_intents.json").read_text())["intents"]
    from modelbuild.judge_data import load_banking77, load_clinc150

    assert {q.intent for q in load_clinc150() + load_banking77()} == set(intents)
    assert {v["category"] for v in intents.values()} == set(et.CATEGORIES) | {"exclude"}
    # a left-out intent says why
    assert all(v.get("why") for v in intents.values() if v["category"] == "exclude")


def test_a_rebuild_gives_the_same_artefact(tmp_path, small_artefact, slice_examples):
    again = tmp_path / "elig-test"
    et.train_artefact(again, SMALL, version="elig-test", examples=slice_examples, progress=lambda m: None)
    assert digest(again) == digest(small_artefact)


def test_the_held_out_intent_evaluation_reproduces_and_never_scores_a_seen_intent(small_artefact, slice_examples):
    meta = json.loads((small_artefact / "eligibility.json").read_text())
    folds = et.grouped_folds(slice_examples, SMALL.folds, SMALL.seed)
    for train_idx, test_idx in folds:
        assert not {slice_examples[i].intent for i in train_idx} & {slice_examples[i].intent for i in test_idx}
    proba = et.out_of_fold(slice_examples, SMALL)
    assert et.report(slice_examples, proba, et.threshold_for(slice_examples, proba, SMALL)) == meta["out_of_fold"]
    assert meta["threshold"] == et.threshold_for(slice_examples, proba, SMALL)


def test_the_threshold_is_the_lowest_score_that_keeps_the_target_precision():
    p = np.array([0.99, 0.98, 0.97, 0.96, 0.95, 0.90])
    general = np.array([1, 1, 1, 1, 0, 1], dtype=bool)
    assert et.choose_threshold(p, general, 1.0, 2, 0.5) == 0.96
    assert et.choose_threshold(p, general, 1.0, 5, 0.5) == 1.01  # never: too few above any safe cut
    assert et.choose_threshold(p, general, 0.8, 2, 0.5) == 0.90
    assert et.choose_threshold(p, general, 0.8, 2, 0.92) == 0.95  # not below the floor


def test_the_stored_model_scores_as_scikit_learn_does(small_artefact, slice_examples):
    model = em.EligibilityModel(small_artefact)
    pipe = et.make_pipeline(SMALL).fit([e.norm for e in slice_examples], [e.category for e in slice_examples])
    assert model.classes == list(pipe.classes_)
    for q in ["I forgot my password, what should I do?", "how many points are on my gold card", "x",
              "what is the weather like in paris right now " * 20, "zzzz qqqq"]:
        norm = parsed(q)[0]
        expected = pipe.predict_proba([norm])[0]
        got = model.probabilities(norm)
        assert [got[c] for c in model.classes] == pytest.approx(list(expected), abs=1e-12)


# --------------------------------------------------------------------------- hard and soft rules

def test_every_rule_is_marked_hard_or_soft():
    assert set(RULES.values()) == {"hard", "soft"}
    # the rules' decisions name their rule
    for q in ["Cancel my order", "Where is my order?", "I ordered a dress last week", "What is the latest version?"]:
        assert classify_rules(q).rule in RULES


@pytest.mark.parametrize("question,rule", [
    ("Cancel my order", "action_imperative"),
    ("Can you close my account?", "action_imperative"),
    ("Where is my order?", "personal_state_question"),
    ("Where is order 88213?", "personal_record"),
    ("my name is Jane Doe, how do I reset my password?", "personal_details"),
    ("How many loyalty points do I have?", "personal_own_account"),
    ("My transfer didn't go through", "personal_status_event"),
    ("My card is blocked", "personal_my_subject"),
    ("I was charged twice for the same purchase", "personal_status_event"),
    ("Is it too late to return it?", "personal_pronoun_state"),
    # a soft rule fires first, a hard one later: the hard one decides
    ("I ordered shoes last month, when will it arrive?", "personal_pronoun_state"),
    ("I ordered shoes, meine Bestellung ist weg", "foreign_personal"),
    ("I ordered shoes, is A12345678 shipped", "record_id"),
])
def test_the_model_never_overrides_a_hard_rule(eager_model, question, rule):
    e = classify(question)
    assert not e.eligible, e.reason
    assert e.rule == rule and RULES[rule] == "hard"


@pytest.mark.parametrize("question", [
    "I ordered a dress last week",
    "I need a new card",
    "I want to open an account",
    "What is the latest version of the app?",
])
def test_a_soft_rule_yields_to_the_model_and_the_reason_says_so(eager_model, question):
    rules = classify_rules(question)
    assert not rules.eligible and RULES[rules.rule] == "soft"
    e = classify(question)
    assert e.eligible and e.category == "general" and e.rule == "model"
    assert e.model_version == "elig-test" and e.probability is not None
    assert "eligibility model" in e.reason and f"overrides the soft rule {rules.rule}" in e.reason
    assert len(e.reason) <= 300  # fits the decision record


def test_below_the_threshold_the_rule_stands_with_the_probability_recorded(small_artefact):
    model = em.EligibilityModel(small_artefact)
    model.threshold = 1.01
    set_eligibility_model(model)
    try:
        e = classify("I ordered a dress last week")
        assert not e.eligible and e.rule == "personal_narrative"
        assert e.model_version == "elig-test" and 0.0 <= e.probability <= 1.0
        assert "< 1.010" in e.reason
    finally:
        set_eligibility_model(None)


def test_switched_off_the_rules_decide_alone():
    with override_settings(ELIGIBILITY_MODEL=False):
        set_eligibility_model(None)
        try:
            assert guards.learned_eligibility() is None
            for q in ["I ordered a dress last week", "I need a new card", "What is your refund policy?"]:
                assert classify(q) == classify_rules(q)
        finally:
            set_eligibility_model(None)


@pytest.mark.parametrize("bad,error", [(b"What is your refund policy?", TypeError), (None, TypeError),
                                       ("", ValueError), ("   \n", ValueError)])
def test_bad_input_gets_a_clear_error(bad, error):
    with pytest.raises(error, match="question"):
        classify(bad)
    with pytest.raises(error, match="question"):
        classify_rules(bad)


def test_huge_and_binary_looking_text_is_classified(eager_model):
    assert classify("x" * 100_000).category in et.CATEGORIES
    assert classify("I ordered \x00\xff\ufffd something " * 500).eligible  # soft only: the eager model lets it in
    assert classify("\x00\x01\x02").category in et.CATEGORIES


# --------------------------------------------------------------------------- through the pipeline

def test_the_override_is_recorded_with_the_decision(acme, eager_model):
    state, _ = cached_lookup(pipeline.Asker(acme, "en", None), "I ordered a dress last week")
    live = decided(state, "eligibility")
    assert live.disposition == "miss" and "overrides the soft rule personal_narrative" in live.reason
    row = decision(state, "eligibility")
    assert row.judge_version == "elig-test" and row.judge_probability == pytest.approx(live.judge_probability)
    assert "eligibility model" in row.reason
    assert decided(state, "exact").disposition != "bypass"  # the shared caches were consulted
