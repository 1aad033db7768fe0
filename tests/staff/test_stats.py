"""Wilson intervals, wrong-hit rates from labels, hourly roll-ups and the dashboard."""
from datetime import timedelta

import pytest
from django.utils import timezone

from caching import stats
from caching.models import AskEvent, CacheDecision, HourlyRollup, SampledHit
from caching.rollups import floor_hour, rollup_groups, rollup_hours
from supportbot import pipeline, review
from tests.caching.helpers import cached_lookup
from tests.staff.conftest import served_hit

RETURN_Q = "How do I return an item?"


@pytest.mark.parametrize("k,n,low,high", [
    (0, 10, 0.0, 0.27753),
    (5, 10, 0.23659, 0.76341),
    (10, 10, 0.72247, 1.0),
    (1, 100, 0.00177, 0.05449),
    (30, 1000, 0.02108, 0.04254),
])
def test_wilson_interval_matches_reference_values(k, n, low, high):
    r = stats.wilson(k, n)
    assert (r.low, r.high) == (pytest.approx(low, abs=5e-5), pytest.approx(high, abs=5e-5))
    assert r.low <= (r.value or 0) <= r.high


def test_wilson_without_data_is_the_whole_range():
    r = stats.wilson(0, 0)
    assert (r.value, r.low, r.high) == (None, 0.0, 1.0)


def test_economics_verdicts():
    l, w, h, c = 0.0001, 2.0, 0.5, 0.01
    assert stats._verdict(h, c, l, stats.wilson(0, 5000), w)[0] == "pays"
    assert stats._verdict(h, c, l, stats.wilson(0, 50), w)[0] == "uncertain"  # fine at f=0, not at its upper bound
    assert stats._verdict(h, c, l, stats.wilson(50, 100), w)[0] == "does not pay"
    assert stats._verdict(h, c, l, None, w)[0] == "needs labels"
    assert stats._verdict(0.0, c, l, None, w)[0] == "no data"


def _shift(asks, hours: int):
    """Move the Asks and their decisions back in time."""
    when = timezone.now() - timedelta(hours=hours)
    AskEvent.objects.filter(pk__in=[a.pk for a in asks]).update(created_at=when)
    CacheDecision.objects.filter(ask__in=asks).update(created_at=when)


def test_rollup_is_idempotent_and_the_dashboard_adds_the_live_hour(acme, sample_nothing):
    ask, _, offered = served_hit(acme, RETURN_Q, RETURN_Q)
    _shift(list(AskEvent.objects.all()), 3)
    first = rollup_hours(since=timezone.now() - timedelta(hours=6))
    snapshot = sorted(HourlyRollup.objects.values_list("layer", "disposition", "intent", "count"))
    assert first == len(snapshot)
    assert ("exact", "hit", ask.intent, 1) in snapshot
    assert ("generation", "answered", ask.intent, 1) in snapshot  # the offered fresh answer
    assert rollup_hours(since=timezone.now() - timedelta(hours=6)) == first
    assert rollup_hours() == first  # default: from the last rolled-up hour
    assert sorted(HourlyRollup.objects.values_list("layer", "disposition", "intent", "count")) == snapshot

    # one more hit now: read live, not rolled up yet
    cached_lookup(pipeline.Asker(acme, "en", None), RETURN_Q)
    start, end = floor_hour(timezone.now()) - timedelta(hours=24), floor_hour(timezone.now()) + timedelta(hours=1)
    totals = stats.layer_totals(start, end, acme.pk)
    assert (totals["exact"]["hits"], totals["exact"]["lookups"], totals["exact"]["hit_rate"]) == (2, 2, 1.0)
    series = stats.hit_rate_series(start, end, acme.pk, "hour")
    assert [(n, h) for _, n, h, _ in series["exact"]] == [(1, 1), (1, 1)]  # three hours ago, and now
    assert sum(n for _, n in series["asks"]) == 3
    assert rollup_hours() == first  # the current hour is never rolled up while it fills
    by_day = rollup_groups(start, end, by=("bucket", "layer", "disposition"), tenant_id=acme.pk, bucket="day")
    assert sum(v["count"] for (_, layer, d), v in by_day.items() if (layer, d) == ("exact", "hit")) == 2


def test_wrong_hit_rate_counts_the_newest_label_of_sampled_hits_only(acme, agent, sample_everything, settings):
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    review.label_sample(SampledHit.objects.get(decision=decision), "wrong", "stale_source", agent)
    rates = stats.wrong_hit_rates(tenant_id=acme.pk)
    assert (rates["by_layer"]["exact"].k, rates["by_layer"]["exact"].n) == (1, 1)
    # review says it was fine after all: the newest label wins
    item = review.review_open(decision, "sample")
    review.review_dismiss(item, agent)
    rates = stats.wrong_hit_rates(tenant_id=acme.pk)
    assert (rates["by_layer"]["exact"].k, rates["by_layer"]["exact"].n) == (0, 1)
    # a hit reviewed only because a customer complained is not a sample: it does not count
    settings.SAMPLE_RATES = {}
    ask2, decision2, _ = served_hit(acme, "How long does shipping take?", "How long does shipping take?")
    review.review_confirm_wrong(review.feedback_record(ask2, False)[1], "other", agent)
    assert stats.wrong_hit_rates(tenant_id=acme.pk)["by_layer"]["exact"].n == 1


def test_dashboard_page_shows_rates_savings_charts_and_economics(client, agent, acme, sample_everything):
    _, decision, _ = served_hit(acme, RETURN_Q, RETURN_Q)
    cached_lookup(pipeline.Asker(acme, "en", None), "Do you sell gift cards?")  # a miss
    review.label_sample(SampledHit.objects.get(decision=decision), "wrong", "entity", agent)
    client.force_login(agent)
    response = client.get("/admin/ask/", {"range": "24h", "tenant": acme.slug})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("<svg class=\"chart\"") == 3  # hit rate by layer, asks, the model side
    assert "exact hit rate" in html and ("<polyline" in html or "<circle" in html)
    exact_row = html.split('data-layer="exact"')[1].split("</tr>")[0]
    assert "50.0%" in exact_row  # 1 hit of 2 lookups
    assert "100.0% [20.7–100.0%] (1/1)" in exact_row  # wrong-hit rate with its 95% interval
    assert 'id="economics-table"' in html and f'data-intent="{decision.intent}"' in html
    # every tenant, by day, over a custom range
    today = timezone.localdate()
    response = client.get("/admin/ask/", {"range": "custom", "start": str(today - timedelta(days=30)),
                                          "end": str(today), "bucket": "day"})
    assert response.status_code == 200
    tenant_row = response.content.decode().split('id="tenant-table"')[1].split(f">{acme.slug}</a>")[1].split("</tr>")[0]
    assert "50.0%" in tenant_row  # acme's exact hit rate
