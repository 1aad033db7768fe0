"""``manage.py customer_erase --tenant SLUG --customer ID``: delete that customer's records and what
they left in the shared caches; prints the counts."""
from django.core.management.base import BaseCommand, CommandError

from supportbot.models import Tenant
from supportbot.retention import CacheUnavailable, customer_erase


class Command(BaseCommand):
    help = "Erase one customer's Ask records, their decisions and the cache entries they produced."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--customer", required=True)

    def handle(self, *args, **opts):
        try:
            tenant = Tenant.objects.get(slug=opts["tenant"])
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant {opts['tenant']!r}") from None
        try:
            counts = customer_erase(tenant, opts["customer"])
        except CacheUnavailable as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
