"""Which judge a process serves and when it picks one up (docs/first-run.md): the artefact of the
recipe in force under ``SEMANTIC_JUDGE_DIR``; while there is none the judge abstains and only a strict
match serves, and the process looks again every ``SEMANTIC_JUDGE_RECHECK_S`` seconds, so a judge built
in the background is served without a restart. No database."""
from __future__ import annotations

import shutil

import pytest

from caching import guards
from caching.guards import judge_recipe
from caching.guards.judge import artefact_version
from modelbuild import judge_train

PAYPAL = ("Do you take PayPal?", "Can I pay with PayPal?", 0.7)  # no strict match: the judge decides
STRICT = ("how can i reset my password", "How do I reset my password?", 0.93)  # a strict match


@pytest.fixture
def empty_root(tmp_path, settings):
    settings.SEMANTIC_JUDGE_DIR = tmp_path
    guards.set_learned_judge(None)
    yield tmp_path
    guards.set_learned_judge(None)  # the next test loads the real one again


def test_a_missing_judge_abstains_and_is_served_once_built_without_a_restart(empty_root, settings, judge_built):
    settings.SEMANTIC_JUDGE_RECHECK_S = 3600
    assert guards.learned_judge() is None
    refused = guards.judge(*PAYPAL)
    assert not refused.serve and refused.reason.startswith("judge abstains: not built (")
    assert "strict match refused" in refused.reason
    strict = guards.judge(*STRICT)
    assert strict.serve and strict.reason.startswith("judge abstains: not built (") and "; strict match (" in strict.reason

    shutil.copytree(judge_built, empty_root / judge_built.name)  # what the background build does, renamed into place
    assert guards.learned_judge() is None  # not looked again yet: one stat per SEMANTIC_JUDGE_RECHECK_S
    settings.SEMANTIC_JUDGE_RECHECK_S = 0
    loaded = guards.learned_judge()
    assert loaded is not None and loaded.version == judge_built.name
    judged = guards.judge(*PAYPAL)
    assert judged.probability is not None and judged.judge_version == loaded.version


def test_a_half_written_build_is_not_loaded(empty_root, settings, judge_built):
    """A build writes ``<version>.tmp`` and renames it when complete; the folder without ``judge.json`` is
    not a judge."""
    settings.SEMANTIC_JUDGE_RECHECK_S = 0
    partial = empty_root / judge_built.name
    shutil.copytree(judge_built, partial, ignore=shutil.ignore_patterns("judge.json"))
    assert guards.learned_judge() is None
    shutil.copy(judge_built / "judge.json", partial / "judge.json")
    assert guards.learned_judge() is not None


def test_the_process_serves_the_recipe_in_force(settings, judge_built):
    """The tests serve the small recipe; its version is its own (its question selection is hashed), the
    full recipe's is the one ``make run`` builds, and the trainer and the loader agree on both."""
    assert settings.SEMANTIC_JUDGE_RECIPE == "small" or judge_built.name == judge_train.artefact_version()
    small, full = artefact_version("small"), artefact_version("full")
    assert small != full
    assert small == judge_train.artefact_version(judge_recipe.SMALL)
    assert full == judge_train.artefact_version(judge_recipe.FULL) == judge_train.artefact_version()
    assert judge_built.name == (small if settings.SEMANTIC_JUDGE_RECIPE == "small" else full)


def test_the_small_recipe_trains_on_its_slice_of_the_data():
    questions = judge_train.recipe_questions(judge_recipe.SMALL)
    assert {q.dataset for q in questions} == {"banking77"}
    assert len({q.intent for q in questions}) == judge_recipe.SMALL.intents
    assert {q.split for q in questions} == {"train"}
    assert len(judge_train.recipe_questions(judge_recipe.FULL)) > 5 * len(questions)
