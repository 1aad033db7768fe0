"""Safe defaults: the public development secrets never serve anything beyond this machine.

Outside production (``DJANGO_ENV`` unset or not ``production``) the settings fall back to
development secrets that are written in this repository: anyone holding them can sign
sessions and mint customer tokens. ``refuse_public_bind`` stops a server that would listen on
a non-loopback address with any of them (``make run``: ``supportbot/run.py``; gunicorn:
``supportbot/gunicorn_conf.py``); ``supportbot.checks`` makes ``manage.py check --deploy`` flag
them. This module reads the environment only, so gunicorn's master can use it before Django
is configured.
"""
from __future__ import annotations

import ipaddress
import os

from django.core.exceptions import ImproperlyConfigured

DEV_SECRETS = {
    "DJANGO_SECRET_KEY": "dev-only-insecure-key-not-for-production-use-0123456789",
    "CACHE_SALT_SECRET": "dev-only-cache-salt-secret",
    "CUSTOMER_REF_SECRET": "dev-only-customer-ref-secret",
}


def dev_secrets_in_use(environ=None) -> list[str]:
    """The secrets (by environment variable) that are unset or set to their development value."""
    environ = os.environ if environ is None else environ
    return [name for name, dev in DEV_SECRETS.items() if environ.get(name, "") in ("", dev)]


def require_secrets(environ=None, *, production: bool = False) -> None:
    """Stop a process that has no real secrets and did not ask for the development ones: one clear
    line instead of a server that signs with values anyone can read in this repository."""
    environ = os.environ if environ is None else environ
    missing = [name for name in DEV_SECRETS if not environ.get(name)]
    if missing:
        hint = "" if production else (" For local development only, set ASK_DEV_SECRETS=1 to use the public "
                                      "development values (make run and the tests do).")
        raise ImproperlyConfigured(f"Set {', '.join(missing)}: secrets have no default.{hint}")


def is_loopback(host: str) -> bool:
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def bind_host(bind: str) -> str | None:
    """The host part of a gunicorn bind (``host:port``, ``[v6]:port``, ``host``); None for a Unix
    socket or an inherited descriptor (local by nature)."""
    if bind.startswith(("unix:", "fd://")):
        return None
    if bind.startswith("["):
        return bind[1:].split("]", 1)[0]
    return bind.rsplit(":", 1)[0] if bind.count(":") == 1 else bind


def refuse_public_bind(binds, environ=None) -> None:
    """SystemExit with one line when a server would listen beyond loopback with a development secret."""
    environ = os.environ if environ is None else environ
    used = dev_secrets_in_use(environ)
    if not used:
        return
    for bind in [binds] if isinstance(binds, str) else list(binds):
        host = bind_host(bind)
        if host is not None and not is_loopback(host):
            raise SystemExit(
                f"Refusing to listen on {bind}: {', '.join(used)} would be the public development value"
                f"{'s' if len(used) > 1 else ''} (anyone could sign sessions and customer tokens). Set "
                f"DJANGO_ENV=production with real secrets, or listen on 127.0.0.1.")
