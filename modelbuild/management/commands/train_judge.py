"""``manage.py train_judge [--recipe full|small] [--force]``: build the semantic judge for the current
data and recipe (``modelbuild.judge_train``) under ``SEMANTIC_JUDGE_DIR``, in the foreground; a
version already built is kept unless ``--force``. Running processes serve it within
``SEMANTIC_JUDGE_RECHECK_S`` seconds of it appearing (a rebuilt version on their next start).
``make run`` queues the same build as a background job (``modelbuild.tasks.judge_build``)."""
from django.conf import settings
from django.core.management.base import BaseCommand

from caching.guards.judge_recipe import RECIPES
from modelbuild import judge_train


class Command(BaseCommand):
    help = "Train, calibrate and store the semantic judge (a cross-encoder over question pairs)."

    def add_arguments(self, parser):
        parser.add_argument("--recipe", choices=sorted(RECIPES), default=None,
                            help="the recipe (default SEMANTIC_JUDGE_RECIPE): full, or small (the tests' judge)")
        parser.add_argument("--force", action="store_true", help="rebuild even when the current version exists")

    def handle(self, *args, **opts):
        recipe = RECIPES[opts["recipe"] or settings.SEMANTIC_JUDGE_RECIPE]
        path = judge_train.ensure_artefact(settings.SEMANTIC_JUDGE_DIR, recipe=recipe, force=opts["force"],
                                           progress=lambda m: self.stdout.write(m))
        self.stdout.write(self.style.SUCCESS(f"judge {path.name} in {path}"))
