"""Shared fixtures. Tests talk to the real services: the embedded PostgreSQL with
pgvector and Redis (started by settings unless DATABASE_URL/REDIS_URL are set),
the real embedding model and, end to end, the embedded model server."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from core import servers  # noqa: E402

# Tests get their own Redis database so a running `make run` keeps its caches.
servers.ensure_environment()
if not os.environ.get("REDIS_TEST_URL"):
    os.environ["REDIS_TEST_URL"] = os.environ["REDIS_URL"].rsplit("/", 1)[0] + "/" + os.environ.get("REDIS_TEST_DB", "15")
os.environ["REDIS_URL"] = os.environ["REDIS_TEST_URL"]

import pytest  # noqa: E402
from django.conf import settings as django_settings  # noqa: E402

# pytest-django has read the settings before this file runs: point them at the test database too.
django_settings.REDIS_URL = os.environ["REDIS_TEST_URL"]
# The cache tests offer hand-written answers to the usual checks: admission trusts their generator as it
# trusts vLLM. Low trust (the embedded model's default) has its own tests (caching/test_answer_grounding.py).
django_settings.GENERATION_TRUST = os.environ.get("GENERATION_TRUST") or "standard"
# The tests' judge is the small recipe's (caching/guards/judge_recipe.py: the same training code on a slice
# of the data, built once under var/judge in about a minute); the full judge's figures are the benchmarks'
# (bench.judge_eval, bench.judge_replay). SEMANTIC_JUDGE_RECIPE=full runs the tests on the full judge.
os.environ["SEMANTIC_JUDGE_RECIPE"] = django_settings.SEMANTIC_JUDGE_RECIPE = (
    os.environ.get("SEMANTIC_JUDGE_RECIPE") or "small")

from tests import factories  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def judge_built():
    """The judge the tests serve, built once (a stat when it is there) by the same code as ``make run``'s."""
    from caching.guards import judge_recipe
    from modelbuild import judge_train

    return judge_train.ensure_artefact(django_settings.SEMANTIC_JUDGE_DIR,
                                       recipe=judge_recipe.RECIPES[django_settings.SEMANTIC_JUDGE_RECIPE],
                                       progress=lambda m: print(f"tests: judge: {m}", flush=True))


@pytest.fixture
def empty_root(tmp_path, settings):
    """A judge folder with nothing built in it, the process's judge forgotten before and after."""
    from caching import guards

    settings.SEMANTIC_JUDGE_DIR = tmp_path
    guards.set_learned_judge(None)
    yield tmp_path
    guards.set_learned_judge(None)


@pytest.fixture
def full_judge(settings):
    """The product's judge (the full recipe) for a test of what it decides: served where it is built
    (``make run`` builds it in the background, ``manage.py train_judge`` in the foreground), skipped
    with the reason where it is not (a fresh CI machine: its figures there are ``bench.judge_eval``'s).
    Every such property also has a twin on what a fresh install serves, strict matches only."""
    import importlib

    judge_module = importlib.import_module("caching.guards.judge")  # the package's ``judge`` is the function
    settings.SEMANTIC_JUDGE_RECIPE = "full"
    judge_module.set_learned_judge(None)
    model = judge_module.learned_judge()
    if model is None:
        judge_module.set_learned_judge(None)
        pytest.skip("the full judge is not built here (manage.py train_judge); bench.judge_eval measures it")
    yield model
    settings.SEMANTIC_JUDGE_RECIPE = django_settings.SEMANTIC_JUDGE_RECIPE
    judge_module.set_learned_judge(None)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The demo tenants and knowledge base, loaded and indexed once per session."""
    with django_db_blocker.unblock():
        factories.demo_load()


def pytest_generate_tests(metafunc):
    """A test marked ``redis_cluster`` runs twice: against the single test Redis and against a local
    Redis Cluster of three primaries (``redis_backend`` is "single" or "cluster")."""
    if metafunc.definition.get_closest_marker("redis_cluster"):
        metafunc.parametrize("redis_backend", ["single", "cluster"], indirect=True)


@pytest.fixture(scope="session")
def redis_cluster():
    """Three primaries from the embedded Redis's redis-server, slots assigned, on loopback ports."""
    from core.embedded_cluster import start_cluster

    cluster = start_cluster(primaries=3)
    yield cluster
    cluster.stop()


@pytest.fixture
def redis_backend(request):
    """Which Redis the test's caches use; "cluster" points REDIS_URL at ``redis_cluster`` for the test."""
    mode = getattr(request, "param", "single")
    if mode != "cluster":
        yield mode
        return
    from core.redis_client import reset_redis_state

    cluster = request.getfixturevalue("redis_cluster")
    before = django_settings.REDIS_URL
    django_settings.REDIS_URL = cluster.url
    reset_redis_state()
    yield mode
    django_settings.REDIS_URL = before
    reset_redis_state()


@pytest.fixture(autouse=True)
def _clean_redis(redis_backend):
    """Every test starts with empty answer/search caches; embedding vectors are kept (they are pure).
    Every per-process cache (``core.localcache``: tenants, article versions, thresholds, the active
    index generation, answerers, model clients ...) starts empty too: what an earlier test left there
    (a tenant or generation since flushed, a client of its scripted server) is not this test's."""
    from core.localcache import forget_every_cache
    from core.redis_client import get_redis, reset_redis_state

    reset_redis_state()
    r = get_redis()
    keys = [k for k in r.scan_iter(count=1000) if not k.startswith(b"emb:")]
    if keys:
        r.delete(*keys)
    forget_every_cache()
    yield
    reset_redis_state()


@pytest.fixture
def demo(db):
    """The demo tenants (acme: en+de, initech: en), ingested and indexed."""
    return factories.demo_load()


@pytest.fixture
def acme(demo):
    return demo["acme"]


@pytest.fixture
def initech(demo):
    return demo["initech"]


@pytest.fixture(scope="session")
def model_server():
    """The embedded model server (started once, or reused if one is running)."""
    from generation.local_model import ensure_model_server

    return ensure_model_server()


@pytest.fixture(autouse=True)
def _model_answerer_with_the_model_server(request):
    """A test that starts the embedded model server means the generative path: the model answerer
    (without VLLM_BASE_URL the default answerer is the extractive one)."""
    if "model_server" not in request.fixturenames:
        yield
        return
    settings = request.getfixturevalue("settings")
    settings.ASK_ANSWERER = "model"
    yield


@pytest.fixture
def asgi_live_server(transactional_db):
    """The project's ASGI application under uvicorn (the async server ``make run`` serves) on a free
    loopback port, in a thread of this process: ``.url``. Its threads use their own database
    connections, so the test's data must be committed (``transactional_db``)."""
    import socket
    import threading
    import time
    from types import SimpleNamespace

    import uvicorn
    from django.core.asgi import get_asgi_application

    from supportbot import serving

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    get_asgi_application()  # django.setup(), as supportbot.asgi does
    server = uvicorn.Server(uvicorn.Config(serving.asgi_application(), log_level="warning", lifespan="off",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield SimpleNamespace(url=f"http://127.0.0.1:{sock.getsockname()[1]}")
    server.should_exit = True
    thread.join(10)
    sock.close()
