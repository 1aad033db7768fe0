"""``manage.py apikey create|list|revoke``: a tenant's API keys for the Ask API."""
from django.core.management.base import BaseCommand, CommandError

from core.models import ApiKeyScope, Tenant, TenantApiKey
from supportbot.auth import api_key_create, api_key_revoke


class Command(BaseCommand):
    help = "Create, list or revoke a tenant's API keys (the raw key is printed once, at creation)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a key and print it once")
        create.add_argument("--tenant", required=True, help="tenant slug")
        create.add_argument("--name", default="api", help="what the key is for")
        create.add_argument("--timing-breakdown", action="store_true",
                            help="answers to this key carry the per-step timings (staff tooling only): the timings scope")
        create.add_argument("--scope", action="append", dest="scopes", choices=ApiKeyScope.values,
                            help="what the key may do (repeat it); default: ask and customer_token")
        listing = sub.add_parser("list", help="list keys (prefixes only)")
        listing.add_argument("--tenant", required=True)
        revoke = sub.add_parser("revoke", help="revoke a key by its prefix")
        revoke.add_argument("prefix")

    def handle(self, *args, action, **opts):
        if action == "revoke":
            if not api_key_revoke(opts["prefix"]):
                raise CommandError(f"no active key with prefix {opts['prefix']!r}")
            self.stdout.write(f"revoked {opts['prefix']}")
            return
        try:
            tenant = Tenant.objects.get(slug=opts["tenant"])
        except Tenant.DoesNotExist:
            raise CommandError(f"no tenant {opts['tenant']!r}") from None
        if action == "create":
            row, raw = api_key_create(tenant, opts["name"], timing_breakdown=opts["timing_breakdown"],
                                      scopes=opts["scopes"])
            self.stderr.write(f"created key {row.prefix} for {tenant.slug}; store it now, it is not shown again")
            self.stdout.write(raw)
            return
        for row in TenantApiKey.objects.filter(tenant=tenant):
            state = "active" if row.active else f"revoked {row.revoked_at:%Y-%m-%d %H:%M}"
            self.stdout.write(f"{row.prefix}  {row.name}  created {row.created_at:%Y-%m-%d %H:%M}  "
                              f"scopes {','.join(row.scopes)}  {state}")
