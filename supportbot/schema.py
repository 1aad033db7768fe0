"""One-shot commands on an unmigrated database: migrate the embedded one, or say what to run.

``manage.py evalcache ...`` after ``make test`` used to die with ``relation "supportbot_tenant"
does not exist``: the tests migrate a database of their own, the main one never was.
``manage.py`` calls ``ensure_migrated`` before any command that uses the database. The
embedded database (``var/pg``, a developer's own) is migrated on the spot; any other database
belongs to a deployment, whose migrations are a release step, so the command stops with one
line saying what to run."""
from __future__ import annotations

import sys

# Commands that manage migrations themselves, or never touch the project's tables.
SKIPPED = frozenset({
    "migrate", "makemigrations", "showmigrations", "sqlmigrate", "squashmigrations", "optimizemigration",
    "check", "test", "help", "version", "diffsettings", "shell", "dbshell", "inspectdb", "sqlflush",
    "sqlsequencereset", "startapp", "startproject", "makemessages", "compilemessages", "collectstatic",
    "findstatic", "testserver", "flush", "createcachetable",
})


def ensure_migrated(argv: list[str]) -> None:
    """Before ``manage.py <command>``: nothing when the schema is current; else migrate the
    embedded database (one line on stderr), or exit with one line saying what to run."""
    command = argv[1] if len(argv) > 1 else "help"
    if command in SKIPPED or command.startswith("-") or {"-h", "--help"} & set(argv[2:]):
        return
    # deferred: manage.py calls this before Django is set up; most commands never get this far
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command, get_commands
    from django.db import DatabaseError, connection
    from django.db.migrations.executor import MigrationExecutor

    from core import servers

    if command not in get_commands():
        return  # Django says it is unknown
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SystemExit(f"manage.py {command}: cannot read the database's migrations ({first}).") from None
    if not pending:
        return
    if servers.is_embedded_database(settings.DATABASES["default"]):
        print(f"manage.py {command}: the embedded database has {len(pending)} unapplied migration(s); "
              "applying them first.", file=sys.stderr, flush=True)
        call_command("migrate", interactive=False, verbosity=0)
        return
    raise SystemExit(f"manage.py {command}: the database is not migrated ({len(pending)} unapplied migration(s)); "
                     "run: .venv/bin/python manage.py migrate")
