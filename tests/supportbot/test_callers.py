"""Who asks on the chat page: ``callers.chat_asker``, ``chat_sign_in`` and ``chat_pending_take`` return an
``Admitted`` with its ``Asker`` or a ``Refusal``, before any view renders anything."""
import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.test import RequestFactory

from supportbot import callers
from supportbot.auth import customer_token_issue
from supportbot.callers import Admitted, Refusal
from supportbot.pipeline import Asker, customer_ref


@pytest.fixture
def limits(settings):
    settings.RATELIMIT_ENABLED = True
    settings.RATELIMIT_WINDOW_S = 3600
    settings.RATELIMIT_CLIENT_REQUESTS = 2
    settings.RATELIMIT_FEEDBACK_REQUESTS = 1
    settings.RATELIMIT_TENANT_REQUESTS = 100
    return settings


def chat_request(address="10.1.2.3", session=None):
    request = RequestFactory().post("/t/acme/ask", REMOTE_ADDR=address)
    if session is None:
        SessionMiddleware(lambda r: None).process_request(request)
    else:
        request.session = session
    return request


def test_an_anonymous_visitor_asks_in_the_locale_of_the_form(acme):
    admitted = callers.chat_asker(chat_request(), "acme", "de")
    assert isinstance(admitted, Admitted)
    assert (admitted.asker.tenant, admitted.asker.locale, admitted.asker.customer) == (acme, "de", None)
    assert callers.chat_asker(chat_request(), "acme").asker.locale == acme.default_locale


def test_refusals_unknown_tenant_and_unknown_locale(acme):
    unknown = callers.chat_asker(chat_request(), "nobody", "en")
    assert isinstance(unknown, Refusal) and (unknown.code, unknown.status, unknown.tenant) == ("unknown_tenant", 404, None)
    bad = callers.chat_asker(chat_request(), "acme", "fr")
    assert isinstance(bad, Refusal) and (bad.code, bad.status, bad.tenant) == ("unknown_locale", 400, acme)


def test_rate_limited_per_action_with_retry_after(acme, limits):
    request = chat_request("10.7.7.7")
    assert [isinstance(callers.chat_asker(request, "acme"), Admitted) for _ in range(2)] == [True, True]
    refused = callers.chat_asker(request, "acme")
    assert isinstance(refused, Refusal) and refused.status == 429 and refused.extra["scope"] == "client"
    assert 1 <= refused.retry_after_s <= 3600 and refused.tenant == acme
    # feedback counts apart: one allowed, then its own limit
    assert isinstance(callers.chat_asker(request, "acme", action="feedback"), Admitted)
    refused = callers.chat_asker(request, "acme", action="feedback")
    assert isinstance(refused, Refusal) and refused.extra["scope"] == "feedback"
    # another address is not limited
    assert isinstance(callers.chat_asker(chat_request("10.7.7.8"), "acme"), Admitted)


def test_a_signed_in_session_asks_as_its_customer_and_has_its_own_budget(acme, limits):
    request = chat_request("10.5.5.5")
    signed = callers.chat_sign_in(request, acme, customer_token_issue(acme, "cust-42"), "de")
    ref = customer_ref(Asker(acme, "en", "cust-42"))
    assert isinstance(signed, Admitted) and (signed.asker.customer, signed.asker.locale) == (ref, "de")
    same_session = chat_request("10.5.5.5", session=request.session)
    assert [callers.chat_asker(same_session, "acme").asker.customer for _ in range(2)] == [ref, ref]
    assert isinstance(callers.chat_asker(same_session, "acme"), Refusal)
    # the sign-in counted against the address, the questions against the customer: the address has one left
    assert isinstance(callers.chat_asker(chat_request("10.5.5.5"), "acme"), Admitted)


def test_a_bad_token_is_refused_and_signs_the_session_out(acme):
    request = chat_request()
    assert isinstance(callers.chat_sign_in(request, acme, customer_token_issue(acme, "cust-1")), Admitted)
    callers.chat_pending_add(request, callers.chat_asker(request, "acme").asker, "Where is my order?")
    refused = callers.chat_sign_in(request, acme, "v1.e30.AAAA")
    assert isinstance(refused, Refusal) and refused.status == 401 and refused.code == "invalid_customer_token"
    assert callers.chat_asker(request, "acme").asker.customer is None
    assert callers.PENDING_KEY not in request.session  # asked as cust-1: never streamed to whoever comes next


def test_a_pending_question_is_taken_once_by_its_own_session_and_tenant(acme, initech):
    request = chat_request()
    asker = callers.chat_asker(request, "acme", "de").asker
    ask_id = callers.chat_pending_add(request, asker, "Wie lange dauert der Versand?")
    for slug, other_id, session in (("initech", ask_id, request.session), ("acme", "not-an-id", request.session),
                                    ("acme", ask_id, chat_request().session), ("nobody", ask_id, request.session)):
        refused = callers.chat_pending_take(chat_request(session=session), slug, other_id)
        assert isinstance(refused, Refusal) and refused.status == 404, (slug, other_id)
    taken_asker, question = callers.chat_pending_take(request, "acme", ask_id)
    assert (taken_asker, question) == (asker, "Wie lange dauert der Versand?")
    assert isinstance(callers.chat_pending_take(request, "acme", ask_id), Refusal)  # once


def test_the_session_keeps_the_newest_pending_questions(acme):
    request = chat_request()
    asker = callers.chat_asker(request, "acme").asker
    ids = [callers.chat_pending_add(request, asker, f"question {n}") for n in range(callers.MAX_PENDING + 2)]
    assert list(request.session[callers.PENDING_KEY]) == ids[-callers.MAX_PENDING:]
