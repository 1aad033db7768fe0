from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from caching.pairs import KINDS, PairFileError, read_pairs
from supportbot.evaluation import (
    by_kind, evaluate, is_conversation_file, read_conversation_pairs, results_json, summary, sweep,
)

CONVERSATION_KINDS = ("context_swap", "detail_swap", "intent_flip", "same_context_reworded", "irrelevant_history",
                      "same_context_extra_chatter")


class Command(BaseCommand):
    help = ("Run labelled question pairs through the real answer caches in an isolated scope and report "
            "paraphrase hit rate and false-hit rate.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="a .jsonl file of question pairs or of conversation pairs "
                            "(rows with a, b, same_answer; see docs/conversations.md)")
        parser.add_argument("--json", dest="json_path", help="write per-pair results to this file")
        parser.add_argument("--sweep", action="store_true", help="add a threshold sweep")

    def handle(self, path, json_path=None, **opts):
        conversations = is_conversation_file(Path(path))
        try:
            pairs = read_conversation_pairs(Path(path)) if conversations else read_pairs(Path(path))
        except PairFileError as exc:
            raise CommandError(str(exc))
        if not pairs:
            raise CommandError(f"{path}: no pairs")
        results = evaluate(pairs)
        table = by_kind(results)
        kinds = CONVERSATION_KINDS if conversations else KINDS
        width = max(12, *(len(k) for k in table))
        self.stdout.write(f"{'kind':<{width}} {'pairs':>5} {'hits':>5} {'rate':>6}")
        for kind in [k for k in kinds if k in table] + sorted(set(table) - set(kinds)):
            row = table[kind]
            self.stdout.write(f"{kind:<{width}} {row['pairs']:>5} {row['hits']:>5} {row['hits'] / row['pairs']:>6.2f}")
        if conversations:
            self.stdout.write(f"\n{'length':<{width}} {'pairs':>5} {'hits':>5} {'wrong':>5}")
            for length, row in sorted(by_kind(results, "length").items()):
                wrong_hits = sum(1 for r in results if r.length == length and r.served and not r.should_hit)
                self.stdout.write(f"{length:<{width}} {row['pairs']:>5} {row['hits']:>5} {wrong_hits:>5}")
        wrong = [r for r in results if r.served != r.should_hit]
        if wrong:
            self.stdout.write("\nmisjudged pairs:")
            for r in wrong:
                sim = f"{r.similarity:.3f}" if r.similarity is not None else "-"
                self.stdout.write(f"  {r.id} [{r.kind}] served={r.served} sim={sim}: {r.cached!r} -> {r.new!r} ({r.reason})")
                if conversations and opts["verbosity"] > 1:
                    self.stdout.write(f"      a: {r.resolved_cached[:200]!r}\n      b: {r.resolved_new[:200]!r}")
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
