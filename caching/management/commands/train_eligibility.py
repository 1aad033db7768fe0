"""``manage.py train_eligibility [--force]``: build the eligibility model for the current labels, data,
rules and config (``caching.eligibility_train``) under ``ELIGIBILITY_MODEL_DIR``; a version already built
is kept unless ``--force``. The running processes load the new version on their next start."""
from django.conf import settings
from django.core.management.base import BaseCommand

from caching import eligibility_train


class Command(BaseCommand):
    help = "Train the eligibility model (P(general) of a question) and choose its threshold on held-out intents."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="rebuild even when the current version exists")

    def handle(self, *args, **opts):
        path = eligibility_train.ensure_artefact(settings.ELIGIBILITY_MODEL_DIR, force=opts["force"],
                                                 progress=lambda m: self.stdout.write(m))
        self.stdout.write(self.style.SUCCESS(f"eligibility model {path.name} in {path}"))
