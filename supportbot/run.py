"""``make run``: everything in the foreground, Ctrl-C stops all of it.

Starts (or reuses) PostgreSQL and Redis unless DATABASE_URL / REDIS_URL are set,
migrates, loads the demo knowledge base, then runs the web server (gunicorn: uvicorn workers under ASGI, ``web_command``),
a Celery worker, Celery beat and, when the model answers (``ASK_ANSWERER=model``)
and VLLM_BASE_URL is unset, the embedded model server. It prints which answerer runs. Children get the service URLs in their environment, so they
reuse this process's services; when this process exits they are stopped."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from modelserver import SERVED_MODEL_NAME

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "supportbot.settings")
# ``make run`` is development: it asks for the public development secrets (never honoured in production,
# and never served beyond loopback, supportbot/safety.py); its children inherit the request.
os.environ.setdefault("ASK_DEV_SECRETS", "1")


def _spawn(name: str, argv: list[str], env: dict) -> subprocess.Popen:
    print(f"run: starting {name}: {' '.join(argv)}", flush=True)
    return subprocess.Popen(argv, env=env, start_new_session=True)


def _stop(procs: dict[str, subprocess.Popen]) -> None:
    for name, p in procs.items():
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for name, p in procs.items():
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        print(f"run: {name} stopped", flush=True)


def metrics_dir(env: dict) -> Path:
    """The folder where web and worker processes write their metrics (prometheus_client's
    multiprocess mode), emptied at start: values of a previous run must not be added in."""
    path = Path(env.get("PROMETHEUS_MULTIPROC_DIR") or Path(__file__).resolve().parent.parent / "var" / "prometheus")
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    return path


def metrics_access(settings) -> str:
    if settings.METRICS_TOKEN:
        return "send Authorization: Bearer $METRICS_TOKEN"
    if settings.PRODUCTION:
        return "off: set METRICS_TOKEN"
    return "loopback clients only; set METRICS_TOKEN for others"


def web_command(settings, py: str = sys.executable) -> list[str]:
    """The web server: under ASGI (``WEB_SERVER=async``, the default) gunicorn with uvicorn workers,
    each holding thousands of open streams on one event loop; ``WEB_SERVER=threads`` the older
    gthread server under WSGI (a thread per open stream). Shutdown drains open streams for
    ``WEB_DRAIN_GRACE_S`` (gunicorn's graceful timeout) before the workers stop."""
    common = ["-c", "python:supportbot.gunicorn_conf", "--bind", f"{settings.WEB_HOST}:{settings.WEB_PORT}",
              "--workers", str(settings.WEB_WORKERS), "--timeout", "180",
              "--graceful-timeout", str(settings.WEB_DRAIN_GRACE_S), "--keep-alive", str(settings.WEB_KEEPALIVE_S),
              "--access-logfile", "-"]
    if settings.WEB_SERVER == "threads":
        return [py, "-m", "gunicorn", "supportbot.wsgi", *common, "--worker-class", "gthread",
                "--threads", str(settings.WEB_THREADS)]
    if settings.WEB_SERVER != "async":
        raise SystemExit(f"WEB_SERVER must be async or threads, not {settings.WEB_SERVER!r}")
    return [py, "-m", "gunicorn", "supportbot.asgi:application", *common,
            "--worker-class", "supportbot.uvicorn_worker.UvicornWorker"]


def raise_open_files() -> int:
    """Raise this process's soft limit on open files to its hard limit (the children inherit it):
    an open stream holds two descriptors in its web worker (the client's socket and the model
    server's), and a worker holds thousands of streams. The limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def builds_banner(settings, answerer: str) -> str:
    """The banner's lines on what the app builds after it starts: the judge (its build queued here when
    it is missing) and the embedded model's llama-cpp wheel (bootstrap builds it when the model answers)."""
    # deferred: the apps are imported after django.setup() (main)
    import importlib.util

    from modelbuild import services, tasks

    queued = settings.JUDGE_BUILD_ON_START and services.judge_build_needed()
    if queued:
        tasks.judge_build.delay()
    lines = []
    for build in services.builds_status():
        when = f" since {build.since:%Y-%m-%d %H:%M} UTC" if build.since else ""
        if queued and build.state == "missing":
            lines.append(f"  {build.name.capitalize()}: queued now, builds in the background (Job runs in the admin); "
                         f"until then only strict matches serve\n")
        else:
            lines.append(f"  {build.name.capitalize()}: {build.state}{when}: {build.detail}\n")
    if answerer == "model" and not settings.VLLM_BASE_URL:
        ready = importlib.util.find_spec("llama_cpp") is not None
        lines.append("  Embedded model: " + ("ready (llama-cpp-python installed)\n" if ready else
                     "missing: run scripts/bootstrap.sh with ASK_ANSWERER=model (builds llama-cpp-python once)\n"))
    return "".join(lines)


