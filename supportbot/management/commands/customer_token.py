"""``manage.py customer_token --tenant SLUG --customer ID``: a signed customer token (testing, support)."""
from django.core.management.base import BaseCommand, CommandError

from supportbot.auth import AuthError, customer_token_issue
from supportbot.models import Tenant


class Command(BaseCommand):
    help = "Print a signed customer token for the chat page (?customer_token=...) or X-Customer-Token."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--customer", required=True)
        parser.add_argument("--ttl", type=int, default=None, help="seconds (default CUSTOMER_TOKEN_TTL_S)")

    def handle(self, *args, **opts):
        try:
            tenant = Tenant.objects.get(slug=opts["tenant"])
            self.stdout.write(customer_token_issue(tenant, opts["customer"], opts["ttl"]))
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant {opts['tenant']!r}") from None
        except AuthError as exc:
            raise CommandError(exc.message) from None
