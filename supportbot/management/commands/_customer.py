"""The base of the commands that act for one customer of one tenant (``--tenant``, ``--customer``)."""
from django.core.management.base import BaseCommand, CommandError

from core.models import Tenant


class CustomerCommand(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True, help="the tenant's slug")
        parser.add_argument("--customer", required=True, help="the customer's id at that tenant")

    def tenant(self, opts) -> Tenant:
        try:
            return Tenant.objects.get(slug=opts["tenant"])
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant {opts['tenant']!r}") from None
