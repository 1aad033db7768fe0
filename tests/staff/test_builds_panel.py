"""The staff dashboard says what the app still builds and since when (docs/first-run.md)."""
from __future__ import annotations

import shutil

import pytest


@pytest.mark.django_db
def test_the_dashboard_lists_the_builds(client, agent, empty_root, judge_built):
    client.force_login(agent)
    page = client.get("/admin/ask/").content.decode()
    assert 'id="builds"' in page and 'data-build="missing"' in page and "Semantic judge" in page
    shutil.copytree(judge_built, empty_root / judge_built.name)
    page = client.get("/admin/ask/").content.decode()
    assert 'data-build="ready"' in page and judge_built.name in page
