"""The judge's cross-encoder: the fine-tuned MiniLM that reads both questions at once.

Uses the artefact built for the current data and recipe (``var/judge``; the tests' small recipe,
built by ``tests/conftest.py``); no database:

    .venv/bin/python -m pytest tests/caching/test_cross_encoder.py -q
"""
from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from caching import guards  # noqa: E402
from caching.guards.judge import recipe_name  # noqa: E402
from caching.guards.judge_recipe import RECIPES  # noqa: E402
from modelbuild import judge_train  # noqa: E402
from caching.guards.cross_encoder import CrossEncoderScorer  # noqa: E402


def _scorer(learned, quantize: bool | None = None) -> CrossEncoderScorer:
    """A fresh scorer of the artefact's cross-encoder, quantised as the judge serves it unless told."""
    config = learned.meta["config"]
    quantize = config.get("ce_quantize", False) if quantize is None else quantize
    return CrossEncoderScorer(learned.path / "cross_encoder", config["ce_max_length"], quantize=quantize)


@pytest.fixture(scope="module")
def scorer(learned):
    return _scorer(learned)


# (cached, new): a paraphrase in other words, and one-detail traps no veto catches (another
# payment method; the opposite operation): those are the judge's to refuse. Differences a veto
# catches (cost vs duration, a place) never reach it, so it is not trained on them.
PARAPHRASE = ("Can I pay with PayPal?", "Do you take PayPal?")
TRAP = ("Can I pay with PayPal?", "Can I pay with a credit card?")
OPPOSITE = ("How do I open an account?", "How do I close an account?")
DELIVERY = ("How long does delivery take?", "How long does shipping usually take?")


def test_the_artefact_has_a_trained_cross_encoder(learned):
    figures = learned.meta["cross_encoder"]
    assert (learned.path / "cross_encoder" / "config.json").exists()
    assert figures["steps"] > 0 and figures["loss_last_100"] < figures["loss_first_100"]
    assert learned.meta["model"] in ("trees", "linear", "cross_encoder", "stacked")


def test_scores_are_deterministic_across_calls_batches_and_loads(learned, scorer):
    pairs = [PARAPHRASE, TRAP, DELIVERY]
    first = scorer.logits(pairs)
    assert np.array_equal(scorer.logits(pairs), first)  # the memo
    fresh = _scorer(learned)
    one_by_one = np.array([fresh.logits([p])[0] for p in pairs])
    # padding in a batch does not change a pair's score; quantised, a pair is scored alone anyway
    # (its activations' scale would otherwise depend on the rest of the batch)
    assert np.allclose(one_by_one, first, atol=1e-4)
    assert np.allclose(_scorer(learned).logits(list(reversed(pairs)))[::-1], first, atol=1e-4)


def test_the_judge_scores_an_obvious_paraphrase_above_a_one_detail_trap(learned):
    """The judge as served (the stack over the trees and this cross-encoder, calibrated) ranks a paraphrase
    above one-detail traps no veto catches, at the cosines the semantic layer sees. How well the full
    judge's cross-encoder alone separates them is a benchmark's figure (``bench.judge_eval``'s
    ``cross_encoder`` alternative), not a test's: the tests' judge fine-tunes it for 60 steps only."""
    from modelbuild.judge_train import cosines

    assert guards.veto(*TRAP) is None and guards.veto(*OPPOSITE) is None
    pairs = [PARAPHRASE, TRAP, OPPOSITE, ("Can I pay with PayPal?", "How long does delivery take?")]
    paraphrase, trap, opposite, unrelated = learned.probabilities(
        [(c, n, float(s)) for (c, n), s in zip(pairs, cosines(pairs))])
    assert paraphrase >= learned.threshold > max(trap, opposite, unrelated), (paraphrase, trap, opposite, unrelated)


