from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from caching.pairs import KINDS, PairFileError, read_pairs
from supportbot.evaluation import by_kind, evaluate, results_json, summary, sweep


class Command(BaseCommand):
    help = ("Run labelled question pairs through the real answer caches in an isolated scope and report "
            "paraphrase hit rate and false-hit rate.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="a .jsonl pair file (see ../shared/eval/README.md)")
        parser.add_argument("--json", dest="json_path", help="write per-pair results to this file")
        parser.add_argument("--sweep", action="store_true", help="add a threshold sweep")

    def handle(self, path, json_path=None, **opts):
        try:
            pairs = read_pairs(Path(path))
        except PairFileError as exc:
            raise CommandError(str(exc))
        if not pairs:
            raise CommandError(f"{path}: no pairs")
        results = evaluate(pairs)
        table = by_kind(results)
        self.stdout.write(f"{'kind':<12} {'pairs':>5} {'hits':>5} {'rate':>6}")
        for kind in [k for k in KINDS if k in table] + sorted(set(table) - set(KINDS)):
            row = table[kind]
            self.stdout.write(f"{kind:<12} {row['pairs']:>5} {row['hits']:>5} {row['hits'] / row['pairs']:>6.2f}")
        wrong = [r for r in results if r.served != r.should_hit]
        if wrong:
            self.stdout.write("\nmisjudged pairs:")
            for r in wrong:
                sim = f"{r.similarity:.3f}" if r.similarity is not None else "-"
                self.stdout.write(f"  {r.id} [{r.kind}] served={r.served} sim={sim}: {r.cached!r} -> {r.new!r} ({r.reason})")
        if json_path:
            Path(json_path).write_text(results_json(results))
        if opts.get("sweep"):
            self.stdout.write("\nthreshold sweep (same threshold for every intent, guards on):")
            for row in sweep(pairs, [round(0.5 + 0.05 * i, 2) for i in range(10)]):
                self.stdout.write(f"  t={row['threshold']:.2f} hit_rate={row['hit_rate']:.3f} "
                                  f"false_hit_rate={row['false_hit_rate']:.3f}")
        s = summary(results)
        self.stdout.write(f"paraphrase_hit_rate={s['paraphrase_hit_rate']:.3f} false_hit_rate={s['false_hit_rate']:.3f} "
                          f"pairs={s['pairs']} should_hit={s['should_hit']} should_not={s['should_not']}")
