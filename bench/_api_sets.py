"""Question and conversation sets through the Ask API, each asked twice, as an acceptance run against ``make run``
asks them (a scratch copy of the demo tenants, a Redis of its own).

    .venv/bin/python -m bench._api_sets FILE [FILE ...]

A row has ``tenant``, ``locale`` and ``question`` or ``messages``. With ``must`` (groups of alternatives) and
``wrong`` it is judged as ``bench.answer_quality`` judges an answer; without them it is a question the help
centre does not answer, correct only when handed off (``not_covered``). Prints every answer that is not correct
and ends with the counts of ``bench.conversations.ask_rows``: by verdict, by ask (``1_…``, ``2_…``),
``served_from_cache``, ``wrong_from_cache`` and ``not_correct_from_cache``.

The lead's held-out sets (``tests/data/lead_*.jsonl``: 24 conversations, 24 unanswerable and 24 fact questions,
written by someone who did not tune the resolver, the answerability check or the answerer) are its usual input.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.common import ensure_schema, setup


def main(argv=None) -> int:
    files = [Path(f) for f in (argv if argv is not None else sys.argv[1:])]
    if not files:
        raise SystemExit(__doc__.split("\n\n")[1])
    setup(private_redis=True)
    ensure_schema()
    from bench.conversations import ask_rows

    rows = [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]
    counts = ask_rows(rows, "extractive", "apisets")
    print(" ".join(f"{k.replace(':', '_')}={v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
