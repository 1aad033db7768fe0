"""Evaluating the answer caches on labelled question pairs (the ``evalcache`` format), and on
conversation pairs (rows with ``a``, ``b`` and ``same_answer``: ``a``'s last message is offered in
its conversation, ``b``'s is asked in its own; ``read_conversation_pairs``).

Each pair runs through the real pipeline in an isolated scope: scratch tenants
made for this run (deleted afterwards), one synthetic article per tenant and
locale to cite. ``cached`` is offered to the normal admission under ctx_cached
with a synthetic complete, cited answer; then ``new`` is looked up under
ctx_new exactly as a view would, and we record whether the stored answer was
served, by which layer, and why."""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from collections import defaultdict
from dataclasses import asdict, dataclass

from caching import guards
from caching.layers import exact_layer
from caching.models import SemanticEntry
from caching.pairs import PairFileError, jsonl_rows
from core.models import Tenant
from generation.base import Passage
from ingestion.models import Chunk
from ingestion.parsing import ParsedArticle
from ingestion.services import article_upsert
from retrieval.embeddings import embed_texts
from supportbot import pipeline
from supportbot.conversation import Conversation, messages_parse
from supportbot.questions import AskRejected

@dataclass
class PairResult:
    id: str
    kind: str
    should_hit: bool
    served: bool
    layer: str
    admitted: bool
    similarity: float | None
    threshold: float | None
    reason: str
    cached: str
    new: str
    length: str = ""  # conversation pairs: the new conversation's length bucket (``length_bucket``)
    resolved_cached: str = ""  # conversation pairs: how each last message was resolved, and into what
    resolved_new: str = ""


class Scope:
    """Scratch tenants for one evaluation run; every name in the pair file maps to one."""

    def __init__(self):
        self.run = uuid.uuid4().hex[:8]
        self.tenants: dict[str, Tenant] = {}
        self.passages: dict[tuple[str, str], tuple[Passage, int]] = {}

    def tenant(self, name: str, locale: str) -> Tenant:
        t = self.tenants.get(name)
        if t is None:
            t = Tenant.objects.create(slug=f"eval-{self.run}-{len(self.tenants)}", name=f"Eval {name}",
                                      locales=[], default_locale=locale,
                                      semantic_mode=Tenant.SemanticMode.SERVE)
            self.tenants[name] = t
        if locale not in t.locales:
            t.locales = [*t.locales, locale]
            t.save(update_fields=["locales"])
        if (name, locale) not in self.passages:
            article, _ = article_upsert(t, ParsedArticle(
                "evaluation-source", f"Evaluation source {name}", locale, "https://eval.example/source",
                "Synthetic help-centre text the synthetic answers cite."))
            chunk = Chunk.objects.filter(article=article, is_current=True).first()
            self.passages[(name, locale)] = (Passage(1, chunk.pk, article.external_id, article.title, article.url,
                                                     article.version, chunk.text, 1.0), article.pk)
        return t

    def asker(self, ctx: dict) -> pipeline.Asker:
        return pipeline.Asker(self.tenant(ctx["tenant"], ctx["locale"]), ctx["locale"], ctx.get("user"))

    def clear(self) -> None:
        """Forget every cached answer of the scratch tenants (pairs never see each other)."""
        entries = SemanticEntry.objects.filter(tenant__in=list(self.tenants.values()))
        exact_layer.delete_keys(list(entries.exclude(exact_key="").values_list("exact_key", flat=True)))
        entries.delete()

    def drop(self) -> None:
        self.clear()
        Tenant.objects.filter(pk__in=[t.pk for t in self.tenants.values()]).delete()


def evaluate_pair(scope: Scope, pair: dict) -> PairResult:
    scope.clear()
    cached_asker = scope.asker(pair["ctx_cached"])
    passage, article_pk = scope.passages[(pair["ctx_cached"]["tenant"], pair["ctx_cached"]["locale"])]
    answer = f"Synthetic verified answer to: {pair['cached']} [1]"
    # a placeholder answer: the evaluation measures the lookup, so admission's content checks stay out
    offered = pipeline.offer_answer(cached_asker, pair["cached"], answer, [passage], {passage.chunk_id: article_pk},
                                    checks=False)
    new_asker = scope.asker(pair["ctx_new"])
    state = pipeline.start(new_asker, pair["new"], streamed=False)
    served = pipeline.lookup(state)
    pipeline.record(state)
    semantic = next((d for d in state.layers if d.layer == "semantic"), None)
    hit = served is not None and served.answer == answer
    reason = state.reason if hit else pipeline.cache_reason(state)
    return PairResult(
        id=pair["id"], kind=pair["kind"], should_hit=bool(pair["should_hit"]), served=hit,
        layer=state.layer if hit else "none", admitted=offered.admitted,
        similarity=semantic.similarity if semantic else None, threshold=semantic.threshold if semantic else None,
        reason=reason, cached=pair["cached"], new=pair["new"],
    )


def evaluate(pairs: list[dict]) -> list[PairResult]:
    scope = Scope()
    try:
        return [evaluate_conversation_pair(scope, p) if "a" in p else evaluate_pair(scope, p) for p in pairs]
    finally:
        scope.drop()


# --------------------------------------------------------------------------- conversation pairs

CONVERSATION_REQUIRED = ("id", "subtype", "same_answer", "a", "b")


