"""System checks of the deployment (``manage.py check --deploy``)."""
from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from supportbot.safety import DEV_SECRETS

_SETTING_OF = {"DJANGO_SECRET_KEY": "SECRET_KEY", "CACHE_SALT_SECRET": "CACHE_SALT_SECRET",
               "CUSTOMER_REF_SECRET": "CUSTOMER_REF_SECRET"}


@register(Tags.security, deploy=True)
def dev_secrets_check(app_configs, **kwargs):
    """A development secret is public (it is in the repository): with it anyone signs sessions and
    mints customer tokens."""
    problems = [
        Error(f"{name} is the public development value.",
              hint=f"Set {name} to a long random secret (and DJANGO_ENV=production).", id="supportbot.E001")
        for name, dev in DEV_SECRETS.items() if getattr(settings, _SETTING_OF[name]) == dev
    ]
    if not settings.PRODUCTION:
        problems.append(Warning("DJANGO_ENV is not 'production': secure cookies, HSTS and HTTPS redirects are off "
                                "and secrets fall back to development values.",
                                hint="Set DJANGO_ENV=production.", id="supportbot.W001"))
    return problems
