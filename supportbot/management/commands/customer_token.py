"""``manage.py customer_token --tenant SLUG --customer ID``: a signed customer token (testing, support)."""
from django.core.management.base import CommandError

from supportbot.auth import AuthError, customer_token_issue
from supportbot.management.commands._customer import CustomerCommand


class Command(CustomerCommand):
    help = "Print a signed customer token for the chat page (?customer_token=...) or X-Customer-Token."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--ttl", type=int, default=None, help="seconds (default CUSTOMER_TOKEN_TTL_S)")

    def handle(self, *args, **opts):
        tenant = self.tenant(opts)
        try:
            self.stdout.write(customer_token_issue(tenant, opts["customer"], opts["ttl"]))
        except AuthError as exc:
            raise CommandError(exc.message) from None
