"""Conversation pairs through the real answer caches: should-hits served and traps answered wrongly, by subtype and by length.

    .venv/bin/python -m bench.conversations [--heldout] [--more] [--real] [--external] [--show] [FILE ...]
    .venv/bin/python -m bench.conversations --kb [--answerer extractive|model]

Each pair runs as ``manage.py evalcache`` runs it (``supportbot.evaluation``): ``a``'s last message
is resolved in its conversation and offered to the caches' normal admission, then ``b``'s is
resolved in its own and looked up, in scratch tenants (one a file) deleted afterwards.

Sets: ``tests/data/conversation_pairs.jsonl`` (the project's own pairs over the demo knowledge base;
the resolver was tuned on them: in-sample), and with ``--external`` every file of the shared
evaluation folder's ``external/conv/data`` (the fow-cache conversation pairs: evaluation only,
never tuned on). Traps are ``context_swap``, ``detail_swap`` and ``intent_flip``; should-hits
``same_context_reworded``, ``irrelevant_history`` and ``same_context_extra_chatter``.

``--more`` adds ``tests/data/conversation_pairs_more.jsonl`` (58 own pairs written in a later
session, the first 48 measured before the rules they exercise were written; tuned on since: in-sample).
``--heldout`` adds ``tests/data/conversation_pairs_heldout.jsonl``, our own pairs written before
the resolver was tuned on the dev file and never tuned on. ``--show`` prints the dev pairs the
caches got wrong, with both resolutions (never for the external set).

``--real`` adds the pairs on real customer questions (``tests/data/conversation_pairs_real_dev.jsonl``,
in-sample, and ``..._real_heldout.jsonl``, split from it by intent before tuning and never tuned on;
``scripts/conversation_pairs_real.py`` writes both).

The pairs on a detail stated earlier (``tests/data/conversation_pairs_facts_dev.jsonl``, in-sample, and
``..._facts_heldout.jsonl``, split by intent; ``scripts/conversation_pairs_facts.py`` writes both) run as
``FILE`` arguments.

``--kb`` runs instead the conversations of ``tests/data/conversations_kb.jsonl`` (follow-ups over
the demo knowledge base, both tenants) through the Ask API with ``messages``, twice each, and
judges every answer (``run_kb``); its last line is ``conversations=… answers=… correct=… wrong=…
served_from_cache=… wrong_from_cache=… answerer=…``.

The last line is ``dev_served=… dev_wrong=… [external_served=… external_wrong=…
external_irrelevant_history=…] pairs=…``: ``served`` is the share of should-hits whose cached
answer was served, ``wrong`` the share of traps whose cached answer was served.
"""
from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

from bench.common import ROOT, SHARED_DIR, bench_result, ensure_schema, setup

DEV = ROOT / "tests" / "data" / "conversation_pairs.jsonl"
HELDOUT = ROOT / "tests" / "data" / "conversation_pairs_heldout.jsonl"
MORE = ROOT / "tests" / "data" / "conversation_pairs_more.jsonl"
REAL_DEV = ROOT / "tests" / "data" / "conversation_pairs_real_dev.jsonl"
REAL_HELDOUT = ROOT / "tests" / "data" / "conversation_pairs_real_heldout.jsonl"
KB_CONVERSATIONS = ROOT / "tests" / "data" / "conversations_kb.jsonl"
SHARED = SHARED_DIR
EXTERNAL = SHARED / "eval" / "external" / "conv" / "data"
TRAPS = ("context_swap", "detail_swap", "intent_flip")
SHOULD = ("same_context_reworded", "irrelevant_history", "same_context_extra_chatter")


def rates(results) -> dict:
    should = [r for r in results if r.should_hit]
    traps = [r for r in results if not r.should_hit]
    return {"pairs": len(results), "should_hit": len(should), "traps": len(traps),
            "served": sum(r.served for r in should) / len(should) if should else 0.0,
            "wrong": sum(r.served for r in traps) / len(traps) if traps else 0.0}


def table(title: str, results, field: str, order=()) -> dict:
    groups = defaultdict(list)
    for r in results:
        groups[getattr(r, field)].append(r)
    print(f"\n{title:<28} {'pairs':>5} {'served':>7} {'rate':>6}")
    out = {}
    for key in [k for k in order if k in groups] + sorted(set(groups) - set(order)):
        rs = groups[key]
        served = sum(r.served for r in rs)
        out[key] = {"pairs": len(rs), "served": served, "should_hit": sum(r.should_hit for r in rs)}
        print(f"{key:<28} {len(rs):>5} {served:>7} {served / len(rs):>6.2f}")
    return out


