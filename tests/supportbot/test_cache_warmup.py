"""Warm-up after a bump: a policy bump makes every cached answer unreachable; the warm-up job
answers the tenant's most-asked questions again through the usual path and admission, rate-limited,
as a job run, and they are hits again."""
from __future__ import annotations

import time

import pytest

from core.models import JobRun, Tenant
from supportbot import cache_warmup, pipeline
from supportbot.schedules import DEFAULT_SCHEDULES

QUESTIONS = ["What is your return policy?", "How do I reset my password?", "How long does shipping take?"]


def served_from_cache(tenant, question: str) -> bool:
    state = pipeline.start(pipeline.Asker(tenant, "en"), question, streamed=False)
    return pipeline.lookup(state) is not None


def test_after_a_policy_bump_the_warmup_reanswers_the_top_questions(acme):
    for i, q in enumerate(QUESTIONS):
        for _ in range(i + 1):
            pipeline.ask(pipeline.Asker(acme, "en"), q)
    assert [q for _, q in cache_warmup.top_questions(acme, 2, 7)] == [QUESTIONS[2], QUESTIONS[1]]
    cached = [q for q in QUESTIONS if served_from_cache(acme, q)]
    assert cached, "the extractive answers were admitted before the bump"
    assert cache_warmup.warmup_due() == []  # the first call records the baseline

    acme.policy_version += 1
    acme.save(update_fields=["policy_version"])
    acme = Tenant.objects.get(pk=acme.pk)
    assert not any(served_from_cache(acme, q) for q in QUESTIONS)
    assert cache_warmup.warmup_due() == [acme.pk]

    started = time.monotonic()
    run = cache_warmup.warmup_run([acme.pk], per_second=4.0)
    elapsed = time.monotonic() - started
    assert run.status == JobRun.Status.SUCCEEDED and run.job == "cache_warmup"
    assert run.scanned == 3 and run.detail["admitted"] == len(cached) and run.progress_done == 3
    assert elapsed >= 2 / 4.0  # three asks at four a second: at least two gaps
    assert [q for q in QUESTIONS if served_from_cache(acme, q)] == cached
    assert cache_warmup.warmup_due() == []  # warmed for this fingerprint


def test_personal_and_signed_in_questions_are_never_warmed(acme):
    pipeline.ask(pipeline.Asker(acme, "en", customer="cust-1"), QUESTIONS[0])
    assert cache_warmup.top_questions(acme, 10, 7) == []


def test_beat_checks_every_five_minutes():
    schedule = next(s for s in DEFAULT_SCHEDULES if s.task == "supportbot.tasks.cache_warmup")
    assert schedule.crontab == {"minute": "*/5"}
