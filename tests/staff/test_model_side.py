"""The dashboard's model side: cached-token share as a share of prompt tokens, and the model
servers' prefix-cache hit rate and KV-cache usage from the hourly ``/metrics`` samples."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from caching.rollups import floor_hour
from core.models import Tenant
from supportbot import pipeline
from supportbot.models import PrefixCacheSample
from supportbot.staff import selectors
from tests.caching.helpers import scripted_model
from tests.supportbot.test_metrics import answer_with_usage


def sample(target: str, at, queries, hits, kv, ok=True):
    s = PrefixCacheSample.objects.create(target=target, ok=ok, prefix_cache_queries=queries,
                                         prefix_cache_hits=hits, kv_cache_usage_perc=kv)
    PrefixCacheSample.objects.filter(pk=s.pk).update(scraped_at=at)  # auto_now_add: set afterwards


def test_cached_token_share_is_a_share_of_prompt_tokens(acme):
    acme.semantic_mode = Tenant.SemanticMode.OFF
    acme.save(update_fields=["semantic_mode"])
    asker = pipeline.Asker(acme, "en")
    with scripted_model(answer_with_usage("Unused items can be returned within 30 days [1].", 900, 600),
                        answer_with_usage("Shipping is free from 50 euros [1].", 100, 0)):
        pipeline.ask(asker, "What is your return policy?")
        pipeline.ask(asker, "How much is shipping?")
    now = timezone.now()
    rows = selectors.cached_token_share_series(floor_hour(now), floor_hour(now) + timedelta(hours=1), acme.pk)
    assert rows == [(floor_hour(now), 1000, 600)]  # 60 % of tokens, though only half of the requests hit


def test_prefix_cache_hit_rate_from_counter_increases_and_restarts(db):
    hour = floor_hour(timezone.now()) - timedelta(hours=3)
    sample("http://a:8000", hour + timedelta(minutes=1), 1000, 500, 0.2)
    sample("http://a:8000", hour + timedelta(hours=1, minutes=1), 2000, 1300, 0.4)  # +1000 queries, +800 hits
    sample("http://b:8000", hour + timedelta(minutes=2), 400, 0, 0.1)
    sample("http://b:8000", hour + timedelta(hours=1, minutes=2), 1400, 200, 0.6)  # +1000, +200
    sample("http://b:8000", hour + timedelta(hours=2, minutes=2), 100, 90, 0.5)  # restarted: no rate
    sample("http://b:8000", hour + timedelta(hours=2, minutes=30), None, None, None, ok=False)
    series = selectors.prefix_cache_series(hour, hour + timedelta(hours=3))
    assert series[0] == (hour, None, pytest.approx(0.15))
    assert series[1] == (hour + timedelta(hours=1), pytest.approx(0.5), pytest.approx(0.5))  # 1000/2000 tokens
    assert series[2] == (hour + timedelta(hours=2), None, pytest.approx(0.5))
    latest = {s.target: s for s in selectors.prefix_cache_latest()}
    assert latest["http://a:8000"].hit_rate == pytest.approx(0.65) and latest["http://b:8000"].hit_rate is None


def test_the_dashboard_shows_the_model_side(client, agent, acme):
    sample("http://vllm-0:8000", floor_hour(timezone.now()) - timedelta(hours=2), 1000, 250, 0.3)
    sample("http://vllm-0:8000", floor_hour(timezone.now()) - timedelta(hours=1), 2000, 1000, 0.35)
    client.force_login(agent)
    html = client.get("/admin/ask/", {"range": "24h"}).content.decode()
    assert "The model side" in html and "cached-token share" in html
    assert "prefix-cache hit rate (model servers)" in html and "KV-cache usage (model servers)" in html
    row = html.split('id="model-servers"')[1].split("</tr>")[1]
    assert "http://vllm-0:8000" in row and "50.0%" in row and "35.0%" in row
