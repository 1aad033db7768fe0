"""The README is the newcomer's map: every setting is documented, the two commands come first."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def settings_names() -> set[str]:
    text = (ROOT / "supportbot" / "settings.py").read_text()
    return set(re.findall(r'env\.\w+\("([A-Z][A-Z0-9_]+)"', text))


def test_every_setting_is_in_the_settings_table():
    doc = (ROOT / "docs" / "settings.md").read_text()
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", doc, flags=re.M))
    missing = settings_names() - rows
    assert not missing, f"settings missing from docs/settings.md: {sorted(missing)}"
    stale = rows - settings_names()
    assert not stale, f"docs/settings.md documents settings nothing reads: {sorted(stale)}"


def test_the_settings_table_is_generated_from_the_settings():
    """docs/settings.md is what ``scripts/settings_table.py --write`` makes of supportbot/settings.py now,
    and every setting has a meaning there."""
    from scripts.settings_table import document, rows

    assert (ROOT / "docs" / "settings.md").read_text() == document(), \
        "docs/settings.md is stale: run python scripts/settings_table.py --write"
    assert not [name for name, _, meaning in rows() if not meaning]


def test_the_readme_settings_it_names_exist():
    readme = (ROOT / "README.md").read_text()
    stale = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", readme, flags=re.M)) - settings_names()
    assert not stale, f"README documents settings nothing reads: {sorted(stale)}"


def test_readme_states_the_two_commands_first():
    readme = (ROOT / "README.md").read_text()
    first_code = readme.split("```", 2)[1]
    assert "make run" in first_code and "make test" in first_code


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
