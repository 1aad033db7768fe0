"""Chat sessions (issue 29, second security review): the database session store holds the customer's
pseudonym (``customer_ref``), never their id; sessions live ``CHAT_SESSION_TTL_S``; expired ones are
cleared by a scheduled job; erasing a customer deletes their sessions, pending questions and thread."""
from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.test import RequestFactory
from django.utils import timezone

from supportbot import callers, chat_thread, pipeline
from supportbot.auth import customer_token_issue

pytestmark = pytest.mark.django_db
CUSTOMER = "cust-quimby-4711"


def signed_in(tenant, customer=CUSTOMER):
    request = RequestFactory().post(f"/t/{tenant.slug}/sign-in", REMOTE_ADDR="10.9.9.9")
    SessionMiddleware(lambda r: None).process_request(request)
    admitted = callers.chat_sign_in(request, tenant, customer_token_issue(tenant, customer))
    assert isinstance(admitted, callers.Admitted)
    return request, admitted.asker


def stored(request) -> str:
    request.session.save()
    return json.dumps(Session.objects.get(session_key=request.session.session_key).get_decoded())


def test_the_session_store_holds_the_customer_ref_never_the_customer_id(acme):
    request, asker = signed_in(acme)
    callers.chat_pending_add(request, callers.chat_asker(request, "acme").asker, "Where is my parcel?")
    ref = pipeline.customer_ref(pipeline.Asker(acme, "en", CUSTOMER))
    data = stored(request)
    assert CUSTOMER not in data and ref in data
    # the records of the chat page carry the same reference as the API's, so export and erasure find them
    assert pipeline.customer_ref(asker) == ref
    taken, _ = callers.chat_pending_take(request, "acme", next(iter(request.session[callers.PENDING_KEY])))
    assert pipeline.customer_ref(taken) == ref


def test_sessions_live_the_chat_session_lifetime(acme, settings):
    assert settings.SESSION_COOKIE_AGE == settings.CHAT_SESSION_TTL_S <= 24 * 3600
    request, _ = signed_in(acme)
    request.session.save()
    row = Session.objects.get(session_key=request.session.session_key)
    assert row.expire_date <= timezone.now() + timedelta(seconds=settings.CHAT_SESSION_TTL_S + 5)


def test_expired_sessions_are_cleared_by_a_scheduled_job(acme):
    from supportbot.schedules import DEFAULT_SCHEDULES
    from supportbot.tasks import sessions_clear

    assert "supportbot.tasks.sessions_clear" in {s.task for s in DEFAULT_SCHEDULES}
    old, _ = signed_in(acme)
    old.session.save()
    Session.objects.filter(session_key=old.session.session_key).update(expire_date=timezone.now() - timedelta(1))
    live, _ = signed_in(acme, "someone-else")
    live.session.save()
    sessions_clear()
    assert not Session.objects.filter(session_key=old.session.session_key).exists()
    assert Session.objects.filter(session_key=live.session.session_key).exists()


def test_erasing_a_customer_deletes_their_sessions_pending_questions_and_thread(acme):
    request, asker = signed_in(acme)
    callers.chat_pending_add(request, asker, "Hello, this is Jane Quimbyfrost, where is my parcel?")
    outcome = type("Outcome", (), {"answer": "It is on its way.", "citations": []})()
    chat_thread.thread_record(request, asker, "Hello again, Jane Quimbyfrost here", outcome)
    other, _ = signed_in(acme, "someone-else")
    other.session.save()
    assert "Quimbyfrost" in stored(request)
    out = io.StringIO()
    call_command("customer_erase", "--tenant", "acme", "--customer", CUSTOMER, stdout=out)
    assert "chat_sessions=1" in out.getvalue()
    assert not Session.objects.filter(session_key=request.session.session_key).exists()
    assert Session.objects.filter(session_key=other.session.session_key).exists()
