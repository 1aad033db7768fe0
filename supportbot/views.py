"""Customer-facing views: the chat page (htmx, streamed answers) and the JSON Ask API.

Views parse and validate, resolve who is asking with one service call (``supportbot.callers``:
an ``Admitted`` with its ``Asker``, or a ``Refusal``), call the pipeline, and render; nothing else."""
from __future__ import annotations

import contextlib
import itertools
import json
import logging
import time
import uuid

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.http import FileResponse, Http404, HttpResponse, HttpResponseRedirect, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.html import escape
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from caching.models import AskEvent
from core.models import Tenant
from supportbot import auth, callers, chat_thread, pipeline, serving
from supportbot.callers import Refusal, locale_for
from supportbot.conversation import conversation_parse
from supportbot.inflight import InFlightRefused
from supportbot.questions import AskRejected, clean_question
from supportbot.review import feedback_record
from supportbot.selectors import tenant_directory_get

log = logging.getLogger(__name__)


def _tenant(slug: str) -> Tenant:
    entry = tenant_directory_get(slug)
    if entry is None:
        raise Http404("unknown tenant")
    return entry.tenant


def _api_error(code: str, message: str, status: int, **extra) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status)


def _refused(refusal: Refusal) -> JsonResponse:
    """An API refusal as JSON (``{"error": {"code", "message", ...}}``), with Retry-After on a 429."""
    response = _api_error(refusal.code, refusal.message, refusal.status, **refusal.extra)
    if refusal.retry_after_s is not None:
        response["Retry-After"] = str(refusal.retry_after_s)
    return response


def _inflight_refused(exc: InFlightRefused) -> JsonResponse:
    """Too many asks in flight: a 429 with Retry-After, as a rate limit's."""
    return _refused(Refusal(exc.code, exc.message, exc.status, {"scope": exc.scope, "retry_after_s": exc.retry_after_s},
                            exc.retry_after_s))


def _chat_refused(request, refusal: Refusal) -> HttpResponse:
    """A chat refusal: 404 for an unknown tenant or question; a 429 with Retry-After; anything else
    is bad input. The form's error comes as an htmx partial (422 for bad input) or the tenant's page."""
    if refusal.status == 404 or refusal.tenant is None:
        raise Http404(refusal.message)
    limited = refusal.retry_after_s is not None
    if request.htmx:
        response = render(request, "supportbot/partials/form_error.html", {"message": refusal.message},
                          status=429 if limited else 422)
    else:
        response = _chat_error_page(request, refusal.tenant, refusal.tenant.default_locale, refusal.message,
                                    429 if limited else 400)
    if limited:
        response["Retry-After"] = str(refusal.retry_after_s)
    return response


def _chat_error_page(request, t: Tenant, locale: str, message: str, status: int) -> HttpResponse:
    return render(request, "supportbot/chat.html", {"tenant": t, "locale": locale, "error": message,
                                                    "max_chars": settings.ASK_MAX_QUESTION_CHARS}, status=status)


