"""Reads behind the staff dashboard: hit rates, savings, wrong-hit and wrong-answer rates and the economics.

Everything is computed from ``HourlyRollup`` (plus the current hour live, see
``caching.rollups.rollup_groups``) and from labels, so a month of traffic is a few
grouped queries."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Avg, CharField, Count, F, Func, OuterRef, Q, Subquery, Value

from caching.admission import refusal_code
from caching.churn import churn_totals, redis_memory
from caching.layers import exact_layer, semantic_layer
from caching.models import ANSWER_LAYERS, CacheDecision, Label, PairVerification, ReasonCode, ReviewItem, SampledHit
from caching.rollups import GENERATION, rollup_groups, tenant_lookup

# The layers on the dashboard, in the order a request meets them, and what counts as a lookup.
LAYERS: tuple[str, ...] = ("exact", "semantic", "retrieval", "embedding", "prefix")
LAYER_TITLES = {"exact": "Exact answer cache", "semantic": "Semantic answer cache",
                "retrieval": "Search-result cache", "embedding": "Embedding cache",
                "prefix": "Model prefix cache"}
LOOKUP_DISPOSITIONS = frozenset({"hit", "miss", "shadow_hit", "assist"})
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Rate:
    """k of n, with a 95% Wilson score interval."""

    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """The Wilson score interval: sound for small n and for k = 0 or k = n, where the
    normal approximation collapses to a zero-width interval."""
    if n <= 0:
        return Rate(k, n, 0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # exact at the edges (floating point leaves 1 - 1e-16, which would sit below p = 1)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Rate(k, n, low, high)


# --------------------------------------------------------------------------- wrong-hit rates

def latest_sample_labels(start: datetime | None = None, end: datetime | None = None, tenant_id: int | None = None):
    """(stratum, intent, verdict, reason) of the newest label of every labelled sampled hit.

    Only sampled hits count: hits reviewed because a customer said "no" are a biased sample."""
    newest = Label.objects.filter(decision=OuterRef("decision")).order_by("-created_at")
    qs = SampledHit.objects.filter(labeled=True)
    if start is not None:
        qs = qs.filter(created_at__gte=start)
    if end is not None:
        qs = qs.filter(created_at__lt=end)
    qs = qs.filter(**tenant_lookup(tenant_id))
    return qs.annotate(verdict=Subquery(newest.values("verdict")[:1]),
                       reason=Subquery(newest.values("reason")[:1])).values_list("stratum", "intent", "verdict", "reason")


def wrong_hit_rates(start=None, end=None, tenant_id=None) -> dict:
    """{"by_layer": {stratum: Rate}, "by_intent": {(stratum, intent): Rate}} of wrong hits from sampled
    labels, and under "answers_by_layer" the rate of wrong answers (reason ``answer_wrong``: wrong for
    their own question) among the same labelled samples. A wrong answer is not a wrong hit: the hit
    was right to serve the entry, the entry was wrong."""
    counts: dict[tuple[str, str], list[int]] = {}
    for stratum, intent, verdict, reason in latest_sample_labels(start, end, tenant_id):
        if verdict is None:
            continue
        c = counts.setdefault((stratum, intent), [0, 0, 0])
        wrong = verdict == Label.Verdict.WRONG
        c[0] += wrong and reason != ReasonCode.ANSWER_WRONG
        c[1] += 1
        c[2] += wrong and reason == ReasonCode.ANSWER_WRONG
    by_layer: dict[str, list[int]] = {}
    for (stratum, _), (k, n, answers) in counts.items():
        acc = by_layer.setdefault(stratum, [0, 0, 0])
        acc[0] += k
        acc[1] += n
        acc[2] += answers
    return {"by_layer": {s: wilson(k, n) for s, (k, n, _) in by_layer.items()},
            "by_intent": {key: wilson(k, n) for key, (k, n, _) in sorted(counts.items())},
            "answers_by_layer": {s: wilson(a, n) for s, (_, n, a) in by_layer.items()}}


def wrong_answers_confirmed(start=None, end=None, tenant_id=None) -> dict[str, int]:
    """Answers staff confirmed wrong for their own question in review (every source: samples,
    customer "no" on cached and on fresh answers), by the layer that served them ("fresh": none)."""
    qs = ReviewItem.objects.filter(reason=ReasonCode.ANSWER_WRONG, status__in=[
        ReviewItem.Status.CONFIRMED_WRONG, ReviewItem.Status.CORRECTED])
    if start is not None:
        qs = qs.filter(resolved_at__gte=start)
    if end is not None:
        qs = qs.filter(resolved_at__lt=end)
    qs = qs.filter(**tenant_lookup(tenant_id))
    return dict(qs.values_list("layer").annotate(n=Count("pk")).values_list("layer", "n"))


# --------------------------------------------------------------------------- traffic and savings

def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def hit_rate_series(start, end, tenant_id=None, bucket="hour") -> dict:
    """Per layer: [(bucket, lookups, hits, shadow_hits)] sorted by time (buckets without lookups
    are absent); under ``"asks"``: [(bucket, asks)]."""
    groups = rollup_groups(start, end, by=("bucket", "layer", "disposition"), tenant_id=tenant_id, bucket=bucket,
                           sums=("count",), layers=LAYERS + ("eligibility",))
    per: dict[str, dict] = {layer: {} for layer in LAYERS}
    asks: dict = {}
    for (when, layer, disposition), sums in groups.items():
        if layer == "eligibility":  # one eligibility decision per Ask
            asks[when] = asks.get(when, 0) + sums["count"]
        if layer not in per or disposition not in LOOKUP_DISPOSITIONS:
            continue
        row = per[layer].setdefault(when, [0, 0, 0])
        row[0] += sums["count"]
        row[1] += sums["count"] if disposition == "hit" else 0
        row[2] += sums["count"] if disposition == "shadow_hit" else 0
    out = {layer: sorted((t, *v) for t, v in rows.items()) for layer, rows in per.items()}
    out["asks"] = sorted(asks.items())
    return out


def prices() -> dict:
    return {"currency": settings.PRICE_CURRENCY, "input": settings.PRICE_INPUT_PER_MTOK / 1e6,
            "cached_input": settings.PRICE_CACHED_INPUT_PER_MTOK / 1e6, "output": settings.PRICE_OUTPUT_PER_MTOK / 1e6,
            "lookup_ms": settings.PRICE_LOOKUP_PER_MS}


def model_cost(sums: dict, p: dict | None = None) -> float:
    """What the fresh answers summed in ``sums`` cost at the configured prices."""
    p = p or prices()
    cached = sums["cached_tokens"]
    return ((sums["prompt_tokens"] - cached) * p["input"] + cached * p["cached_input"]
            + sums["completion_tokens"] * p["output"])


def traffic(start, end, tenant_id=None) -> dict[tuple, dict]:
    """One grouped read of the range by (tenant, layer, disposition, intent): a few hundred rows
    from which the layer, intent and tenant tables below are all derived."""
    return rollup_groups(start, end, by=("tenant_id", "layer", "disposition", "intent"), tenant_id=tenant_id)


def _collapse(groups: dict[tuple, dict], keep: tuple[int, ...]) -> dict[tuple, dict]:
    """Sum the groups over the key positions not in ``keep``."""
    out: dict[tuple, dict] = {}
    for key, sums in groups.items():
        k = tuple(key[i] for i in keep)
        acc = out.get(k)
        out[k] = dict(sums) if acc is None else {f: acc[f] + sums[f] for f in sums}
    return out


def intent_table(start, end, tenant_id=None, groups=None) -> dict[str, dict]:
    """Per intent class: eligible asks, answer-cache hits, fresh answers and their cost."""
    groups = _collapse(groups if groups is not None else traffic(start, end, tenant_id), (1, 2, 3))
    table: dict[str, dict] = {}
    lookup_ms = eligible_total = 0

    def row(intent):
        return table.setdefault(intent, {"eligible": 0, "hits": {"exact": 0, "semantic": 0}, "shadow_hits": 0,
                                         "fresh": None})

    for (layer, disposition, intent), sums in groups.items():
        if layer == "eligibility" and disposition == "miss":  # eligible: the answer caches were consulted
            row(intent)["eligible"] += sums["count"]
            eligible_total += sums["count"]
        elif layer in ANSWER_LAYERS and disposition == "hit":
            row(intent)["hits"][layer] += sums["count"]
        elif layer == "semantic" and disposition == "shadow_hit":
            row(intent)["shadow_hits"] += sums["count"]
        elif layer == GENERATION:
            r = row(intent)
            r["fresh"] = sums if r["fresh"] is None else {f: r["fresh"][f] + sums[f] for f in sums}
        if layer in ANSWER_LAYERS:
            lookup_ms += sums["lookup_ms"]
    table.pop("", None)  # decisions without an intent (misses with no candidate)
    return {"intents": table, "lookup_ms_per_ask": lookup_ms / eligible_total if eligible_total else 0.0}


def layer_totals(start, end, tenant_id=None, groups=None) -> dict[str, dict]:
    """Per layer: lookups, hits, hit rate, shadow would-hit rate, recorded savings and lookup time."""
    groups = _collapse(groups if groups is not None else traffic(start, end, tenant_id), (1, 2))
    out = {layer: {"lookups": 0, "hits": 0, "shadow_hits": 0, "saved_tokens": 0, "saved_ms": 0.0,
                   "lookup_ms": 0.0, "bypass": 0, "skipped": 0} for layer in LAYERS}
    for (layer, disposition), sums in groups.items():
        if layer not in out:
            continue
        t = out[layer]
        if disposition in LOOKUP_DISPOSITIONS:
            t["lookups"] += sums["count"]
            t["lookup_ms"] += sums["lookup_ms"]
        if disposition == "hit":
            t["hits"] += sums["count"]
            t["saved_tokens"] += sums["saved_tokens"]
            t["saved_ms"] += sums["saved_ms"]
        elif disposition == "shadow_hit":
            t["shadow_hits"] += sums["count"]
        elif disposition in ("bypass", "skipped"):
            t[disposition] += sums["count"]
    for t in out.values():
        t["hit_rate"] = _rate(t["hits"], t["lookups"])
        t["shadow_rate"] = _rate(t["shadow_hits"], t["lookups"])
        t["avg_lookup_ms"] = t["lookup_ms"] / t["lookups"] if t["lookups"] else None
    return out


def wrong_answer_cost(intent: str) -> float:
    costs = settings.WRONG_ANSWER_COST
    return float(costs.get(intent, costs.get("default", 0.0)))


@dataclass
class Economics:
    intent: str
    eligible: int
    hits: int
    h: float | None
    c: float | None  # cost of a fresh answer
    l: float  # lookup cost per eligible ask
    f: Rate | None  # wrong-hit rate (sampled labels of both answer layers)
    w: float
    money_saved: float
    verdict: str
    detail: str


def economics(start, end, tenant_id=None, data: dict | None = None) -> list[Economics]:
    """Per intent class, does the answer cache pay: h·c > l + h·f·w?

    h: answer-cache hit rate among eligible asks; c: mean cost of a fresh answer of that
    intent (all intents' mean when it has none); l: mean lookup cost per eligible ask;
    f: wrong-hit rate from sampled labels (exact and semantic); w: cost of a wrong answer.
    The verdict is "pays" only if it holds at the upper end of f's 95% interval."""
    data = data or intent_table(start, end, tenant_id)
    p = prices()
    fresh_all = [r["fresh"] for r in data["intents"].values() if r["fresh"]]
    n_all = sum(f["count"] for f in fresh_all)
    c_all = sum(model_cost(f, p) for f in fresh_all) / n_all if n_all else None
    l = data["lookup_ms_per_ask"] * p["lookup_ms"]
    rates = wrong_hit_rates(start, end, tenant_id)["by_intent"]
    out = []
    for intent, r in sorted(data["intents"].items()):
        hits = r["hits"]["exact"] + r["hits"]["semantic"]
        h = _rate(hits, r["eligible"])
        c = model_cost(r["fresh"], p) / r["fresh"]["count"] if r["fresh"] else c_all
        k = sum(rates[(s, intent)].k for s in ANSWER_LAYERS if (s, intent) in rates)
        n = sum(rates[(s, intent)].n for s in ANSWER_LAYERS if (s, intent) in rates)
        f = wilson(k, n) if n else None
        w = wrong_answer_cost(intent)
        verdict, detail = _verdict(h, c, l, f, w)
        out.append(Economics(intent, r["eligible"], hits, h, c, l, f, w, hits * (c or 0.0), verdict, detail))
    return out


def _verdict(h, c, l, f: Rate | None, w) -> tuple[str, str]:
    if not h or c is None:
        return "no data", "no hits or no fresh answers in range"
    gain = h * c
    if f is None:
        if gain > l:
            return "needs labels", f"h·c = {gain:.6f} > l = {l:.6f}, but no labelled hits to estimate f"
        return "does not pay", f"h·c = {gain:.6f} ≤ l = {l:.6f} even with no wrong hits"
    worst, point = l + h * f.high * w, l + h * (f.value or 0.0) * w
    if gain > worst:
        return "pays", f"h·c = {gain:.6f} > l + h·f·w = {worst:.6f} at f's upper bound {f.high:.3%}"
    if gain > point:
        return "uncertain", (f"pays at f = {f.value:.3%} ({gain:.6f} > {point:.6f}) but not at its upper bound "
                             f"{f.high:.3%} ({worst:.6f}): label more hits")
    return "does not pay", f"h·c = {gain:.6f} ≤ l + h·f·w = {point:.6f}"


def money_saved(layers: dict[str, dict], econ: list[Economics], intents: dict[str, dict]) -> dict[str, float | None]:
    """Per layer, what its hits saved at the configured prices: answer-cache hits avoided a fresh
    answer of their intent (cost c); prefix-cache tokens were billed at the cached-input price."""
    p = prices()
    c_by_intent = {e.intent: e.c for e in econ}
    out: dict[str, float | None] = {layer: None for layer in LAYERS}
    for layer in ANSWER_LAYERS:
        out[layer] = sum(r["hits"][layer] * (c_by_intent.get(i) or 0.0) for i, r in intents.items())
    out["prefix"] = layers["prefix"]["saved_tokens"] * (p["input"] - p["cached_input"])
    return out


def admission_totals(start, end, tenant_id=None) -> dict:
    """Fresh answers offered to admission, the share admitted, and refusals by reason code
    ("polarity", "ungrounded_facts", "loop", ...), most frequent first."""
    rows = CacheDecision.objects.filter(layer="admission", created_at__gte=start, created_at__lt=end,
                                        **tenant_lookup(tenant_id))
    grouped = (rows.annotate(code=Func(F("reason"), Value(":"), Value(1), function="split_part",
                                      output_field=CharField()))
               .values("disposition", "code").annotate(n=Count("id")))
    stored, refused = 0, {}
    for row in grouped:
        if row["disposition"] == "stored":
            stored += row["n"]
        else:
            code = refusal_code(row["code"])
            refused[code] = refused.get(code, 0) + row["n"]
    offered = stored + sum(refused.values())
    return {"offered": offered, "stored": stored, "rate": _rate(stored, offered),
            "refused": sorted(refused.items(), key=lambda kv: (-kv[1], kv[0]))}


def incomplete_answers(start, end, tenant_id=None, limit: int = 20) -> dict:
    """Fresh answers refused as ``incomplete`` (they lacked the fact the question asked for, for the
    asked case: ``caching.answer_checks.completeness``), per tenant and per cited article, most first:
    an article that cannot answer a frequent question shows up here."""
    rows = CacheDecision.objects.filter(layer="admission", disposition="refused", reason__startswith="incomplete:",
                                        created_at__gte=start, created_at__lt=end, **tenant_lookup(tenant_id))
    by_tenant, by_article, titles = Counter(), Counter(), {}
    for slug, citations in rows.values_list("tenant__slug", "ask__citations").iterator():
        by_tenant[slug] += 1
        for cited in {c.get("article_id"): c for c in citations or []}.values():
            key = (slug, cited.get("article_id", ""))
            by_article[key] += 1
            titles[key] = cited.get("title", "")
    return {"total": sum(by_tenant.values()), "by_tenant": by_tenant.most_common(),
            "by_article": [{"tenant": slug, "article": article, "title": titles[(slug, article)], "answers": n}
                           for (slug, article), n in by_article.most_common(limit)]}


def dashboard(start, end, tenant_id=None, bucket="hour") -> dict:
    """Everything the dashboard shows, from two reads of the roll-ups (and labels). ``tenant_id``: one
    tenant, a collection of tenants (a staff user's, with per-tenant rows) or None for all."""
    groups = traffic(start, end, tenant_id)
    layers = layer_totals(start, end, tenant_id, groups=groups)
    table = intent_table(start, end, tenant_id, groups=groups)
    econ = economics(start, end, tenant_id, data=table)
    intents = table["intents"]
    return {
        "tenants": tenant_layer_rates(start, end, groups=groups) if not isinstance(tenant_id, int) else {},
        "layers": layers,
        "series": hit_rate_series(start, end, tenant_id, bucket),
        "wrong": wrong_hit_rates(start, end, tenant_id),
        "wrong_answers": wrong_answers_confirmed(start, end, tenant_id),
        "economics": econ,
        "money": money_saved(layers, econ, intents),
        "prices": prices(),
        "admission": admission_totals(start, end, tenant_id),
        "incomplete": incomplete_answers(start, end, tenant_id),
    }


def tenant_layer_rates(start, end, groups=None) -> dict[int, dict[str, dict]]:
    """Per tenant and layer: lookups, hits, hit rate and shadow would-hit rate."""
    groups = _collapse(groups if groups is not None else traffic(start, end), (0, 1, 2))
    out: dict[int, dict[str, dict]] = {}
    for (tenant_id, layer, disposition), sums in groups.items():
        if layer not in LAYERS or disposition not in LOOKUP_DISPOSITIONS:
            continue
        t = out.setdefault(tenant_id, {}).setdefault(layer, {"lookups": 0, "hits": 0, "shadow_hits": 0})
        t["lookups"] += sums["count"]
        t["hits"] += sums["count"] if disposition == "hit" else 0
        t["shadow_hits"] += sums["count"] if disposition == "shadow_hit" else 0
    for layers in out.values():
        for t in layers.values():
            t["hit_rate"] = _rate(t["hits"], t["lookups"])
            t["shadow_rate"] = _rate(t["shadow_hits"], t["lookups"])
    return out


# --------------------------------------------------------------------------- cache sizes and churn

def cache_sizes(start: datetime, end: datetime, tenants) -> dict:
    """Per tenant: live exact and semantic entries against their caps, and the entries evicted by a
    cap or expired in [start, end); with the cache Redis's own memory, policy and counters."""
    churn = churn_totals(start, end, [t.pk for t in tenants])
    rows = [{"tenant": t, "exact": exact_layer.stats(t.pk).entries, "semantic": semantic_layer.stats(t.pk).entries,
             **{f"{layer}_{kind}": churn.get((t.pk, layer, kind), 0)
                for layer in ANSWER_LAYERS for kind in ("evicted", "expired")}}
            for t in tenants]
    return {"rows": rows, "exact_cap": settings.EXACT_CACHE_MAX_KEYS_PER_TENANT,
            "semantic_cap": settings.SEMANTIC_CACHE_MAX_ENTRIES_PER_TENANT, "redis": redis_memory()}


# --------------------------------------------------------------------------- learned judge (issue 12)

ABSTAIN_PREFIX = "judge abstains"


def shadow_precision(start=None, end=None) -> dict[int, Rate]:
    """Per tenant: the precision of shadow would-hits, correct of labelled (sampled ones only), with
    its 95% interval: what serve mode would have served right, before anyone switches it on."""
    newest = Label.objects.filter(decision=OuterRef("decision")).order_by("-created_at").values("verdict")[:1]
    qs = SampledHit.objects.filter(labeled=True, stratum="shadow")
    if start is not None:
        qs = qs.filter(created_at__gte=start)
    if end is not None:
        qs = qs.filter(created_at__lt=end)
    counts: dict[int, list[int]] = {}
    for tenant_id, verdict in qs.annotate(verdict=Subquery(newest)).values_list("tenant_id", "verdict"):
        if verdict is None:
            continue
        c = counts.setdefault(tenant_id, [0, 0])
        c[0] += verdict == Label.Verdict.CORRECT
        c[1] += 1
    return {t: wilson(k, n) for t, (k, n) in counts.items()}


def serve_readiness(rate: Rate | None, target: float | None = None) -> tuple[str, str]:
    """Whether the shadow labels show the target precision (the lower end of the interval reaches it)."""
    target = settings.CALIBRATION_TARGET_PRECISION if target is None else target
    if rate is None or not rate.n:
        return "no labels", "label sampled shadow would-hits to measure what serving would do"
    if rate.low >= target:
        return "ready", f"precision ≥ {rate.low:.1%} (95% lower bound) meets the target {target:.1%}"
    if rate.value is not None and rate.value < target:
        return "not ready", f"precision {rate.value:.1%} is below the target {target:.1%}"
    return "needs labels", (f"precision {rate.value:.1%}, but its 95% lower bound {rate.low:.1%} is below the "
                            f"target {target:.1%}: label more")


def semantic_by_locale(start, end, tenant_id=None) -> list[dict]:
    """Per locale: semantic lookups, hits, shadow would-hits and lookups the judge abstained on (its
    reason says so, on a refusal, a strict-match hit or a shadow would-hit alike), read from the
    decisions: the roll-ups have no locale."""
    qs = CacheDecision.objects.filter(layer=CacheDecision.Layer.SEMANTIC, created_at__gte=start, created_at__lt=end,
                                      disposition__in=LOOKUP_DISPOSITIONS)
    qs = qs.filter(**tenant_lookup(tenant_id))
    rows = (qs.values("ask__locale").annotate(
        lookups=Count("id"), hits=Count("id", filter=Q(disposition="hit")),
        shadow_hits=Count("id", filter=Q(disposition="shadow_hit")),
        abstained=Count("id", filter=Q(reason__contains=ABSTAIN_PREFIX))).order_by("ask__locale"))
    return [{"locale": r["ask__locale"], "lookups": r["lookups"], "hits": r["hits"], "shadow_hits": r["shadow_hits"],
             "abstained": r["abstained"], "hit_rate": _rate(r["hits"], r["lookups"]),
             "shadow_rate": _rate(r["shadow_hits"], r["lookups"]),
             "abstain_rate": _rate(r["abstained"], r["lookups"])} for r in rows]


def near_miss_stats(start, end, tenant_id=None) -> dict:
    """The verifier's work in the range: near misses checked, by verdict, and its mean time."""
    qs = PairVerification.objects.filter(created_at__gte=start, created_at__lt=end)
    qs = qs.filter(**tenant_lookup(tenant_id))
    by = dict(qs.values_list("verdict").annotate(n=Count("id")).values_list("verdict", "n"))
    return {"by_verdict": by, "checked": sum(n for v, n in by.items() if v != "pending"),
            "mean_ms": qs.exclude(verdict="pending").aggregate(ms=Avg("verify_ms"))["ms"]}
