from django.core.management.base import BaseCommand

from supportbot.schedules import schedules_setup


class Command(BaseCommand):
    help = "Create the default Celery beat schedules that do not exist yet (never overwrites staff edits)."

    def handle(self, **opts):
        result = schedules_setup()
        for outcome in ("created", "kept", "unavailable"):
            for name in result[outcome]:
                self.stdout.write(f"{outcome}: {name}")