def show_misses(results) -> None:
    """The project's own pairs the caches got wrong, with how each last message was resolved
    (never used on the external set: its rows are not read to write rules)."""
    for r in results:
        if r.served != r.should_hit:
            print(f"\n{'WRONG' if r.served else 'MISSED'} {r.id} [{r.kind}] via {r.layer}: {r.reason[:120]}")
            print(f"  a: {r.resolved_cached[:300]}")
            print(f"  b: {r.resolved_new[:300]}")


def run_set(name: str, files: list[Path]) -> tuple[list, dict]:
    from supportbot.evaluation import evaluate, read_conversation_pairs

    pairs = [p for f in files for p in read_conversation_pairs(f, tenant=f"{f.parent.name}-{f.stem}")]
    started = time.perf_counter()
    results = evaluate(pairs)
    seconds = time.perf_counter() - started
    print(f"\n== {name}: {len(pairs)} pairs from {len(files)} file(s) in {seconds:.0f} s")
    figures = rates(results)
    figures["by_subtype"] = table("subtype", results, "kind", TRAPS + SHOULD)
    figures["by_length"] = table("messages in the new conversation", results, "length",
                                 ("1", "2-4", "5-8", "9-20", "21+"))
    resolved = defaultdict(int)
    for r in results:
        resolved[r.resolved_new.split(":", 1)[0]] += 1
    figures["resolution_of_b"] = dict(resolved)
    print("resolution of the new conversations' last messages:",
          ", ".join(f"{k} {v}" for k, v in sorted(resolved.items())))
    # by subtype: how the new conversation's last message was resolved, and how many of those were served
    # (aggregates only: for the external set no row is shown)
    cells = defaultdict(lambda: [0, 0])
    for r in results:
        cell = cells[(r.kind, r.resolved_new.split(":", 1)[0])]
        cell[0] += 1
        cell[1] += r.served
    for kind in [k for k in TRAPS + SHOULD if any(c[0] == k for c in cells)]:
        print(f"  {kind:<28}", "  ".join(f"{how} {n} (served {hit})" for (k, how), (n, hit) in sorted(cells.items())
                                        if k == kind))
    print(f"should-hits served {figures['served']:.3f} · traps answered wrongly {figures['wrong']:.3f}")
    return results, figures


