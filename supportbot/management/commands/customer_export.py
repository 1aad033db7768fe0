"""``manage.py customer_export --tenant SLUG --customer ID``: that customer's Asks as JSON."""
import json

from django.core.management.base import BaseCommand, CommandError

from supportbot.models import Tenant
from supportbot.retention import customer_export


class Command(BaseCommand):
    help = "Print one customer's Ask records as JSON (a subject access request)."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--customer", required=True)

    def handle(self, *args, **opts):
        try:
            tenant = Tenant.objects.get(slug=opts["tenant"])
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant {opts['tenant']!r}") from None
        data = customer_export(tenant, opts["customer"])
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True))
        self.stderr.write(f"exported {data['count']} asks")
