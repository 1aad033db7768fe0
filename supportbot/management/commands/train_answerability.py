from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from supportbot.answerability import data, train
from supportbot.services import demo_dir


class Command(BaseCommand):
    help = ("Build the answerability model from the knowledge base folder's question sets and CLINC150's "
            "out-of-scope queries (supportbot/answerability/train.py); held-out data is never read.")

    def add_arguments(self, parser):
        parser.add_argument("--out", default=settings.ANSWERABILITY_MODEL, help="where to write the artefact")
        parser.add_argument("--clinc", type=int, default=200,
                            help="CLINC150 oos_train+oos_val queries asked of each tenant and locale (at most 200)")
        parser.add_argument("--keep-asked", help="also pickle the asked training questions here (features, labels; "
                                                 "to refit or calibrate again offline without asking them again)")

    def handle(self, **opts):
        root = demo_dir()
        with train.scratch_knowledge_base(root) as tenants:
            scopes = [(slug, locale) for slug, t in tenants.items() for locale in t.locales]
            questions = data.kb_questions(root) + data.clinc_oos(scopes, train_limit=opts["clinc"], test_limit=0)
            asked: list = []
            artefact = train.build(tenants, questions, log=self.stdout.write, asked=asked)
        if opts["keep_asked"]:
            import pickle

            for a in asked:
                a.rows  # computed while the database is here
            Path(opts["keep_asked"]).write_bytes(pickle.dumps(asked))
        train.write(artefact, Path(opts["out"]))
        t = artefact["training"]
        self.stdout.write(f"{artefact['version']}: {t['examples']} examples ({t['positives']} positive) from "
                          f"{t['questions']} questions in {t['seconds']}s; thresholds {artefact['thresholds']}")
        for locale, r in t["calibration_out_of_fold"].items():
            self.stdout.write(f"  {locale} (out of fold, training data): {r}")
