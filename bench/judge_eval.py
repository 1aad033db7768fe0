"""How well the semantic judge generalises: held-out intents and leave-one-dataset-out.

    .venv/bin/python -m bench.judge_eval [--splits heldout,to_clinc,to_banking] [--lexical 900] [--recipe full|small] [--ce-steps N]

Each split trains a judge from scratch with the production recipe (``modelbuild.judge_train``: its
own calibration intents held out of the training part, threshold chosen there), then scores pairs
built the same way from questions it never saw (the datasets' *test* rows):

- ``heldout``: 20% of the intents of BANKING77, CLINC150 and NLU++ banking are held out whole;
  no evaluation intent appears in training or calibration;
- ``to_clinc``: train on BANKING77 + NLU++ (and the paraphrase sets), evaluate on CLINC150;
- ``to_banking``: train on CLINC150 (and the paraphrase sets), evaluate on BANKING77 + NLU++.

Evaluation pairs: same-intent positives, nearest-other-intent negatives and one-detail
perturbations (both kinds of pair ``modelbuild.judge_data`` makes), of evaluation questions only,
and one-word opposite/synonym pairs made from the word pairs held out of training (the "avoid X"
template is the same in both); the figures are also given without those, as the evaluation was
before them. ``--lexical 0`` trains without the one-word pairs, for comparison.
Reported per split, for the model training chose and for each alternative it scored (trees,
linear, the cross-encoder alone, stacked; each at its own calibrated threshold): AUC on the pairs
the vetoes let through (and the plain embedding cosine's), and the precision and recall of the
serving decision (no veto and calibrated probability >= the threshold chosen on the split's own
calibration intents), overall and by pair kind. Eligibility is not applied (it is about the
customer, not the pair). Each split fine-tunes its own cross-encoder: about 15-30 minutes a split
on 2 cores. ``--recipe small`` (a smoke run, ``heldout`` only) trains the tests' small recipe on its
slice of the data instead: its figures only prove the run works. Ends with one line ``judge_eval_<split>_<model>_precision=… judge_eval_<split>_<model>_recall=… …``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.common import bench_result
from caching.guards import judge_recipe
from modelbuild import judge_data, judge_train
from modelbuild.judge_data import BANKING77, CLINC150, NLUPP

SPLITS = ("heldout", "to_clinc", "to_banking")
# Fewer pairs than the production recipe (``PairConfig()``), so that three trainings embed fewer
# questions; the recipe is otherwise the same, except that the one-word opposite/synonym pairs
# (``judge_data.lexical_pairs``) are made from the ``train`` part of the word lists only, and the
# evaluation's from the ``heldout`` part: the judge is scored on words it was never shown.
PAIR_CONFIG = judge_data.PairConfig(positives_per_intent=12, negatives_per_question=0.25, perturbations=2500,
                                    lexical=900, word_pairs="train")


def split_questions(name: str, questions: list | None = None) -> tuple[list, list]:
    """(training questions, evaluation questions) of a split (of every question, or of ``questions``)."""
    questions = judge_data.load_questions() if questions is None else questions
    if name == "heldout":
        kept, held = judge_data.split_intents(questions, 0.2, "evaluation")
        return ([q for q in questions if q.split == "train" and q.intent in kept],
                [q for q in questions if q.split == "test" and q.intent in held])
    if name == "to_clinc":
        return ([q for q in questions if q.split == "train" and q.dataset in (BANKING77, NLUPP)],
                [q for q in questions if q.split == "test" and q.dataset == CLINC150])
    if name == "to_banking":
        return ([q for q in questions if q.split == "train" and q.dataset == CLINC150],
                [q for q in questions if q.split == "test" and q.dataset in (BANKING77, NLUPP)])
    raise ValueError(f"unknown split {name!r}; choose from {', '.join(SPLITS)}")


def evaluation_pairs(questions) -> list[judge_data.Pair]:
    config = judge_data.PairConfig(seed=1012, positives_per_intent=8, negatives_per_question=0.3, perturbations=1000,
                                   lexical=400, word_pairs="heldout")
    return judge_data.build_pairs(questions, config, with_paraphrases=False)


def run_split(name: str, config: judge_train.TrainConfig, workdir: Path,
              pair_config: judge_data.PairConfig = PAIR_CONFIG, questions: list | None = None) -> dict:
    started = time.perf_counter()
    train_q, eval_q = split_questions(name, questions)
    leaked = {q.intent for q in train_q} & {q.intent for q in eval_q}
    assert not leaked, f"{name}: evaluation intents in training: {sorted(leaked)[:5]}"
    print(f"\n{name}: {len(train_q)} training questions ({len({q.intent for q in train_q})} intents), "
          f"{len(eval_q)} evaluation questions ({len({q.intent for q in eval_q})} intents)", flush=True)
    out = workdir / name
    meta = judge_train.train_judge(out, train_q, config, pair_config, with_oos=False, version=f"eval-{name}",
                                   progress=lambda m: print(f"  {m}", flush=True))
    from caching.guards import LearnedJudge

    pairs = evaluation_pairs(eval_q)
    texts = [(p.cached, p.new) for p in pairs]
    labels = np.array([p.label for p in pairs])
    cosine = judge_train.cosines(texts)
    rows = [(a, b, float(s)) for (a, b), s in zip(texts, cosine)]
    no_veto = judge_train.passes_vetoes(texts)
    lexical = np.array([p.kind in judge_data.LEXICAL_KINDS for p in pairs])  # what the evaluation had before them
    kinds = defaultdict(list)
    for i, p in enumerate(pairs):
        kinds[p.kind].append(i)
    print(f"  evaluation pairs: {len(pairs)} ({int(labels.sum())} should hit), {int(no_veto.sum())} past the vetoes")
    print(f"  AUC of the plain cosine on the pairs past the vetoes: {judge_train.auc(cosine[no_veto], labels[no_veto]):.3f}")
    models = {}
    for kind in [meta["model"]] + sorted(k for k in meta.get("alternatives", {}) if k != meta["model"]):
        learned = LearnedJudge(out, kind=kind)
        prob = np.zeros(len(rows))
        prob[no_veto] = learned.probabilities([r for r, k in zip(rows, no_veto) if k])  # the judge never sees the rest
        served = no_veto & (prob >= learned.threshold)
        overall = judge_train.precision_recall(served, labels)
        before = judge_train.precision_recall(served[~lexical], labels[~lexical])
        models[kind] = {
            "auc": judge_train.auc(prob[no_veto], labels[no_veto]), "threshold": learned.threshold, "served": overall,
            "served_without_lexical": before,
            "by_kind": {k: {"pairs": len(ix), "label": int(labels[ix[0]]), "served": int(served[ix].sum())}
                        for k, ix in sorted(kinds.items())},
        }
        print(f"  {kind + (' (chosen)' if kind == meta['model'] else ''):22s} AUC {models[kind]['auc']:.3f}; vetoes + "
              f"judge at {learned.threshold:.3f}: precision {overall['precision']:.3f}, recall {overall['recall']:.3f} "
              f"({overall['served']} served, {overall['false']} false); without the one-word pairs: precision "
              f"{before['precision']:.3f}, recall {before['recall']:.3f}", flush=True)
        for k, row in models[kind]["by_kind"].items():
            print(f"      {k:24s} {row['served']:5d}/{row['pairs']:<5d} served (label {row['label']})")
    chosen = models[meta["model"]]
    return {
        "training_questions": len(train_q), "evaluation_questions": len(eval_q), "pairs": len(pairs),
        "model": meta["model"], "auc_judge": chosen["auc"],
        "auc_cosine": judge_train.auc(cosine[no_veto], labels[no_veto]), "threshold": chosen["threshold"],
        "served": chosen["served"], "models": models, "calibration": meta["calibration"],
        "cross_encoder": meta.get("cross_encoder"), "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", default=",".join(SPLITS))
    parser.add_argument("--lexical", type=int, default=PAIR_CONFIG.lexical,
                        help="one-word opposite/synonym training pairs (0: the recipe without them, for comparison)")
    parser.add_argument("--recipe", choices=("full", "small"), default="full",
                        help="small: the tests' recipe on its slice of the data, heldout only (a smoke run)")
    parser.add_argument("--ce-steps", type=int, default=0,
                        help="the cross-encoder's fine-tuning steps instead of the recipe's (a cheaper smoke run; "
                             "most of a small run's time is those steps)")
    args = parser.parse_args(argv)
    if args.lexical < 0:
        parser.error("--lexical must be >= 0")
    if args.ce_steps < 0:
        parser.error("--ce-steps must be >= 1 (0: the recipe's)")
    config = judge_train.TrainConfig()
    pair_config = dataclasses.replace(PAIR_CONFIG, lexical=args.lexical)
    questions = None
    if args.recipe == "small":
        if args.splits != "heldout":
            parser.error("--recipe small runs the heldout split only (--splits heldout)")
        small = judge_recipe.SMALL
        config, pair_config = small.train, dataclasses.replace(small.pairs, word_pairs="train")
        questions = judge_data.load_questions(small.datasets)
        keep = set(sorted({q.intent for q in questions})[: small.intents])
        questions = [q for q in questions if q.intent in keep]
    if args.ce_steps:
        config = dataclasses.replace(config, ce_max_steps=args.ce_steps)
    figures = {"config": dataclasses.asdict(config), "pair_config": dataclasses.asdict(pair_config)}
    with tempfile.TemporaryDirectory(prefix="judge-eval-") as tmp:
        for name in args.splits.split(","):
            figures[name] = run_split(name.strip(), config, Path(tmp), pair_config, questions)
    last = " ".join(f"judge_eval_{n}_{kind}_precision={m['served']['precision']:.3f} "
                    f"judge_eval_{n}_{kind}_recall={m['served']['recall']:.3f}"
                    for n in args.splits.split(",") for kind, m in figures[n]["models"].items())
    bench_result("judge_eval", figures, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
