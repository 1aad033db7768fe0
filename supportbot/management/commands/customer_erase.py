"""``manage.py customer_erase --tenant SLUG --customer ID``: delete that customer's records and what
they left in the shared caches; prints the counts."""
from django.core.management.base import CommandError

from supportbot.management.commands._customer import CustomerCommand
from supportbot.retention import CacheUnavailable, customer_erase


class Command(CustomerCommand):
    help = "Erase one customer's Ask records, their decisions and the cache entries they produced."

    def handle(self, *args, **opts):
        try:
            counts = customer_erase(self.tenant(opts), opts["customer"])
        except CacheUnavailable as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
