from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.models import Tenant
from ingestion.services import ingest_directory
from retrieval.services import index_sync


class Command(BaseCommand):
    help = "Ingest a folder of markdown articles as a tenant's knowledge base, then index what changed."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--keep-missing", action="store_true", help="do not retire articles absent from PATH")
        parser.add_argument("--no-index", action="store_true", help="leave embedding to the nightly job")

    def handle(self, path, tenant, keep_missing, no_index, **opts):
        root = Path(path)
        if not root.is_dir():
            raise CommandError(f"{path} is not a directory")
        try:
            t = Tenant.objects.get(slug=tenant)
        except Tenant.DoesNotExist:
            raise CommandError(f"unknown tenant {tenant!r}; create it first (load_demo creates the demo tenants)")
        report = ingest_directory(root, t, retire_missing=not keep_missing)
        for error in report.errors:
            self.stderr.write(self.style.ERROR(error))
        self.stdout.write(f"{t.slug}: {report.summary()}")
        if not no_index:
            sync = index_sync(tenant_id=t.pk)
            self.stdout.write(f"index: scanned={sync.scanned} changed={sync.changed} embedded={sync.embedded} "
                              f"cache_hits={sync.cache_hits} removed={sync.removed} in {sync.duration_s:.1f}s")
        if report.errors:
            raise CommandError(f"{len(report.errors)} file(s) could not be ingested; nothing was retired")