def _sse_response(events) -> StreamingHttpResponse:
    response = StreamingHttpResponse(events, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # proxies must pass each event on at once
    return response


def _sse(event: str, data: str) -> str:
    lines = data.split("\n") or [""]
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


# --------------------------------------------------------------------------- chat page

@require_GET
def chat_page(request, tenant: str):
    t = _tenant(tenant)
    locale = callers.locale_or_default(t, request.GET.get("locale"))
    if "customer_token" in request.GET:
        # A link must never sign a browser in (anyone could sign a victim in as themselves), and an
        # address ends up in logs and Referer headers: refused, the session untouched.
        response = _chat_error_page(
            request, t, locale,
            "Customer tokens are not accepted in the address; the shop's page posts them to sign you in.", 400)
        response["Referrer-Policy"] = "no-referrer"  # the token stays out of this page's requests
        return response
    asker = pipeline.Asker(t, locale, auth.session_customer(request, t))
    return render(request, "supportbot/chat.html", {"tenant": t, "locale": locale,
                                                    "thread": chat_thread.thread_turns(request, asker),
                                                    "max_chars": settings.ASK_MAX_QUESTION_CHARS})


@require_POST
def chat_start_over(request, tenant: str):
    """Forget the session's thread: the next question starts a new conversation."""
    t = _tenant(tenant)
    chat_thread.thread_clear(request)
    locale = callers.locale_or_default(t, request.POST.get("locale"))
    page = reverse("chat", args=[t.slug]) + (f"?locale={locale}" if locale != t.default_locale else "")
    return HttpResponseRedirect(page, status=303)


@csrf_exempt  # checked below: the tenant's own site (Origin) or our own form (CSRF token)
@require_POST
def chat_sign_in(request, tenant: str):
    """Sign the chat page in as a customer: the tenant's page posts the token its backend minted
    (``customer_token``, optionally ``locale``); the customer is kept in the session and the
    browser is sent to the chat page. From any other site the post is refused like a forged form."""
    t = _tenant(tenant)
    if not auth.embed_origin_allowed(request, t):
        return csrf_protect(_chat_sign_in)(request, t)
    return _chat_sign_in(request, t)


def _chat_sign_in(request, t: Tenant):
    locale = callers.locale_or_default(t, request.POST.get("locale"))
    signed = callers.chat_sign_in(request, t, request.POST.get("customer_token", ""), locale)
    if isinstance(signed, Refusal):
        if signed.retry_after_s is not None:
            return _chat_refused(request, signed)
        return _chat_error_page(request, t, locale, signed.message, signed.status)  # the token was refused
    page = reverse("chat", args=[t.slug]) + (f"?locale={locale}" if locale != t.default_locale else "")
    return HttpResponseRedirect(page, status=303)


@require_POST
def chat_submit(request, tenant: str):
    """Validate the question; htmx gets a bubble that streams the answer, a plain form post a full page."""
    admitted = callers.chat_asker(request, tenant, request.POST.get("locale"))
    if isinstance(admitted, Refusal):
        return _chat_refused(request, admitted)
    asker = admitted.asker
    try:
        question = clean_question(request.POST.get("question", ""))
    except AskRejected as exc:
        return _chat_refused(request, Refusal(exc.code, exc.message, exc.status, tenant=asker.tenant))
    if not request.htmx:
        thread = chat_thread.thread_turns(request, asker)
        result = pipeline.ask(asker, chat_thread.conversation_with(request, asker, question))
        chat_thread.thread_record(request, asker, question, result)
        return render(request, "supportbot/chat.html", {"tenant": asker.tenant, "locale": asker.locale,
                                                        "question": question, "outcome": result, "thread": thread,
                                                        "max_chars": settings.ASK_MAX_QUESTION_CHARS})
    ask_id = callers.chat_pending_add(request, asker, question)
    return render(request, "supportbot/partials/exchange.html", {"tenant": asker.tenant, "question": question,
                                                                 "ask_id": ask_id})


@require_GET
async def chat_stream(request, tenant: str, ask_id: str):
    """Server-sent events for one pending question: ``delta`` pieces, then ``done`` with citations.
    Under the async server the answer streams from the event loop (``serving``); a question over
    its in-flight cap ends at once with the cap's message in the footer (an event stream that
    answers 429 would only make the browser try again)."""
    if not serving.is_async(request):
        return await sync_to_async(_chat_stream_sync)(request, tenant, ask_id)
    pending = await serving.front(callers.chat_pending_take, request, tenant, ask_id)
    if isinstance(pending, Refusal):
        raise Http404(pending.message)
    asker, question = pending
    conversation = await serving.front(chat_thread.conversation_with, request, asker, question)
    return _sse_response(serving.stream_guard(_chat_events_async(request, asker, question, conversation)))


async def _chat_events_async(request, asker, question: str, conversation):
    t = asker.tenant
    try:
        async with contextlib.aclosing(pipeline.ask_events_async(asker, conversation, streamed=True)) as events:
            async for kind, value in events:
                if kind == "delta":
                    yield _sse("delta", escape(value).replace("\n", "<br>"))
                else:
                    await serving.blocking(chat_thread.thread_record, request, asker, question, value, save=True)
                    yield _sse("done", render_to_string("supportbot/partials/answer_footer.html",
                                                        {"outcome": value, "tenant": t}))
    except InFlightRefused as exc:
        yield _sse("done", render_to_string("supportbot/partials/answer_footer.html", {"error": exc.message, "tenant": t}))
    except (AskRejected, DatabaseError) as exc:
        log.warning("stream failed: %s", exc)
        yield _sse("done", render_to_string("supportbot/partials/answer_footer.html",
                                            {"error": pipeline.UNAVAILABLE_TEXT, "tenant": t}))


def _chat_stream_sync(request, tenant: str, ask_id: str):
    """``chat_stream`` under WSGI: the sync pipeline, in the request's thread."""
    pending = callers.chat_pending_take(request, tenant, ask_id)
    if isinstance(pending, Refusal):
        raise Http404(pending.message)
    asker, question = pending
    t = asker.tenant
    conversation = chat_thread.conversation_with(request, asker, question)

    def events():
        try:
            for kind, value in pipeline.ask_events(asker, conversation, streamed=True):
                if kind == "delta":
                    yield _sse("delta", escape(value).replace("\n", "<br>"))
                else:
                    chat_thread.thread_record(request, asker, question, value, save=True)
                    html = render_to_string("supportbot/partials/answer_footer.html", {"outcome": value, "tenant": t})
                    yield _sse("done", html)
        except InFlightRefused as exc:
            yield _sse("done", render_to_string("supportbot/partials/answer_footer.html",
                                                {"error": exc.message, "tenant": t}))
        except (AskRejected, DatabaseError) as exc:
            log.warning("stream failed: %s", exc)
            yield _sse("done", render_to_string("supportbot/partials/answer_footer.html",
                                                {"error": pipeline.UNAVAILABLE_TEXT, "tenant": t}))

    return _sse_response(events())


# --------------------------------------------------------------------------- JSON API

def _parse_ask_body(request) -> dict:
    """The body, with its ``question`` or ``messages`` validated as the ``conversation``."""
    body = _parse_json_object(request, allowed={"question", "messages", "locale", "stream", "customer"})
    body["conversation"] = conversation_parse(body)
    if "stream" in body and not isinstance(body["stream"], bool):
        raise AskRejected("invalid_stream", "stream must be true or false")
    return body


def _parse_json_object(request, allowed: set[str] | None = None) -> dict:
    """The body as a JSON object; with ``allowed``, any other field is refused."""
    content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise AskRejected("unsupported_media_type", "send a JSON body with Content-Type: application/json", 415)
    length = request.META.get("CONTENT_LENGTH") or "0"
    if not length.isdigit() or int(length) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        raise AskRejected("body_too_large", f"the body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes", 413)
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        raise AskRejected("invalid_encoding", "the body is not valid UTF-8") from None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        raise AskRejected("invalid_json", "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise AskRejected("invalid_json", "the body must be a JSON object")
    unknown = set(body) - allowed if allowed is not None else set()
    if unknown:
        raise AskRejected("unknown_field", f"unknown field(s): {', '.join(sorted(unknown))[:200]}")
    return body


@serving.calls_inline  # no session, no write in Django's own thread-sensitive calls: they run on the loop
@csrf_exempt
@require_http_methods(["POST"])
async def api_ask(request, tenant: str):
    """The Ask API. Under the async server, one hop to the front lane does everything up to the
    exact lookup (and the whole of an exact hit); a miss goes on to the semantic lookup on the
    fresh answers' lane, and a fresh answer then streams from the event loop. Under WSGI, the sync
    pipeline in the request's thread (``_api_ask_sync``)."""
    if not serving.is_async(request):
        return await sync_to_async(_api_ask_sync)(request, tenant)
    try:
        admitted, ahead, state = await serving.front(_api_ask_begin, request, tenant)
        if state is not None and not state.finished:  # the exact cache missed: the rest on the fresh lane
            state = await serving.blocking(pipeline.ask_begin_rest, state, request_ahead=True)
    except AskRejected as exc:
        return _api_error(exc.code, exc.message, exc.status)
    except InFlightRefused as exc:
        return _inflight_refused(exc)
    if state is None:
        return _refused(admitted)
    breakdown = admitted.timing_breakdown
    if ahead["body"].get("stream"):
        events = pipeline.ask_events_async(admitted.asker, None, begun=state)
        return _sse_response(serving.stream_guard(_api_events_async(events, breakdown)))
    return _api_result(await pipeline.ask_async(admitted.asker, None, begun=state), breakdown)


def _api_admit(request, tenant: str):
    """Who asks (``callers.api_asker``), with the question prepared and the exact cache's keys read
    along with the rate limits: (``Admitted`` or ``Refusal``, what was read ahead)."""
    ahead: dict = {}

    def read_along(entry) -> tuple:
        """The exact cache's keys for this question under the tenant copy, read with the rate limits."""
        try:
            ahead["body"] = body = _parse_ask_body(request)
            ahead["state"] = state = pipeline.prepare(
                pipeline.Asker(entry.tenant, locale_for(entry.tenant, body.get("locale"))), body["conversation"],
                streamed=bool(body.get("stream")))
        except AskRejected:
            return ()  # refused again below, once the caller is known
        return pipeline.prefetch_keys(state)

    def body() -> dict:
        if "body" not in ahead:
            ahead["body"] = _parse_ask_body(request)
        return ahead["body"]

    return callers.api_asker(request, tenant, body, read_along=read_along), ahead


def _api_ask_begin(request, tenant: str):
    """The async view's first hop: (admitted, ahead, the Ask begun up to its exact lookup), or
    (refusal, ahead, None)."""
    admitted, ahead = _api_admit(request, tenant)
    if isinstance(admitted, Refusal):
        return admitted, ahead, None
    prefetched = admitted.read
    prepared = ahead.get("state") if prefetched is not None else None
    body = ahead["body"]
    return admitted, ahead, pipeline.ask_begin(admitted.asker, body["conversation"], streamed=bool(body.get("stream")),
                                               prepared=prepared, prefetched=prefetched, exact_only=True)


def _api_ask_sync(request, tenant: str):
    admitted, ahead = _api_admit(request, tenant)
    if isinstance(admitted, Refusal):
        return _refused(admitted)
    question, stream, prefetched = ahead["body"]["conversation"], bool(ahead["body"].get("stream")), admitted.read
    breakdown = admitted.timing_breakdown
    prepared = ahead.get("state") if prefetched is not None else None
    try:
        if stream:
            state_events = pipeline.ask_events(admitted.asker, question, streamed=True, prepared=prepared,
                                               prefetched=prefetched)
            first = next(state_events)  # validation happens before the first event
            return _api_stream(first, state_events, breakdown)
        result = pipeline.ask(admitted.asker, question, prepared=prepared, prefetched=prefetched)
    except AskRejected as exc:
        return _api_error(exc.code, exc.message, exc.status)
    except InFlightRefused as exc:
        return _inflight_refused(exc)
    return _api_result(result, breakdown)


def _api_result(result, breakdown: bool) -> JsonResponse:
    payload = result.to_api(timing_breakdown=breakdown)
    if result.status == "unavailable":
        payload["error"] = {"code": "unavailable", "message": result.answer}
        return JsonResponse(payload, status=503)
    return JsonResponse(payload)


async def _api_events_async(events, breakdown: bool):
    async with contextlib.aclosing(events) as items:
        async for kind, value in items:
            if kind == "delta":
                yield _sse("delta", json.dumps({"delta": value}))
            else:
                yield _sse("done", json.dumps(value.to_api(timing_breakdown=breakdown)))


def _api_stream(first, rest, breakdown: bool) -> StreamingHttpResponse:
    def events():
        for kind, value in itertools.chain([first], rest):
            if kind == "delta":
                yield _sse("delta", json.dumps({"delta": value}))
            else:
                yield _sse("done", json.dumps(value.to_api(timing_breakdown=breakdown)))

    return _sse_response(events())


@csrf_exempt
@require_http_methods(["POST"])
def api_customer_token(request, tenant: str):
    """A tenant's backend exchanges its API key for a short-lived token naming one signed-in customer."""
    admitted = callers.api_caller(request, tenant, key_required=True, scope="customer_token")
    if isinstance(admitted, Refusal):
        return _refused(admitted)
    t = admitted.tenant
    try:
        body = _parse_json_object(request, allowed={"customer", "ttl_s", "single_use"})
        ttl = body.get("ttl_s")
        if ttl is not None and (not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 1):
            raise AskRejected("invalid_ttl", "ttl_s must be a positive integer")
        single_use = body.get("single_use", False)
        if not isinstance(single_use, bool):
            raise AskRejected("invalid_single_use", "single_use must be true or false")
        token = auth.customer_token_issue(t, body.get("customer"), ttl, single_use=single_use)
        _, expires = auth.customer_token_check(t, token)
    except (AskRejected, auth.AuthError) as exc:
        return _api_error(exc.code, exc.message, exc.status)
    return JsonResponse({"token": token, "expires_at": expires, "single_use": single_use})


def openapi_schema(request):
    return FileResponse(open(settings.BASE_DIR / "docs" / "openapi.yaml", "rb"), content_type="application/yaml")


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")


# --------------------------------------------------------------------------- customer feedback

def _ask_of(t: Tenant, request_id):
    """The tenant's Ask with this request id, or None.

    The record of a cache hit is written a moment after its answer (``supportbot.records``):
    feedback sent right away on an answer not recorded yet waits for it, once, for about
    that moment."""
    try:
        request_id = uuid.UUID(str(request_id))
    except ValueError:
        return None
    ask = AskEvent.objects.filter(tenant=t, request_id=request_id).first()
    if ask is None and pipeline.hit_records.flush(timeout_s=1.0):  # this process's own, if it answered
        ask = AskEvent.objects.filter(tenant=t, request_id=request_id).first()
    if ask is None:  # another process's batch
        time.sleep(max(0.0, settings.RECORDS_LINGER_MS / 1000) * 2)
        ask = AskEvent.objects.filter(tenant=t, request_id=request_id).first()
    return ask


@require_POST
def chat_feedback(request, tenant: str, request_id):
    """"Did this answer your question?" under a chat answer; a "no" on a cached answer goes to review."""
    admitted = callers.chat_asker(request, tenant, action="feedback")
    if isinstance(admitted, Refusal):
        return _chat_refused(request, admitted)
    t = admitted.tenant
    ask = _ask_of(t, request_id)
    helpful = {"yes": True, "no": False}.get(request.POST.get("helpful", ""))
    if ask is None or helpful is None:
        raise Http404("no such answer")
    feedback_record(ask, helpful, request.POST.get("comment", "")[:2000])
    template = "supportbot/partials/feedback_thanks.html" if request.htmx else "supportbot/feedback_done.html"
    return render(request, template, {"tenant": t, "helpful": helpful})


@csrf_exempt
@require_http_methods(["POST"])
def api_feedback(request, tenant: str):
    """POST {"request_id": ..., "helpful": true|false, "comment": optional}: the customer's verdict on an answer."""
    admitted = callers.api_caller(request, tenant, action="feedback")
    if isinstance(admitted, Refusal):
        return _refused(admitted)
    t = admitted.tenant
    try:
        body = _parse_json_object(request, allowed={"request_id", "helpful", "comment"})
        if not isinstance(body.get("helpful"), bool):
            raise AskRejected("invalid_helpful", "helpful must be true or false")
        comment = body.get("comment", "")
        if not isinstance(comment, str) or len(comment) > 2000:
            raise AskRejected("invalid_comment", "comment must be a string of at most 2000 characters")
    except AskRejected as exc:
        return _api_error(exc.code, exc.message, exc.status)
    ask = _ask_of(t, body.get("request_id")) if isinstance(body.get("request_id"), str) else None
    if ask is None:
        return _api_error("unknown_request", "no answer with this request_id for this tenant", 404)
    feedback_record(ask, body["helpful"], comment)
    return JsonResponse({"request_id": str(ask.request_id), "helpful": body["helpful"], "recorded": True})
