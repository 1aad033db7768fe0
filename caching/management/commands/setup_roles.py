from django.core.management.base import BaseCommand

from caching.roles import roles_setup


class Command(BaseCommand):
    help = "Create the 'Support agents' and 'Cache admins' groups with their permissions (idempotent)."

    def handle(self, *args, **options):
        for name, count in roles_setup().items():
            self.stdout.write(f"{name}: {count} permissions")
