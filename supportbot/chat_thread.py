"""The chat page's thread: the conversation so far, kept server side in the Django session.

A follow-up on the chat page is sent to the pipeline with its thread (``conversation_with``), so
"how long does that take?" is resolved in its context (``supportbot.conversation``). The thread is
bounded (``CHAT_THREAD_MAX_MESSAGES``, the newest kept), belongs to one tenant, locale and
signed-in customer (another one starts afresh), expires with the session, is dropped when the
session signs in as someone, can be started over (``thread_clear``), and is erased with the
customer's data (``threads_erase``, called by ``supportbot.retention.customer_erase``).
"""
from __future__ import annotations

from django.conf import settings
from django.contrib.sessions.models import Session
from django.utils import timezone

from supportbot import auth
from supportbot.conversation import Conversation, Turn

THREAD_KEY = "chat_thread"


def _owner(asker) -> dict:
    return {"tenant": asker.tenant.slug, "locale": asker.locale, "customer": asker.customer}


def thread_turns(request, asker) -> list[dict]:
    """The session's turns for this asker (tenant, locale, customer), oldest first; [] for another one's."""
    thread = request.session.get(THREAD_KEY) or {}
    if {k: thread.get(k) for k in ("tenant", "locale", "customer")} != _owner(asker):
        return []
    return list(thread.get("turns", []))


def conversation_with(request, asker, question: str) -> Conversation:
    """The thread, then the new question: what the pipeline resolves."""
    turns = [Turn(t["role"], t["content"], tuple(t.get("cited", ()))) for t in thread_turns(request, asker)]
    return Conversation((*turns, Turn("user", question)))


def thread_record(request, asker, question: str, outcome, *, save: bool = False) -> None:
    """Add the question and its answer (with the titles it cited) to the thread, the newest
    ``CHAT_THREAD_MAX_MESSAGES`` kept, starting with a question. ``save``: write the session
    now (a streamed answer finishes after the response's session was saved)."""
    turns = thread_turns(request, asker) + [
        {"role": "user", "content": question},
        {"role": "assistant", "content": outcome.answer, "cited": [c["title"] for c in outcome.citations][:5]},
    ]
    turns = turns[-max(2, settings.CHAT_THREAD_MAX_MESSAGES):]
    if turns and turns[0]["role"] != "user":
        turns = turns[1:]
    request.session[THREAD_KEY] = {**_owner(asker), "turns": turns}
    if save:
        request.session.save()


def thread_clear(request) -> None:
    request.session.pop(THREAD_KEY, None)


def threads_erase(tenant, customer: str, ref: str = "") -> int:
    """Delete the live sessions signed in as this customer of this tenant (by id, or by ``ref``, the
    pseudonym sessions hold), threads and all (erasure): a scan of the unexpired sessions, for a job
    that runs on request, not on the Ask path."""
    names = {customer, ref} - {""}
    doomed = []
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        data = session.get_decoded()
        identity = (data.get(auth.SESSION_KEY) or {}).get(tenant.slug) or {}
        thread = data.get(THREAD_KEY) or {}
        if names & {identity.get("customer"), identity.get("ref")} or (thread.get("tenant") == tenant.slug
                                                                       and thread.get("customer") in names):
            doomed.append(session.session_key)
    return Session.objects.filter(session_key__in=doomed).delete()[0]