def test_the_judge_serves_the_cross_encoder_the_way_it_was_calibrated(learned, scorer):
    """The calibration and threshold were fitted on the (int8-quantised) model's scores: the judge
    must load it the same way, and the quantisation must really have replaced the Linear layers."""
    if learned.cross_encoder is None:
        pytest.skip(f"the chosen judge ({learned.kind}) does not read the cross-encoder")
    quantised = bool(learned.meta["config"].get("ce_quantize", False))
    assert learned.cross_encoder.quantize == quantised
    import torch

    modules = list(learned.cross_encoder._model.model.modules())
    int8 = [m for m in modules if isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    plain = [m for m in modules if type(m) is torch.nn.Linear]
    assert (bool(int8), bool(plain)) == (quantised, not quantised), (len(int8), len(plain))
    pairs = [PARAPHRASE, TRAP, DELIVERY]
    assert np.array_equal(learned.cross_encoder.logits(pairs), scorer.logits(pairs))
    if quantised:
        plain = _scorer(learned, quantize=False).logits(pairs)
        assert not np.array_equal(plain, scorer.logits(pairs))  # the int8 model is not the float one
        assert plain[0] > plain[1] and scorer.logits(pairs)[0] > scorer.logits(pairs)[1]


def _judge_with(learned, scorer: CrossEncoderScorer):
    """The artefact's judge reading ``scorer`` (a fresh one: its memo starts empty)."""
    judge = copy.copy(learned)
    judge.cross_encoder = scorer
    return judge


def test_prefetch_scores_only_the_candidates_the_judge_is_asked_about(learned):
    if learned.cross_encoder is None:
        pytest.skip(f"the chosen judge ({learned.kind}) does not read the cross-encoder")
    candidates = [
        ("How long does delivery take?", 0.80, None),           # asked
        ("How long does delivery take to Canada?", 0.85, None),  # a place: vetoed
        ("How long does delivery take?", 0.10, None),           # under the cosine floor
    ]
    batching = _judge_with(learned, _scorer(learned, quantize=False))
    assert batching.wants_prefetch
    assert guards.prefetch(DELIVERY[1], candidates, learned=batching) == 1
    assert list(batching.cross_encoder._memo) == [DELIVERY]  # scored ahead: the judgement reads the memo
    assert guards.prefetch("Wie lange dauert die Lieferung?", candidates, locale="de", learned=batching) == 0


def test_an_int8_cross_encoder_scores_nothing_ahead(learned):
    """Quantised, a pair takes a forward pass of its own anyway: each judgement scores its pair, so the
    semantic layer does not ask for a prefetch (``wants_prefetch``) and one asked for does nothing."""
    if learned.cross_encoder is None:
        pytest.skip(f"the chosen judge ({learned.kind}) does not read the cross-encoder")
    assert learned.wants_prefetch == (not learned.cross_encoder.quantize)
    quantised = _judge_with(learned, _scorer(learned, quantize=True))
    assert not quantised.wants_prefetch
    assert guards.prefetch(DELIVERY[1], [(DELIVERY[0], 0.80, None)], learned=quantised) == 0
    assert not quantised.cross_encoder._memo
    judged = guards.judge(DELIVERY[1], DELIVERY[0], 0.80, learned=quantised)
    assert judged.probability is not None and list(quantised.cross_encoder._memo) == [DELIVERY]


def test_the_decision_records_the_judge_version_and_its_probability(learned):
    j = guards.judge(PARAPHRASE[1], PARAPHRASE[0], 0.7)
    assert j.judge_version == learned.version == judge_train.artefact_version(RECIPES[recipe_name()])
    assert j.probability is not None and 0.0 <= j.probability <= 1.0
    trap = guards.judge(TRAP[1], TRAP[0], 0.8)
    assert not trap.serve and trap.probability is not None and trap.probability < learned.threshold, trap.reason
    cost = guards.judge("How much does delivery cost?", "How long does delivery take?", 0.8)
    assert not cost.serve and cost.reason.startswith("veto: answer_type")  # the vetoes' job, before the judge


def test_training_is_reproducible(tmp_path: Path):
    pairs = [PARAPHRASE, TRAP, DELIVERY, OPPOSITE]
    labels = np.array([1, 0, 1, 0])
    config = judge_train.TrainConfig(ce_max_steps=2, ce_batch_size=2, ce_epochs=1)
    runs = []
    for name in ("a", "b"):
        judge_train.train_cross_encoder(tmp_path / name, pairs, labels, config, progress=lambda m: None)
        runs.append(CrossEncoderScorer(tmp_path / name).logits(pairs))
    assert np.array_equal(runs[0], runs[1])
