"""The judge's calibration intents asked of a dense cache: precision of the served answers by policy.

    .venv/bin/python -m bench.judge_replay [--seeds 1] [--queries 50]

The judge's operating point is chosen on balanced *pairs* of its held-out calibration intents
(``modelbuild.judge_train``); a lookup is another distribution: a question meets its *nearest* cached
entries, most of them another intent's, and the first that passes is served. ``modelbuild.judge_replay``
replays that on questions the judge never trained on (every intent's most central question
cached, the calibration intents' other questions asking); this prints its figures:

- for the default policy (strict match only) and the judge serving, at the artefact's threshold and
  above it, for ambiguity margins off / 0 / 0.02 / 0.05 / 0.1: hit rate (of questions asked), false
  share (of served answers, another intent's), and the judge's own serves (beyond strict matches);
- the judge serving at the artefact's threshold by the least cosine at which the judge alone serves:
  the least from which what it alone serves is 99% right is the artefact's own (``min_similarity``,
  chosen by the same replay when it was trained), which the semantic layer serves with unless
  ``SEMANTIC_JUDGE_MIN_SIMILARITY`` overrides it. The bench reads it again and says whether it agrees.

``SEMANTIC_AMBIGUITY_MARGIN``'s default was read off these tables. The cached side of a pair may be a
training intent's question; the asking side never is. The judge's current artefact is used as
built (no training): about a minute on 2 cores. Ends with one line ``judge_replay_strict_false=…
judge_replay_strict_hit=… judge_replay_judge_false=… …`` at ``SEMANTIC_AMBIGUITY_MARGIN`` and the
least cosine in force.
"""
from __future__ import annotations

import argparse
import random
import sys
import time

from bench.common import bench_result, setup

setup()

from django.conf import settings  # noqa: E402

from caching import guards  # noqa: E402
from modelbuild import judge_data, judge_train  # noqa: E402
from modelbuild.judge_replay import LEAST_COSINES, choose_least_cosine, figures, replay_rows  # noqa: E402

MARGINS = (None, 0.0, 0.02, 0.05, 0.1)
# what the judge's threshold is chosen for on balanced pairs; its least cosine is chosen for it on the replay
PRECISION = judge_train.TrainConfig().target_precision


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1, help="cached questions per intent")
    parser.add_argument("--queries", type=int, default=50, help="questions asked per calibration intent")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    judge = guards.learned_judge()
    if judge is None:
        print("the judge is not built: run manage.py train_judge", file=sys.stderr)
        return 2
    config = judge_train.TrainConfig()
    questions = [q for q in judge_data.load_questions() if q.split == "train"]
    rows = replay_rows(judge, questions, config, judge_train.vectors, args.seeds, args.queries)
    print(f"judge {judge.version} (threshold {judge.threshold:.3f}); {len(rows)} questions asked, "
          f"{time.perf_counter() - started:.0f} s\n")
    thresholds = sorted({judge.threshold, 0.97, 0.99, 0.995})
    table = {}
    print(f"{'policy':28s} " + " ".join(f"{'margin ' + ('off' if m is None else f'{m:.2f}'):>24s}" for m in MARGINS))
    for policy, judge_serves, t in [("strict match only", False, 1.0)] + [
            (f"judge serving, p >= {t:.3f}", True, t) for t in thresholds]:
        cells = []
        for m in MARGINS:
            f = figures(rows, t, m, judge_serves)
            table[f"{policy} margin={m}"] = f
            cells.append(f"{f['hit_rate']:.3f} / {f['false_share']:.3f} ({f['false']}/{f['served']})")
        print(f"{policy:28s} " + " ".join(f"{c:>24s}" for c in cells))
    print("\ncells: hit rate / false share of served (false / served)")
    margin = settings.SEMANTIC_AMBIGUITY_MARGIN
    margin = None if margin < 0 else margin
    own = judge.min_similarity
    floor = guards.least_cosine(judge, settings.SEMANTIC_JUDGE_MIN_SIMILARITY)
    recommended, by_least = choose_least_cosine(rows, judge.threshold, margin, PRECISION, config.replay_min_served)
    print(f"\njudge serving at p >= {judge.threshold:.3f}, margin {settings.SEMANTIC_AMBIGUITY_MARGIN}, by the least "
          f"cosine at which the judge alone serves (in force: {floor:.2f}; the judge's own: {own}; "
          f"SEMANTIC_JUDGE_MIN_SIMILARITY: {settings.SEMANTIC_JUDGE_MIN_SIMILARITY}):")
    print(f"{'least cosine':>12s} {'hit rate':>9s} {'false/served':>13s} {'judge alone: false/served':>26s} {'precision':>9s}")
    for least in LEAST_COSINES:
        f = by_least[least]
        table[f"judge serving floor={least}"] = f
        print(f"{least:12.2f} {f['hit_rate']:9.3f} {f['false']:>6d}/{f['served']:<6d} "
              f"{f['judge_false']:>12d}/{f['judge_served']:<13d} {f['judge_precision']:9.3f}")
    agrees = own is not None and abs(recommended - own) < 1e-9
    print(f"the least cosine at which what the judge alone serves is {PRECISION:.0%} right: {recommended:.2f} "
          f"({'as chosen at training' if agrees else f'the artefact says {own}: not the same replay'})")
    strict, judged = figures(rows, 1.0, margin, False), figures(rows, judge.threshold, margin, True, floor)
    last = (f"judge_replay_strict_false={strict['false_share']:.3f} judge_replay_strict_hit={strict['hit_rate']:.3f} "
            f"judge_replay_judge_false={judged['false_share']:.3f} judge_replay_judge_hit={judged['hit_rate']:.3f} "
            f"judge_replay_margin={settings.SEMANTIC_AMBIGUITY_MARGIN} judge_replay_judge_floor={floor:.2f} "
            f"judge_replay_recommended_floor={recommended:.2f}")
    bench_result("judge_replay", {"judge": judge.version, "rows": len(rows), "table": table,
                                  "seconds": time.perf_counter() - started}, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
