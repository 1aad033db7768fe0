"""Labelled question pairs, the ``evalcache`` format: one JSON object a line with ``id``, ``kind``,
``cached``, ``new``, ``should_hit`` and the two contexts (``ctx_cached``, ``ctx_new``: tenant and
locale). Read by the threshold calibration here and by the evaluation of the Ask product
(``supportbot.evaluation``); a file that does not fit is refused whole with the line at fault."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

KINDS = ("paraphrase", "entity", "negation", "condition", "time", "personal", "tenant", "locale", "action", "different")
REQUIRED = ("id", "kind", "cached", "new", "should_hit", "ctx_cached", "ctx_new")


class PairFileError(ValueError):
    pass


def jsonl_rows(path: Path) -> Iterator[tuple[int, object]]:
    """(line number, parsed value) of each non-blank line; a file that cannot be read or a line that is
    not JSON is a ``PairFileError`` naming it."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise PairFileError(f"{path}: cannot read ({exc})") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except ValueError:
            raise PairFileError(f"{path}:{n}: not JSON") from None


def read_pairs(path: Path) -> list[dict]:
    pairs = []
    for n, row in jsonl_rows(path):
        missing = [k for k in REQUIRED if k not in row] if isinstance(row, dict) else list(REQUIRED)
        if missing:
            raise PairFileError(f"{path}:{n}: missing {', '.join(missing)}")
        for ctx in ("ctx_cached", "ctx_new"):
            if not isinstance(row[ctx], dict) or not {"tenant", "locale"} <= set(row[ctx]):
                raise PairFileError(f"{path}:{n}: {ctx} needs tenant and locale")
        pairs.append(row)
    return pairs
