"""Development secrets only on request (issue 29, second security review): outside production the
settings fall back to the public development secrets only when the process asks for them with
``ASK_DEV_SECRETS=1`` (``make run``, the tests); any other process without real secrets (gunicorn,
uwsgi, runserver, a worker, a command) stops at start with one clear message. ``/metrics`` never
takes a proxied request for a loopback client."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

from supportbot.safety import DEV_SECRETS

ROOT = settings.BASE_DIR
SETUP = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY[:8])"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in DEV_SECRETS and k not in ("DJANGO_ENV", "ASK_DEV_SECRETS")}
    env.update(DJANGO_SETTINGS_MODULE="supportbot.settings", **extra)
    return env


def test_without_the_explicit_request_a_process_without_secrets_refuses_to_start():
    result = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=_env(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr and "ASK_DEV_SECRETS=1" in result.stderr, result.stderr[-2000:]
    # the same for a non-production DJANGO_ENV that is not "development"
    staging = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=_env(DJANGO_ENV="staging"),
                             capture_output=True, text=True, timeout=120)
    assert staging.returncode != 0 and "ASK_DEV_SECRETS=1" in staging.stderr


def test_asking_explicitly_gets_the_development_values_and_real_secrets_need_no_request():
    asked = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=_env(ASK_DEV_SECRETS="1"),
                           capture_output=True, text=True, timeout=120)
    assert asked.returncode == 0 and asked.stdout.strip() == DEV_SECRETS["DJANGO_SECRET_KEY"][:8], asked.stderr[-2000:]
    real = {name: "r" * 60 for name in DEV_SECRETS}
    served = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=_env(**real), capture_output=True,
                            text=True, timeout=120)
    assert served.returncode == 0 and served.stdout.strip() == "r" * 8, served.stderr[-2000:]


def test_make_run_and_the_tests_ask_for_the_development_values():
    assert os.environ.get("ASK_DEV_SECRETS") == "1"  # the tests asked (pytest.ini's early plugin)
    run = (ROOT / "supportbot" / "run.py").read_text()
    assert 'os.environ.setdefault("ASK_DEV_SECRETS", "1")' in run


@pytest.mark.parametrize("header", ["HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP"])
def test_metrics_never_trust_a_proxied_request_as_loopback(client, db, header):
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", **{header: "203.0.113.9"}).status_code == 404