def is_conversation_file(path: Path) -> bool:
    """Whether a pair file holds conversation pairs (its first row has ``a`` and ``b``)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    return isinstance(row, dict) and "a" in row and "b" in row
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return False


def read_conversation_pairs(path: Path, *, tenant: str | None = None) -> list[dict]:
    """Conversation pairs, each conversation validated like an API request's ``messages``; the
    file is one tenant (named after the file unless ``tenant``), locale ``en``, no user. A file
    that does not fit is refused whole with the line at fault (``PairFileError``)."""
    tenant = tenant or Path(path).stem
    pairs = []
    for n, row in jsonl_rows(path):
        missing = [k for k in CONVERSATION_REQUIRED if k not in row] if isinstance(row, dict) else ["a", "b"]
        if missing:
            raise PairFileError(f"{path}:{n}: missing {', '.join(missing)}")
        try:
            a, b = messages_parse(row["a"]), messages_parse(row["b"])
        except AskRejected as exc:
            raise PairFileError(f"{path}:{n}: {exc.code}: {exc.message}") from None
        ctx = row.get("ctx") or {"tenant": tenant, "locale": "en", "user": None}
        pairs.append({"id": row["id"], "kind": row["subtype"], "should_hit": bool(row["same_answer"]),
                      "a": a, "b": b, "ctx_cached": ctx, "ctx_new": ctx})
    return pairs


def length_bucket(conversation: Conversation) -> str:
    n = len(conversation.turns)
    return "1" if n == 1 else "2-4" if n <= 4 else "5-8" if n <= 8 else "9-20" if n <= 20 else "21+"


def evaluate_conversation_pair(scope: Scope, pair: dict) -> PairResult:
    """As ``evaluate_pair``, with conversations: ``a`` offered in its conversation, ``b`` asked
    in its own, each resolved as the Ask path resolves it."""
    scope.clear()
    cached_asker = scope.asker(pair["ctx_cached"])
    passage, article_pk = scope.passages[(pair["ctx_cached"]["tenant"], pair["ctx_cached"]["locale"])]
    a, b = pair["a"], pair["b"]
    answer = f"Synthetic verified answer to: {a.message} ({pair['id']}) [1]"
    offered = pipeline.offer_answer(cached_asker, a, answer, [passage], {passage.chunk_id: article_pk},
                                    checks=False)
    state = pipeline.start(scope.asker(pair["ctx_new"]), b, streamed=False)
    served = None if state.resolution.clarify else pipeline.lookup(state)
    if state.resolution.clarify:
        pipeline.clarify(state)
    pipeline.record(state)
    semantic = next((d for d in state.layers if d.layer == "semantic"), None)
    hit = served is not None and served.answer == answer
    ra, rb = offered.resolution, state.resolution
    return PairResult(
        id=pair["id"], kind=pair["kind"], should_hit=pair["should_hit"], served=hit,
        layer=state.layer if hit else "none", admitted=offered.admitted,
        similarity=semantic.similarity if semantic else None, threshold=semantic.threshold if semantic else None,
        reason=state.reason if hit else pipeline.cache_reason(state), cached=a.message, new=b.message,
        length=length_bucket(b), resolved_cached=f"{ra.how}: {ra.question}", resolved_new=f"{rb.how}: {rb.question}",
    )


def summary(results: list[PairResult]) -> dict:
    should = [r for r in results if r.should_hit]
    should_not = [r for r in results if not r.should_hit]
    return {
        "paraphrase_hit_rate": sum(r.served for r in should) / len(should) if should else 0.0,
        "false_hit_rate": sum(r.served for r in should_not) / len(should_not) if should_not else 0.0,
        "pairs": len(results), "should_hit": len(should), "should_not": len(should_not),
    }


def by_kind(results: list[PairResult], field: str = "kind") -> dict[str, dict]:
    table: dict[str, dict] = defaultdict(lambda: {"pairs": 0, "hits": 0, "should_hit": 0})
    for r in results:
        row = table[getattr(r, field)]
        row["pairs"] += 1
        row["hits"] += int(r.served)
        row["should_hit"] += int(r.should_hit)
    return dict(table)


def sweep(pairs: list[dict], thresholds: list[float]) -> list[dict]:
    """Hit and false-hit rates with one threshold for every intent (guards unchanged)."""
    texts = sorted({p["cached"] for p in pairs} | {p["new"] for p in pairs})
    vectors = dict(zip(texts, embed_texts(texts)))
    rows = []
    for t in thresholds:
        hits = false_hits = 0
        for p in pairs:
            same_scope = p["ctx_cached"]["tenant"] == p["ctx_new"]["tenant"] and \
                p["ctx_cached"]["locale"] == p["ctx_new"]["locale"]
            sim = float(vectors[p["cached"]] @ vectors[p["new"]])
            served = same_scope and guards.judge(p["new"], p["cached"], sim,
                                                 thresholds={i: t for i in guards.INTENT_CLASSES}).serve
            if served and p["should_hit"]:
                hits += 1
            elif served:
                false_hits += 1
        n_hit = sum(1 for p in pairs if p["should_hit"]) or 1
        n_not = sum(1 for p in pairs if not p["should_hit"]) or 1
        rows.append({"threshold": t, "hit_rate": hits / n_hit, "false_hit_rate": false_hits / n_not})
    return rows


def results_json(results: list[PairResult]) -> str:
    return json.dumps([asdict(r) for r in results], indent=2, ensure_ascii=False)
