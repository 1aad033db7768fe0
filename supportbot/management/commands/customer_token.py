"""``manage.py customer_token --tenant SLUG --customer ID``: a signed customer token (testing, support)."""
from django.core.management.base import CommandError

from supportbot.auth import AuthError, customer_token_issue
from supportbot.management.commands._customer import CustomerCommand


class Command(CustomerCommand):
    help = ("Print a signed customer token for X-Customer-Token or the chat page's sign-in "
            "(POST customer_token to /t/<tenant>/sign-in).")

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--ttl", type=int, default=None, help="seconds (default CUSTOMER_TOKEN_TTL_S)")
        parser.add_argument("--single-use", action="store_true", help="accepted once")

    def handle(self, *args, **opts):
        tenant = self.tenant(opts)
        try:
            self.stdout.write(customer_token_issue(tenant, opts["customer"], opts["ttl"],
                                                   single_use=opts["single_use"]))
        except AuthError as exc:
            raise CommandError(exc.message) from None
