"""The alert rules and the Grafana dashboard operators load (``deploy/``): every series they name
is one the app exports (or vLLM's, as the app itself reads them), every alert has a unit test where
it fires and one where it does not, and promtool accepts the rules and passes those tests. promtool
comes from Debian's ``prometheus`` package, which ``make test`` installs (``scripts/bootstrap.sh``):
without it the test fails, it is never skipped."""
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
UNIT_TESTS = RULES.parent / "alerts_test.yml"
REQUIRED_ALERTS = {"AskCachedTokenShareDrop", "VLLMPrefixCacheHitRateDrop", "AskWrongHitRateAboveTarget",
                   "AskHitRateCollapseAfterDeploy", "AskHitRateDrop", "AskCachedAnswersDisliked",
                   "AskSemanticFellBackToShadow", "AskPurgeBacklog", "AskModelServerErrors", "AskModelCircuitOpen"}


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


def alert_cases(tests: dict) -> dict[str, set[str]]:
    """alert name -> {"fires", "quiet"}: which kinds of case the unit tests hold for it."""
    cases: dict[str, set[str]] = {}
    for group in tests["tests"]:
        for case in group.get("alert_rule_test", []):
            cases.setdefault(case["alertname"], set()).add("fires" if case.get("exp_alerts") else "quiet")
    return cases


def test_every_alert_has_a_firing_and_a_quiet_unit_test():
    alerts = {r["alert"] for r in rules() if "alert" in r}
    cases = alert_cases(yaml.safe_load(UNIT_TESTS.read_text()))
    missing = {name: {"fires", "quiet"} - cases.get(name, set()) for name in alerts}
    assert not {name: kinds for name, kinds in missing.items() if kinds}, "alerts without a firing or quiet case"
    assert set(cases) <= alerts, "a unit test names an alert that does not exist"


def test_a_missing_quiet_case_would_be_caught():
    tests = yaml.safe_load(UNIT_TESTS.read_text())
    for group in tests["tests"]:
        group["alert_rule_test"] = [c for c in group.get("alert_rule_test", [])
                                    if not (c["alertname"] == "AskPurgeBacklog" and not c.get("exp_alerts"))]
    assert alert_cases(tests)["AskPurgeBacklog"] == {"fires"}


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is missing: `make test` installs it (Debian's prometheus, scripts/bootstrap.sh)"
    return found


def test_promtool_accepts_the_rules_and_their_unit_tests():
    check = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    unit = subprocess.run([promtool(), "test", "rules", UNIT_TESTS.name], cwd=RULES.parent,
                          capture_output=True, text=True)
    assert unit.returncode == 0, unit.stdout + unit.stderr


def test_promtool_fails_a_wrong_expectation(tmp_path):
    """The unit tests can fail: the same file with one expected summary changed does not pass."""
    (tmp_path / RULES.name).write_text(RULES.read_text())
    wrong = UNIT_TESTS.read_text().replace('summary: "605 purge tasks waiting"', 'summary: "604 purge tasks waiting"')
    assert wrong != UNIT_TESTS.read_text()
    (tmp_path / UNIT_TESTS.name).write_text(wrong)
    unit = subprocess.run([promtool(), "test", "rules", UNIT_TESTS.name], cwd=tmp_path, capture_output=True, text=True)
    assert unit.returncode != 0 and "AskPurgeBacklog" in unit.stdout + unit.stderr
