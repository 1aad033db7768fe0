"""The yes/no verifier (second stage, learning from misses) on the configured model: precision, recall and cost.

    .venv/bin/python -m bench.judge_verifier [--pairs 120] [--dev-pairs 0] [--seed 7] [--timeout-s 30]

Puts labelled question pairs to ``generation.verifier.verify`` exactly as the second
stage and the near-miss task do, one at a time, and reports for "yes" (an approval serves or
aliases a cached answer): precision, recall, the share of calls with no verdict (errors,
timeouts, replies that are not yes/no: all misses), latency per call (what the second stage adds
to a lookup) and the share of prompt tokens the model server's prefix cache served.

Pairs: every same-scope pair of ``../shared/eval/dev_pairs.jsonl`` (a check set) and a seeded
sample of ``../shared/eval/external/fow_pairs.jsonl`` (evaluation only; nothing here is tuned on
either: the prompt was written before the first run). The pair files hold questions, not answers,
so the verifier sees the cached question and "(no answer text)": it judges whether the two
questions want the same answer, which is the decision it makes on the hot path.

With ``VLLM_BASE_URL`` unset this runs against the embedded SmolLM2-135M server (one of its own,
on a free port), which is the default deployment here.

Ends with one line: ``model=… pairs=… precision=… recall=… no_verdict=… p50_ms=… p90_ms=… cached_share=…``
"""
from __future__ import annotations

import argparse
import json
import random
import socket
from pathlib import Path

from bench.common import SHARED_DIR, bench_result, percentiles, setup

HOST = "127.0.0.1"


def _shared(path_in_shared: str) -> Path:
    """A file of the shared data folder (``ASK_SHARED_DIR``)."""
    p = SHARED_DIR / path_in_shared
    if not p.exists():
        raise SystemExit(f"cannot find {path_in_shared} in the shared data folder (set ASK_SHARED_DIR)")
    return p


def same_scope(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["ctx_cached"]["tenant"] == r["ctx_new"]["tenant"]
            and r["ctx_cached"]["locale"] == r["ctx_new"]["locale"]]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=120, help="pairs sampled from the external set")
    parser.add_argument("--dev-pairs", type=int, default=0, help="only the first N dev pairs (0: every one; a smoke run: 2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=30.0)
    args = parser.parse_args()
    setup()
    from django.conf import settings

    from generation.local_model import ensure_model_server
    from generation.verifier import VERIFIER_VERSION, verify

    if not settings.VLLM_BASE_URL:
        port = free_port()
        ensure_model_server(HOST, port)  # stopped at exit through its handle
        settings.EMBEDDED_MODEL_HOST, settings.EMBEDDED_MODEL_PORT = HOST, port

    dev = same_scope(read(_shared("eval/dev_pairs.jsonl")))[: args.dev_pairs or None]
    fow = same_scope(read(_shared("eval/external/fow_pairs.jsonl")))
    fow = random.Random(args.seed).sample(fow, min(args.pairs, len(fow)))
    verify("bench", "warm-up question", "", "another warm-up question", timeout_s=args.timeout_s)

    figures, model = {"verifier_version": VERIFIER_VERSION}, ""
    all_ms, prompt_tokens, cached_tokens = [], 0, 0
    for name, rows in (("dev", dev), ("fow", fow)):
        tp = fp = fn = tn = none = 0
        for r in rows:
            v = verify("bench", r["cached"], "", r["new"], timeout_s=args.timeout_s)
            model = v.model or model
            all_ms.append(v.ms)
            prompt_tokens += v.prompt_tokens
            cached_tokens += v.cached_tokens or 0
            if v.approved is None:
                none += 1
                fn += bool(r["should_hit"])
                tn += not r["should_hit"]
            elif v.approved:
                tp += bool(r["should_hit"])
                fp += not r["should_hit"]
            else:
                fn += bool(r["should_hit"])
                tn += not r["should_hit"]
        approved = tp + fp
        figures[name] = {"pairs": len(rows), "tp": tp, "fp": fp, "fn": fn, "tn": tn, "no_verdict": none,
                         "precision": tp / approved if approved else None,
                         "recall": tp / (tp + fn) if tp + fn else None,
                         "false_approval_rate": fp / (fp + tn) if fp + tn else None}
        print(f"{name}: {figures[name]}", flush=True)
    lat = percentiles(all_ms)
    figures.update(model=model, latency_ms=lat, cached_share=cached_tokens / prompt_tokens if prompt_tokens else None,
                   prompt_tokens_per_call=prompt_tokens / len(all_ms) if all_ms else None)
    print(f"latency per call: {lat}; prompt tokens per call {figures['prompt_tokens_per_call']:.0f}, "
          f"prefix-cached share {figures['cached_share']:.3f}", flush=True)
    both = {k: figures["dev"][k] + figures["fow"][k] for k in ("tp", "fp", "fn", "tn", "no_verdict")}
    precision = both["tp"] / (both["tp"] + both["fp"]) if both["tp"] + both["fp"] else float("nan")
    recall = both["tp"] / (both["tp"] + both["fn"]) if both["tp"] + both["fn"] else float("nan")
    n = both["tp"] + both["fp"] + both["fn"] + both["tn"]  # a pair without a verdict is in fn or tn already
    bench_result("judge_verifier", figures,
                 f"model={model} pairs={n} precision={precision:.3f} recall={recall:.3f} "
                 f"no_verdict={both['no_verdict'] / n:.3f} p50_ms={lat['p50']:.0f} p90_ms={lat['p90']:.0f} "
                 f"cached_share={figures['cached_share']:.3f}")


if __name__ == "__main__":
    main()
