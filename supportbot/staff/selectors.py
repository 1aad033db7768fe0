"""What the review and labelling cards show, read in a few queries."""
from __future__ import annotations

from caching import guards
from caching.models import CacheDecision, Feedback, ReviewItem, SampledHit, SemanticEntry
from caching.review import entry_of
from caching.rollups import tenant_lookup
from ingestion.models import Article


def _citations_with_current(citations: list[dict]) -> list[dict]:
    pks = [int(c["article_pk"]) for c in citations if c.get("article_pk") is not None]
    current = {pk: (v, s) for pk, v, s in Article.objects.filter(pk__in=pks).values_list("pk", "version", "status")}
    out = []
    for c in citations:
        version, status = current.get(int(c.get("article_pk") or 0), (None, "deleted"))
        out.append(dict(c, current_version=version,
                        is_current=status == Article.Status.ACTIVE and version == c.get("version")))
    return out


def hit_details(decision: CacheDecision, entry: SemanticEntry | None) -> dict:
    """The new question, the cached one, what was (or would have been) served and why."""
    ask = decision.ask
    shadow = decision.disposition == CacheDecision.Disposition.SHADOW_HIT
    cached_question = decision.candidate_question or (entry.question if entry else "") or ask.question
    cached_answer = entry.answer if entry is not None else ask.answer
    citations = (entry.citations if entry is not None and shadow else ask.citations) or []
    cached_sig = (entry.signature if entry is not None and entry.signature else guards.signature(cached_question))
    return {
        "decision": decision, "ask": ask, "entry": entry, "shadow": shadow,
        "new_question": ask.question, "cached_question": cached_question,
        "served_answer": cached_answer if shadow else ask.answer,
        "fresh_answer": ask.answer if shadow else "",
        "citations": _citations_with_current(citations),
        "similarity": decision.similarity, "threshold": decision.threshold,
        "signatures": _signature_rows(cached_sig, guards.signature(ask.question)),
        "signature_difference": decision.signature_difference,
    }


def _signature_rows(cached: dict, new: dict) -> list[dict]:
    rows = []
    for field in sorted((set(cached) | set(new)) - {"version"}):
        a, b = cached.get(field) or [], new.get(field) or []
        if a or b:
            rows.append({"field": field, "cached": ", ".join(map(str, a)), "new": ", ".join(map(str, b)),
                         "differs": sorted(a) != sorted(b)})
    return rows


def review_card(item: ReviewItem) -> dict:
    decision = item.decision
    entry = item.entry or (entry_of(decision) if decision else None)
    details = hit_details(decision, entry) if decision else {"ask": item.ask, "new_question": item.ask.question}
    feedback = Feedback.objects.filter(ask_id=item.ask_id).first()
    decisions = list(CacheDecision.objects.filter(ask_id=item.ask_id).order_by("pk"))
    return dict(details, item=item, feedback=feedback, decisions=decisions)


def review_items(status: str = ReviewItem.Status.OPEN, source: str = "", tenant_id=None):
    """``tenant_id``: one tenant, a collection of tenants (a staff user's) or None for all."""
    qs = (ReviewItem.objects.select_related("decision__ask", "decision__tenant", "ask__tenant", "entry", "resolved_by")
          .filter(status=status, **tenant_lookup(tenant_id)))
    if source:
        qs = qs.filter(source=source)
    return qs.order_by("created_at", "pk")


def label_card(sample: SampledHit) -> dict:
    decision = sample.decision
    return dict(hit_details(decision, entry_of(decision)), sample=sample)
