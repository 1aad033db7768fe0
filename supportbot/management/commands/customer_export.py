"""``manage.py customer_export --tenant SLUG --customer ID``: that customer's Asks as JSON."""
import json

from supportbot.management.commands._customer import CustomerCommand
from supportbot.retention import customer_export


class Command(CustomerCommand):
    help = "Print one customer's Ask records as JSON (a subject access request)."

    def handle(self, *args, **opts):
        data = customer_export(self.tenant(opts), opts["customer"])
        self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True))
        self.stderr.write(f"exported {data['count']} asks")
