"""``manage.py train_judge [--force]``: build the semantic judge for the current data and recipe
(``modelbuild.judge_train``) under ``SEMANTIC_JUDGE_DIR``; a version already built is kept unless
``--force``. The running processes load the new version on their next start."""
from django.conf import settings
from django.core.management.base import BaseCommand

from modelbuild import judge_train


class Command(BaseCommand):
    help = "Train, calibrate and store the semantic judge (a cross-encoder over question pairs)."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="rebuild even when the current version exists")

    def handle(self, *args, **opts):
        path = judge_train.ensure_artefact(settings.SEMANTIC_JUDGE_DIR, force=opts["force"],
                                           progress=lambda m: self.stdout.write(m))
        self.stdout.write(self.style.SUCCESS(f"judge {path.name} in {path}"))
