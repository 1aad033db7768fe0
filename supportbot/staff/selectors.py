"""What the review and labelling cards show, read in a few queries."""
from __future__ import annotations

from datetime import timedelta

from caching import guards
from caching.models import CacheDecision, Feedback, ReviewItem, SampledHit, SemanticEntry
from caching.rollups import rollup_groups, tenant_lookup
from ingestion.models import Article
from supportbot.models import PrefixCacheSample
from supportbot.review import entry_of


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


# --------------------------------------------------------------------------- the model side

def cached_token_share_series(start, end, tenant_id=None, bucket="hour") -> list[tuple]:
    """[(bucket, prompt_tokens, cached_prompt_tokens)] of fresh model answers: the share of prompt
    *tokens* the model server found in its prefix cache (not the share of requests with any)."""
    groups = rollup_groups(start, end, by=("bucket", "layer"), tenant_id=tenant_id, bucket=bucket,
                           sums=("prompt_tokens", "cached_tokens"), layers=("generation",))
    return sorted((when, sums["prompt_tokens"], sums["cached_tokens"]) for (when, _), sums in groups.items())


def prefix_cache_series(start, end, bucket="hour") -> list[tuple]:
    """[(bucket, hit_rate, kv_usage)] over every scraped model server (``PrefixCacheSample``).

    The counters are cumulative per server: a bucket's hit rate is the increase of hits over the
    increase of queries between consecutive samples of each server (a decrease means the server
    restarted: that interval is skipped); KV-cache usage is the mean of the bucket's samples."""
    step = timedelta(days=1) if bucket == "day" else timedelta(hours=1)
    rows = (PrefixCacheSample.objects.filter(ok=True, scraped_at__gte=start - step, scraped_at__lt=end)
            .order_by("target", "scraped_at")
            .values_list("target", "scraped_at", "prefix_cache_queries", "prefix_cache_hits", "kv_cache_usage_perc"))
    acc: dict = {}
    previous: dict = {}
    for target, at, queries, hits, kv in rows:
        when = at.replace(minute=0, second=0, microsecond=0)
        if bucket == "day":
            when = when.replace(hour=0)
        before = previous.get(target)
        previous[target] = (queries, hits)
        if at < start:
            continue
        a = acc.setdefault(when, [0.0, 0.0, 0.0, 0])
        if kv is not None:
            a[2] += kv
            a[3] += 1
        if before is None or None in (queries, hits, before[0], before[1]):
            continue
        dq, dh = queries - before[0], hits - before[1]
        if dq >= 0 and dh >= 0:
            a[0] += dq
            a[1] += dh
    return sorted((when, (a[1] / a[0]) if a[0] else None, (a[2] / a[3]) if a[3] else None) for when, a in acc.items())


def prefix_cache_latest() -> list:
    """The newest sample of every model server (the fleet view as last scraped)."""
    return list(PrefixCacheSample.objects.order_by("target", "-scraped_at").distinct("target"))