def builds_became_ready(waiting: set[str]) -> set[str]:
    """Print a line for each build in ``waiting`` that is ready now; the ones still waiting."""
    # deferred: the apps are imported after django.setup() (main)
    from modelbuild import services

    for build in services.builds_status():
        if build.name in waiting and build.state == "ready":
            print(f"run: {build.name} ready ({build.detail}); served from now on, no restart", flush=True)
            waiting = waiting - {build.name}
    return waiting


def main() -> int:
    # deferred: django.setup() starts the embedded services first; the apps are imported after it
    import django

    django.setup()  # settings start the embedded services this process then holds
    from django.conf import settings
    from django.core.management import call_command

    from supportbot.safety import refuse_public_bind

    refuse_public_bind(settings.WEB_HOST)  # before anything starts: one line, exit 1
    from supportbot.answerers import answerer_name

    call_command("migrate", interactive=False, verbosity=0)
    call_command("load_demo")
    py = sys.executable
    open_files = raise_open_files()
    if open_files < 4096:
        print(f"run: open-file limit {open_files}: each open stream holds two; raise it (ulimit -n) for many", flush=True)
    env = dict(os.environ)  # DATABASE_URL and REDIS_URL are set by now
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir(env))
    procs: dict[str, subprocess.Popen] = {}
    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        answerer = answerer_name()
        if answerer == "model" and not settings.VLLM_BASE_URL:
            procs["model"] = _spawn("embedded model server", [
                py, "-m", "modelserver", "--host", settings.EMBEDDED_MODEL_HOST,
                "--port", str(settings.EMBEDDED_MODEL_PORT)], env)
        procs["worker"] = _spawn("celery worker", [
            py, "-m", "celery", "-A", "supportbot", "worker", "--loglevel", "INFO",
            "--concurrency", str(settings.CELERY_WORKER_CONCURRENCY),
            "-Q", ",".join(settings.CELERY_WORKER_QUEUES), "--hostname", "worker@%h"], env)
        procs["beat"] = _spawn("celery beat", [
            py, "-m", "celery", "-A", "supportbot", "beat", "--loglevel", "INFO",
            "--scheduler", "django_celery_beat.schedulers:DatabaseScheduler",
            "--pidfile", str(settings.BASE_DIR / "var" / "run" / "celerybeat.pid")], env)
        procs["web"] = _spawn("web", web_command(settings, py), env)
        base = f"http://{settings.WEB_HOST}:{settings.WEB_PORT}"
        if answerer == "extractive":
            writer = "extractive: quotes the help centre's own sentences (ASK_ANSWERER=model to generate answers)"
        else:
            writer = (f"model: {settings.VLLM_MODEL} at {settings.VLLM_BASE_URL}" if settings.VLLM_BASE_URL
                      else f"model: {SERVED_MODEL_NAME} on the embedded model server")
        print(f"\n  Ask is running. Chat page: {base}/t/acme/  (also {base}/t/initech/, admin: {base}/admin/)\n"
              f"  Answerer: {writer}\n"
              f"{builds_banner(settings, answerer)}"
              f"  Prometheus metrics: {base}/metrics ({metrics_access(settings)})\n"
              f"  Create a staff login with: ASK_DEV_SECRETS=1 .venv/bin/python manage.py createsuperuser\n"
              f"  Ctrl-C stops everything.\n", flush=True)
        from modelbuild.services import builds_status

        waiting, looked = {b.name for b in builds_status() if b.state != "ready"}, time.monotonic()
        while not stopping:
            if waiting and time.monotonic() - looked > 15:
                waiting, looked = builds_became_ready(waiting), time.monotonic()
            for name, p in procs.items():
                if p.poll() is not None:
                    print(f"run: {name} exited with {p.returncode}; stopping everything", flush=True)
                    stopping = True
                    break
            time.sleep(0.5)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _stop(procs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
