"""``manage.py calibrate PATH [PATH ...]``: per-intent precision and coverage by threshold from
pair files in the evalcache format (and, with ``--db``, the labelled pairs), and the lowest
threshold meeting the target precision. ``--apply`` makes the recommendations the thresholds
in force (new versions, audited). ``--judge TENANT``: the learned judge's precision and coverage by
probability from the tenant's staff labels; with ``--apply`` its recalibrated threshold."""
import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from caching import calibration
from modelbuild import judge_calibration
from caching.pairs import PairFileError
from core.models import Tenant


class Command(BaseCommand):
    help = "Recommend per-intent similarity thresholds from labelled question pairs."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*", help="pair files (evalcache format)")
        parser.add_argument("--db", action="store_true", help="also use the labelled pairs in the database")
        parser.add_argument("--target", type=float, default=None,
                            help=f"target precision (default {settings.CALIBRATION_TARGET_PRECISION})")
        parser.add_argument("--curve", action="store_true", help="print every threshold of the grid")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--apply", action="store_true", help="apply the recommendations as new versions")
        parser.add_argument("--judge", metavar="TENANT", help="the learned judge's curve for a tenant's staff labels")

    def handle(self, *args, **opts):
        if opts["judge"]:
            return self._judge(opts)
        pairs = []
        for path in opts["paths"]:
            try:
                file_pairs, crossed = calibration.pairs_from_file(path)
            except PairFileError as exc:
                raise CommandError(str(exc)) from None
            pairs += file_pairs
            if crossed:
                self.stderr.write(f"{path}: {crossed} pairs across tenants or locales left out")
        if opts["db"]:
            pairs += calibration.pairs_from_db()
        if not pairs:
            raise CommandError("no pairs: give a pair file or --db")
        target = settings.CALIBRATION_TARGET_PRECISION if opts["target"] is None else opts["target"]
        curves = calibration.calibrate(pairs, target=target)
        if opts["json"]:
            self.stdout.write(json.dumps({i: {
                "positives": c.positives, "negatives": c.negatives, "current": c.current,
                "recommended": c.recommended, "note": c.note,
                "points": [p.__dict__ for p in c.points]} for i, c in curves.items()}, indent=2))
        else:
            self._table(curves, target, len(pairs), opts["curve"])
        if opts["apply"]:
            for c in curves.values():
                if c.recommended is not None and c.recommended != c.current:
                    row = calibration.threshold_apply(c.intent, c.recommended, None,
                                                      note=f"manage.py calibrate, {len(pairs)} pairs, target {target}")
                    self.stdout.write(f"applied {c.intent} = {row.value:.2f} (v{row.version})")

    def _table(self, curves, target, n, full):
        self.stdout.write(f"{n} pairs, target precision {target:.3f}")
        self.stdout.write(f"{'intent':<14}{'pos':>5}{'neg':>5}{'now':>7}{'rec':>7}{'prec':>8}{'cover':>8}  note")
        for c in curves.values():
            p = c.at_recommended
            rec = f"{c.recommended:.2f}" if c.recommended is not None else "-"
            prec = f"{p.precision:.3f}" if p and p.precision is not None else "-"
            cover = f"{p.coverage:.3f}" if p and p.coverage is not None else "-"
            now = f"{c.current:.2f}" if c.current is not None else "-"
            self.stdout.write(f"{c.intent:<14}{c.positives:>5}{c.negatives:>5}{now:>7}{rec:>7}{prec:>8}{cover:>8}  {c.note}")
            if full:
                for pt in c.points:
                    pr = f"{pt.precision:.3f}" if pt.precision is not None else "-"
                    cv = f"{pt.coverage:.3f}" if pt.coverage is not None else "-"
                    self.stdout.write(f"    t={pt.threshold:.2f} served={pt.served:>4} correct={pt.correct:>4} "
                                      f"precision={pr} coverage={cv}")

    def _judge(self, opts):
        tenant = Tenant.objects.filter(slug=opts["judge"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {opts['judge']!r}")
        target = settings.CALIBRATION_TARGET_PRECISION if opts["target"] is None else opts["target"]
        version, pairs = judge_calibration.judge_pairs(tenant.pk)
        curve = judge_calibration.judge_curve(pairs, target)
        self.stdout.write(f"{tenant.slug}: {len(pairs)} staff labels of judge {version or '-'} "
                          f"({curve.positives} should-hit, {curve.negatives} should-not), target {target:.3f}")
        rec = f"{curve.recommended:.2f}" if curve.recommended is not None else "none"
        self.stdout.write(f"recommended {rec}  {curve.note}")
        if opts["curve"]:
            for pt in curve.points:
                if pt.served:
                    self.stdout.write(f"    t={pt.threshold:.2f} served={pt.served:>4} correct={pt.correct:>4} "
                                      f"precision={pt.precision:.3f} coverage={pt.coverage or 0:.3f}")
        if opts["apply"]:
            try:
                curve, row = judge_calibration.judge_recalibrate(tenant, None, target=target)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"applied judge threshold {row.value:.2f} (v{row.version})" if row else
                              f"not applied: {curve.note or 'unchanged'}")
