"""Customer-facing views: the chat page (htmx, streamed answers) and the JSON Ask API.

Views parse and validate, call the pipeline, and render; nothing else."""
from __future__ import annotations

import json
import logging
import secrets

from django.conf import settings
from django.db import DatabaseError
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.html import escape
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from supportbot import pipeline
from supportbot.models import Tenant
from supportbot.questions import AskRejected, clean_question

log = logging.getLogger(__name__)
PENDING_KEY = "pending_asks"
MAX_PENDING = 5


def _tenant(slug: str) -> Tenant:
    try:
        return Tenant.objects.get(slug=slug)
    except Tenant.DoesNotExist:
        raise Http404("unknown tenant") from None


def _locale(tenant: Tenant, value) -> str:
    if value in (None, ""):
        return tenant.default_locale
    if not isinstance(value, str) or value not in tenant.locales:
        raise AskRejected("unknown_locale", f"locale must be one of {sorted(tenant.locales)}")
    return value


def _api_error(code: str, message: str, status: int, **extra) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status)


def _sse(event: str, data: str) -> str:
    lines = data.split("\n") or [""]
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


# --------------------------------------------------------------------------- chat page

@require_GET
def chat_page(request, tenant: str):
    t = _tenant(tenant)
    try:
        locale = _locale(t, request.GET.get("locale"))
    except AskRejected:
        locale = t.default_locale
    return render(request, "supportbot/chat.html", {"tenant": t, "locale": locale,
                                                    "max_chars": settings.ASK_MAX_QUESTION_CHARS})


@require_POST
def chat_submit(request, tenant: str):
    """Validate the question; htmx gets a bubble that streams the answer, a plain form post a full page."""
    t = _tenant(tenant)
    try:
        locale = _locale(t, request.POST.get("locale"))
        question = clean_question(request.POST.get("question", ""))
    except AskRejected as exc:
        if request.htmx:
            return render(request, "supportbot/partials/form_error.html", {"message": exc.message}, status=422)
        return render(request, "supportbot/chat.html", {"tenant": t, "locale": t.default_locale, "error": exc.message,
                                                        "max_chars": settings.ASK_MAX_QUESTION_CHARS}, status=400)
    if not request.htmx:
        result = pipeline.ask(pipeline.Asker(t, locale, None), question)
        return render(request, "supportbot/chat.html", {"tenant": t, "locale": locale, "question": question,
                                                        "outcome": result,
                                                        "max_chars": settings.ASK_MAX_QUESTION_CHARS})
    ask_id = secrets.token_urlsafe(12)
    pending = request.session.get(PENDING_KEY, {})
    pending = dict(list(pending.items())[-(MAX_PENDING - 1):])
    pending[ask_id] = {"tenant": t.slug, "locale": locale, "question": question}
    request.session[PENDING_KEY] = pending
    return render(request, "supportbot/partials/exchange.html", {"tenant": t, "question": question, "ask_id": ask_id})


@require_GET
def chat_stream(request, tenant: str, ask_id: str):
    """Server-sent events for one pending question: ``delta`` pieces, then ``done`` with citations."""
    t = _tenant(tenant)
    pending = request.session.get(PENDING_KEY, {})
    item = pending.pop(ask_id, None)
    if item is None or item["tenant"] != t.slug:
        raise Http404("no such question")
    request.session[PENDING_KEY] = pending
    asker = pipeline.Asker(t, item["locale"], None)

    def events():
        try:
            for kind, value in pipeline.ask_events(asker, item["question"], streamed=True):
                if kind == "delta":
                    yield _sse("delta", escape(value).replace("\n", "<br>"))
                else:
                    html = render_to_string("supportbot/partials/answer_footer.html", {"outcome": value, "tenant": t})
                    yield _sse("done", html)
        except (AskRejected, DatabaseError) as exc:
            log.warning("stream failed: %s", exc)
            yield _sse("done", render_to_string("supportbot/partials/answer_footer.html",
                                                {"error": pipeline.UNAVAILABLE_TEXT, "tenant": t}))

    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


# --------------------------------------------------------------------------- JSON API

def _parse_ask_body(request) -> dict:
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
    unknown = set(body) - {"question", "locale", "stream"}
    if unknown:
        raise AskRejected("unknown_field", f"unknown field(s): {', '.join(sorted(unknown))[:200]}")
    if "question" not in body:
        raise AskRejected("missing_question", "question is required")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise AskRejected("invalid_stream", "stream must be true or false")
    return body


@csrf_exempt
@require_http_methods(["POST"])
def api_ask(request, tenant: str):
    try:
        t = Tenant.objects.get(slug=tenant)
    except Tenant.DoesNotExist:
        return _api_error("unknown_tenant", "no such tenant", 404)
    try:
        body = _parse_ask_body(request)
        asker = pipeline.Asker(t, _locale(t, body.get("locale")), None)
        if body.get("stream"):
            state_events = pipeline.ask_events(asker, body["question"], streamed=True)
            first = next(state_events)  # validation happens before the first event
            return _api_stream(first, state_events)
        result = pipeline.ask(asker, body["question"])
    except AskRejected as exc:
        return _api_error(exc.code, exc.message, exc.status)
    payload = result.to_api()
    if result.status == "unavailable":
        payload["error"] = {"code": "unavailable", "message": result.answer}
        return JsonResponse(payload, status=503)
    return JsonResponse(payload)


def _api_stream(first, rest) -> StreamingHttpResponse:
    def events():
        for kind, value in _chain(first, rest):
            if kind == "delta":
                yield _sse("delta", json.dumps({"delta": value}))
            else:
                yield _sse("done", json.dumps(value.to_api()))

    response = StreamingHttpResponse(events(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _chain(first, rest):
    yield first
    yield from rest


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")
