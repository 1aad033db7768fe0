"""The alert rules and the Grafana dashboard operators load (``deploy/``): every series they name
is one the app exports (or vLLM's, as the app itself reads them), and promtool accepts the rules
and their unit tests where it is installed (Debian's ``prometheus`` package)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from generation.fleet import PREFIX_CACHE_METRIC_NAMES

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "ask-dashboard.json"
SERIES = re.compile(r"\b(ask_[a-z0-9_]+|ask:[a-z0-9_:]+|vllm:[a-z0-9_:]+)")
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}
REQUIRED_ALERTS = {"AskCachedTokenShareDrop", "VLLMPrefixCacheHitRateDrop", "AskWrongHitRateAboveTarget",
                   "AskHitRateCollapseAfterDeploy", "AskPurgeBacklog", "AskModelServerErrors", "AskModelCircuitOpen"}


@pytest.fixture
def exported(client, db) -> set[str]:
    """Every series name the app's /metrics can carry (families are listed even before a sample)."""
    text = client.get("/metrics").content.decode()
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + s for s in SUFFIXES.get(family.type, ("",)))
    return names


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    return [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"] for t in p["targets"]]


def check_series(exprs, exported: set[str]) -> None:
    recorded = {r["record"] for r in rules() if "record" in r}
    from_vllm = {name for names in PREFIX_CACHE_METRIC_NAMES.values() for name in names}
    for expr in exprs:
        for name in SERIES.findall(expr):
            if name.startswith("vllm:"):
                assert name in from_vllm, f"{name} is not a vLLM series the app knows"
            elif name.startswith("ask:"):
                assert name in recorded, f"{name} is recorded by no rule"
            else:
                assert name in exported, f"{name} in {expr!r} is not exported by /metrics"


def test_the_rules_cover_the_required_alerts_and_name_only_exported_series(exported):
    alerts = {r["alert"]: r for r in rules() if "alert" in r}
    assert REQUIRED_ALERTS <= set(alerts)
    for rule in alerts.values():
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    check_series([r["expr"] for r in rules()], exported)


def test_the_dashboard_names_only_exported_series(exported):
    exprs = dashboard_exprs()
    assert len(exprs) >= 16
    check_series(exprs, exported)
    panels = {p["title"] for p in json.loads(DASHBOARD.read_text())["panels"]}
    assert {"Cached-token share (of prompt tokens)", "vLLM prefix-cache hit rate and KV-cache usage"} <= panels


def test_a_mistyped_series_would_be_caught(exported):
    with pytest.raises(AssertionError):
        check_series(['rate(ask_cache_hit_total[5m])'], exported)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (Debian: prometheus)")
def test_promtool_accepts_the_rules_and_their_unit_tests():
    check = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    unit = subprocess.run(["promtool", "test", "rules", "alerts_test.yml"], cwd=RULES.parent,
                          capture_output=True, text=True)
    assert unit.returncode == 0, unit.stdout + unit.stderr
