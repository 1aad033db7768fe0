from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from supportbot.services import demo_load


class Command(BaseCommand):
    help = "Create the demo tenants and ingest their knowledge base (idempotent)."

    def handle(self, **opts):
        loaded = demo_load()
        for slug, report in loaded.reports.items():
            for error in report.errors:
                self.stderr.write(self.style.ERROR(error))
            self.stdout.write(f"{slug}: {report.summary()}")
        sync = loaded.sync
        self.stdout.write(f"index: changed={sync.changed} embedded={sync.embedded} cache_hits={sync.cache_hits} "
                          f"removed={sync.removed} in {sync.duration_s:.1f}s")
        call_command("setup_schedules", stdout=self.stdout)
        if any(report.errors for report in loaded.reports.values()):
            raise CommandError("some demo articles could not be ingested")
