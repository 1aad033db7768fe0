"""Question and conversation sets through the Ask API, each asked twice, as an acceptance run against ``make run``
asks them (a scratch copy of the demo tenants, a Redis of its own).

    .venv/bin/python -m bench._api_sets FILE [FILE ...]

A row has ``tenant``, ``locale`` and ``question`` or ``messages``. With ``must`` (groups of alternatives) and
``wrong`` it is judged as ``bench.answer_quality`` judges an answer; without them it is a question the help
centre does not answer, correct only when handed off (``not_covered``). Prints every answer that is not correct
and ends with the counts by ask (``1:…``, ``2:…``), ``served_from_cache`` and ``wrong_from_cache``.

The lead's held-out sets (``tests/data/lead_*.jsonl``: 24 conversations, 24 unanswerable and 24 fact questions,
written by someone who did not tune the resolver, the answerability check or the answerer) are its usual input.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

from bench.common import ensure_schema, scratch_tenants, setup


def main(argv=None) -> int:
    files = [Path(f) for f in (argv if argv is not None else sys.argv[1:])]
    if not files:
        raise SystemExit(__doc__.split("\n\n")[1])
    setup(private_redis=True)
    ensure_schema()
    from django.test import Client

    from bench.answer_quality import demo_copy, verdict
    from supportbot import pipeline

    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    counts, client = defaultdict(int), Client()
    with scratch_tenants("apisets") as scratch:
        tenants = demo_copy(scratch)
        for attempt in (1, 2):
            for row in rows:
                body = {"locale": row["locale"]}
                body.update({"messages": row["messages"]} if "messages" in row else {"question": row["question"]})
                response = client.post(f"/api/t/{tenants[row['tenant']].slug}/ask", data=json.dumps(body),
                                       content_type="application/json")
                got = response.json()
                status, answer = got.get("status"), got.get("answer") or ""
                if "must" in row:
                    judged = (verdict(row, SimpleNamespace(status=status, answer=answer))
                              if response.status_code == 200 else f"http_{response.status_code}")
                else:
                    judged = "correct" if status == "not_covered" else f"answered:{status}"
                layer = (got.get("cache") or {}).get("layer", "")
                cached = layer in ("exact", "semantic")
                counts[f"{attempt}:{judged}"] += 1
                counts["served_from_cache"] += cached
                counts["wrong_from_cache"] += cached and judged != "correct"
                text = (row.get("messages") or [{"content": row.get("question", "")}])[-1]["content"]
                flag = "" if judged == "correct" else "  <--"
                print(f"{row['id']:<16} #{attempt} {judged:<16} {layer:<8} {text[:60]}{flag}", flush=True)
                if judged != "correct" and attempt == 1:
                    print("      " + answer.replace("\n", " | ")[:240], flush=True)
        pipeline.hit_records.flush()
    print(" ".join(f"{k.replace(':', '_')}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
