from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ingestion.services import ingest_directory
from retrieval.services import index_sync
from supportbot.services import demo_dir, tenants_load


class Command(BaseCommand):
    help = "Create the demo tenants and ingest their knowledge base (idempotent)."

    def handle(self, **opts):
        root = demo_dir()
        tenants = tenants_load(root / "tenants.json")
        failed = False
        for t in tenants:
            report = ingest_directory(root / t.slug, t)
            for error in report.errors:
                self.stderr.write(self.style.ERROR(error))
            failed |= bool(report.errors)
            self.stdout.write(f"{t.slug}: {report.summary()}")
        sync = index_sync()
        self.stdout.write(f"index: changed={sync.changed} embedded={sync.embedded} cache_hits={sync.cache_hits} "
                          f"removed={sync.removed} in {sync.duration_s:.1f}s")
        call_command("setup_schedules", stdout=self.stdout)
        if failed:
            raise CommandError("some demo articles could not be ingested")
