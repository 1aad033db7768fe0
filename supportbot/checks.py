"""System checks of the deployment (``manage.py check --deploy``)."""
from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from core.redis_client import cluster_url
from supportbot.safety import DEV_SECRETS

_SETTING_OF = {"DJANGO_SECRET_KEY": "SECRET_KEY", "CACHE_SALT_SECRET": "CACHE_SALT_SECRET",
               "CUSTOMER_REF_SECRET": "CUSTOMER_REF_SECRET"}


@register(Tags.security, deploy=True)
def dev_secrets_check(app_configs, **kwargs):
    """A development secret is public (it is in the repository): with it anyone signs sessions and
    mints customer tokens."""
    problems = [
        Error(f"{name} is the public development value.",
              hint=f"Set {name} to a long random secret (and DJANGO_ENV=production).", id="supportbot.E001")
        for name, dev in DEV_SECRETS.items() if getattr(settings, _SETTING_OF[name]) == dev
    ]
    if not settings.PRODUCTION:
        problems.append(Warning("DJANGO_ENV is not 'production': secure cookies, HSTS and HTTPS redirects are off "
                                "and secrets fall back to development values.",
                                hint="Set DJANGO_ENV=production.", id="supportbot.W001"))
    return problems


@register(Tags.caches)
def broker_not_cluster_check(app_configs, **kwargs):
    """Celery's broker is a plain Redis: its queues are lists that move between keys, which a Redis
    Cluster spreads over shards (kombu has no cluster transport). ``REDIS_URL`` may name a cluster
    (``redis+cluster://``); the broker then needs a primary of its own, and ``CELERY_BROKER_URL``
    defaults to ``REDIS_URL``, so it must be set."""
    problems = []
    for name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        if cluster_url(getattr(settings, name, "") or "") is not None:
            hint = ("Set CELERY_BROKER_URL to a plain Redis primary (redis://…) with maxmemory-policy noeviction, "
                    "not the cache cluster." if name == "CELERY_BROKER_URL"
                    else "Set CELERY_RESULT_BACKEND to the broker's plain Redis (redis://…).")
            problems.append(Error(f"{name} names a Redis Cluster ({getattr(settings, name).split('://')[0]}://).",
                                  hint=hint, id="supportbot.E002"))
    return problems


@register(Tags.caches, deploy=True)
def broker_is_not_a_cluster_node_check(app_configs, **kwargs):
    """A plain URL can still point at a node of a cluster: ask the broker (``INFO cluster``). A broker
    that cannot be reached now is not this check's business (the worker reports it)."""
    import redis

    url = settings.CELERY_BROKER_URL
    if not url or cluster_url(url) is not None or not url.startswith(("redis://", "rediss://", "unix://")):
        return []
    try:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        enabled = client.info("cluster").get("cluster_enabled")
        client.close()
    except (redis.RedisError, OSError):
        return []
    if enabled:
        return [Error("CELERY_BROKER_URL points at a node of a Redis Cluster (cluster_enabled:1).",
                      hint="Give the Celery broker a plain Redis primary of its own (noeviction).",
                      id="supportbot.E003")]
    return []


# Django's own deploy checks W001-W003 look for its middleware by dotted path; MIDDLEWARE holds
# subclasses that run on the event loop (supportbot/middleware.py), so those checks are silenced in
# settings and this one asks the same of the classes themselves.
_REQUIRED_MIDDLEWARE = {
    "security.W001": "django.middleware.security.SecurityMiddleware",
    "security.W002": "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "security.W003": "django.middleware.csrf.CsrfViewMiddleware",
}


@register(Tags.security, deploy=True)
def security_middleware_check(app_configs, **kwargs):
    from django.utils.module_loading import import_string

    installed = [import_string(path) for path in settings.MIDDLEWARE]
    out = []
    for code, path in _REQUIRED_MIDDLEWARE.items():
        required = import_string(path)
        if not any(isinstance(cls, type) and issubclass(cls, required) for cls in installed):
            out.append(Warning(f"{path} (or a subclass) is not in MIDDLEWARE", id=code.replace("security.", "ask.")))
    return out
