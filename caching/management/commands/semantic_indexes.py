"""Make the semantic cache's per-tenant HNSW indexes match the active-entry counts now (the hourly task's
work, ``caching.tenant_indexes``): ``manage.py semantic_indexes [--min-rows N] [--dry-run]``."""
from django.core.management.base import BaseCommand, CommandError

from caching import tenant_indexes


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser):
        parser.add_argument("--min-rows", type=int, default=None,
                            help="active entries from which a tenant gets an index (default: SEMANTIC_TENANT_INDEX_MIN_ROWS)")
        parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")

    def handle(self, *args, min_rows=None, dry_run=False, **options):
        try:
            done = tenant_indexes.maintain(min_rows, dry_run=dry_run)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        verb = "would " if dry_run else ""
        self.stdout.write(f"tenant indexes (min rows {done.min_rows}): {verb}create {len(done.created)} "
                          f"{done.created}, {verb}rebuild {len(done.rebuilt)} {done.rebuilt}, {verb}drop "
                          f"{len(done.dropped)} {done.dropped}, kept {len(done.kept)}")