def run_kb(path: Path, answerer: str) -> dict:
    """Conversations over the demo knowledge base, each sent twice through the Ask API with
    ``messages`` (all once, then all again: the second round shows what the caches serve, and a
    conversation whose last words another one shares meets that one's cached answer). Each answer
    is judged as ``bench.answer_quality`` judges one (``must`` groups present, no ``wrong`` fact:
    the other context's or the other tenant's value)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    counts = ask_rows(rows, answerer, "conversations")
    counts["conversations"] = len(rows)
    return counts


def ask_rows(rows: list[dict], answerer: str, scratch: str) -> dict:
    """Ask every row twice through the Ask API in a scratch copy of the demo tenants (all once, then all
    again). A row has ``tenant``, ``locale`` and ``messages`` or ``question``; with ``must`` it is judged as
    ``bench.answer_quality`` judges an answer, without it it is a question the help centre does not answer,
    correct only when handed off (``not_covered``). Counts by verdict, in all and by ask (``1:…``, ``2:…``),
    and what the caches served: ``wrong_from_cache`` (judged wrong), ``not_correct_from_cache`` (anything but correct)."""
    from django.test import Client, override_settings

    from bench.answer_quality import demo_copy, verdict
    from bench.common import scratch_tenants
    from supportbot import pipeline

    counts, client = defaultdict(int), Client()
    # one test client asks them all from one address: the per-minute limits would answer the second round
    unlimited = {"RATELIMIT_CLIENT_REQUESTS": 10**9, "RATELIMIT_TENANT_REQUESTS": 10**9}
    with scratch_tenants(scratch) as tenants_scratch, override_settings(ASK_ANSWERER=answerer, **unlimited):
        tenants = demo_copy(tenants_scratch)
        for attempt in (1, 2):
            for row in rows:
                sent = {"messages": row["messages"]} if "messages" in row else {"question": row["question"]}
                response = client.post(f"/api/t/{tenants[row['tenant']].slug}/ask",
                                       data=json.dumps({**sent, "locale": row["locale"]}),
                                       content_type="application/json")
                body = response.json()
                outcome = SimpleNamespace(status=body.get("status"), answer=body.get("answer") or "")
                if response.status_code != 200:
                    judged = f"http_{response.status_code}"
                elif "must" in row:
                    judged = verdict(row, outcome)
                else:
                    judged = "correct" if outcome.status == "not_covered" else f"answered_{outcome.status}"
                layer = (body.get("cache") or {}).get("layer", "")
                cached = layer in ("exact", "semantic")
                counts["answers"] += 1
                counts[judged] += 1
                counts[f"{attempt}:{judged}"] += 1
                counts["served_from_cache"] += cached
                counts["wrong_from_cache"] += cached and judged == "wrong"
                counts["not_correct_from_cache"] += cached and judged != "correct"
                flag = "" if judged == "correct" else "  <--"
                text = (row.get("messages") or [{"content": row.get("question", "")}])[-1]["content"]
                print(f"{row['id']:<16} #{attempt} {judged:<11} {layer:<8} {text[:50]}{flag}", flush=True)
                if judged != "correct" and attempt == 1:
                    print("      " + outcome.answer.replace("\n", " | ")[:240], flush=True)
        pipeline.hit_records.flush()  # a cache hit's record is written in the background: before the tenants go
    return dict(counts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="conversation pair files (default: the dev set)")
    parser.add_argument("--external", action="store_true", help="also every file of the external conversation set")
    parser.add_argument("--heldout", action="store_true", help="also the project's held-out pairs")
    parser.add_argument("--more", action="store_true",
                        help="also tests/data/conversation_pairs_more.jsonl (own pairs: small talk, side questions, "
                             "a subject of its own that continues the conversation)")
    parser.add_argument("--real", action="store_true",
                        help="also the pairs on real customer questions, dev (in-sample) and held-out")
    parser.add_argument("--show", action="store_true", help="print the own pairs the caches got wrong")
    parser.add_argument("--kb", action="store_true",
                        help="instead: the conversations over the demo knowledge base, through the Ask API")
    parser.add_argument("--answerer", default="extractive", help="with --kb: extractive or model")
    args = parser.parse_args(argv)
    setup(private_redis=args.kb)
    ensure_schema()
    if args.kb:
        kb = run_kb(KB_CONVERSATIONS, args.answerer)
        n = max(1, kb["answers"])
        bench_result("conversations_kb", kb,
                     f"conversations={kb['conversations']} answers={kb['answers']} "
                     f"correct={kb.get('correct', 0) / n:.3f} wrong={kb.get('wrong', 0)} "
                     f"served_from_cache={kb['served_from_cache']} wrong_from_cache={kb['wrong_from_cache']} "
                     f"answerer={args.answerer}")
        return
    figures, line = {}, []
    results, dev = run_set("dev (in-sample)", args.files or [DEV])
    if args.show:
        show_misses(results)
    figures["dev"] = dev
    line += [f"dev_served={dev['served']:.3f}", f"dev_wrong={dev['wrong']:.3f}"]
    pairs = dev["pairs"]
    if args.heldout:
        results, held = run_set("held-out (written before tuning, not tuned on)", [HELDOUT])
        figures["heldout"] = held
        line += [f"heldout_served={held['served']:.3f}", f"heldout_wrong={held['wrong']:.3f}"]
        pairs += held["pairs"]
    if args.more:
        results, more = run_set("more own pairs (first measured before the rules they test; tuned on since)", [MORE])
        if args.show:
            show_misses(results)
        figures["more"] = more
        line += [f"more_served={more['served']:.3f}", f"more_wrong={more['wrong']:.3f}"]
        pairs += more["pairs"]
    if args.real:
        results, real = run_set("real customer questions, dev (in-sample)", [REAL_DEV])
        if args.show:
            show_misses(results)
        _, real_held = run_set("real customer questions, held-out (split by intent, not tuned on)", [REAL_HELDOUT])
        figures["real_dev"], figures["real_heldout"] = real, real_held
        line += [f"real_dev_served={real['served']:.3f}", f"real_dev_wrong={real['wrong']:.3f}",
                 f"real_heldout_served={real_held['served']:.3f}", f"real_heldout_wrong={real_held['wrong']:.3f}"]
        pairs += real["pairs"] + real_held["pairs"]
    if args.external:
        files = sorted(EXTERNAL.glob("*/*.jsonl"))
        if not files:
            raise SystemExit(f"no conversation pairs under {EXTERNAL}")
        _, ext = run_set("external (evaluation only)", files)
        figures["external"] = ext
        irrelevant = ext["by_subtype"].get("irrelevant_history", {"pairs": 0, "served": 0})
        line += [f"external_served={ext['served']:.3f}", f"external_wrong={ext['wrong']:.3f}",
                 f"external_irrelevant_history={irrelevant['served'] / max(1, irrelevant['pairs']):.3f}"]
        pairs += ext["pairs"]
    bench_result("conversations", figures, " ".join(line + [f"pairs={pairs}"]))


if __name__ == "__main__":
    main()
