"""``manage.py evalcache``: labelled pairs through the real caches in an isolated scope."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from caching.models import SemanticEntry
from core.models import Tenant

DEV_PAIRS = Path("/work/shared/eval/dev_pairs.jsonl")
HELDOUT_PAIRS = Path(__file__).resolve().parent.parent / "data" / "heldout_pairs.jsonl"
LAST_LINE = re.compile(r"^paraphrase_hit_rate=(?P<hit>[\d.]+) false_hit_rate=(?P<false>[\d.]+) pairs=(?P<pairs>\d+) "
                       r"should_hit=(?P<should_hit>\d+) should_not=(?P<should_not>\d+)$")


def evalcache(path, *args) -> tuple[dict, str]:
    out = io.StringIO()
    call_command("evalcache", str(path), *args, stdout=out)
    text = out.getvalue()
    match = LAST_LINE.match(text.strip().splitlines()[-1])
    assert match, text
    return {k: float(v) for k, v in match.groupdict().items()}, text


def pair_count(path: Path) -> tuple[int, int]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return len(rows), sum(1 for r in rows if r["should_hit"])


def test_dev_pairs_have_no_false_hit(demo, full_judge, tmp_path):
    tenants = Tenant.objects.count()
    result, text = evalcache(DEV_PAIRS, "--json", str(tmp_path / "pairs.json"))

    assert result["false"] == 0.0, text
    pairs, should_hit = pair_count(DEV_PAIRS)
    assert (result["pairs"], result["should_hit"], result["should_not"]) == (pairs, should_hit, pairs - should_hit)
    assert re.search(r"^paraphrase\s+\d+\s+\d+\s+[\d.]+$", text, re.M)  # the table by kind
    per_pair = json.loads((tmp_path / "pairs.json").read_text())
    assert len(per_pair) == pairs and {"served", "layer", "similarity", "reason"} <= set(per_pair[0])
    assert sum(r["served"] for r in per_pair if r["should_hit"]) == round(result["hit"] * should_hit)
    # the scratch tenants and their entries are gone
    assert Tenant.objects.count() == tenants
    assert not SemanticEntry.objects.filter(tenant__slug__startswith="eval-").exists()


def test_dev_pairs_meet_the_paraphrase_bar(demo, full_judge):
    result, text = evalcache(DEV_PAIRS)
    assert result["false"] == 0.0 and result["hit"] >= 0.60, text


def test_dev_pairs_with_strict_matches_only(demo, settings):
    """What a fresh install serves before its judge is built: no false hit, and the paraphrase bar."""
    settings.SEMANTIC_JUDGE_SERVES = False
    result, text = evalcache(DEV_PAIRS)
    assert result["false"] == 0.0 and result["hit"] >= 0.60, text
    assert result["pairs"] == pair_count(DEV_PAIRS)[0]


def test_heldout_pairs_have_no_false_hit(demo):
    result, text = evalcache(HELDOUT_PAIRS)
    assert result["false"] == 0.0, text
    assert result["pairs"] == pair_count(HELDOUT_PAIRS)[0]


def test_the_sweep_reports_rates_per_threshold(demo, tmp_path):
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(DEV_PAIRS.read_text().splitlines()[:2]) + "\n")
    _, text = evalcache(path, "--sweep")
    sweep = re.findall(r"t=(\d\.\d\d) hit_rate=([\d.]+) false_hit_rate=([\d.]+)", text)
    assert [t for t, _, _ in sweep] == [f"{0.5 + 0.05 * i:.2f}" for i in range(10)]


GOOD = {"id": "x1", "kind": "paraphrase", "cached": "a", "new": "b", "should_hit": True,
        "ctx_cached": {"tenant": "t", "locale": "en", "user": None},
        "ctx_new": {"tenant": "t", "locale": "en", "user": None}}


@pytest.mark.parametrize("content, message", [
    ("{not json\n", "not JSON"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "new"}) + "\n", "missing new"),
    (json.dumps([GOOD]) + "\n", "missing id"),
    (json.dumps({**GOOD, "ctx_new": {"tenant": "t"}}) + "\n", "ctx_new needs tenant and locale"),
    (json.dumps({**GOOD, "ctx_cached": "acme"}) + "\n", "ctx_cached needs tenant and locale"),
    ("\n\n", "no pairs"),
    (b"\xff\xfe bad bytes", "cannot read"),
])
def test_a_malformed_pair_file_is_a_command_error(db, tmp_path, content, message):
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CommandError, match=message):
        call_command("evalcache", str(path), stdout=io.StringIO())
    assert not Tenant.objects.filter(slug__startswith="eval-").exists()


def test_a_missing_pair_file_is_a_command_error(db, tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command("evalcache", str(tmp_path / "absent.jsonl"), stdout=io.StringIO())
