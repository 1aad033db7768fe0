"""Staff pages inside the Django admin (URLs under ``/admin/ask/``).

Every view goes through ``admin.site.admin_view`` (active staff only, the admin's login
otherwise) and checks one permission; actions are POSTs answered with an htmx partial.
Every read is narrowed to the user's tenants and every object fetched through
``scoped_object_or_404`` (``core.tenancy``): another tenant's object is a 404."""
from __future__ import annotations

import tempfile
from datetime import datetime, time as dtime, timedelta
from functools import wraps

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from caching import calibration, guards, modes, stats
from caching.pairs import PairFileError
from caching.models import CalibrationUpload, Label, ReasonCode, ReviewItem, SampledHit
from supportbot.review import REASON_KEYS, ReviewError, label_sample, next_sample, review_confirm_wrong, \
    review_correct, review_dismiss
from caching.rollups import floor_hour
from caching.thresholds import judge_threshold, threshold_state
from core.models import Tenant
from modelbuild import judge_calibration
from modelbuild.services import builds_status
from supportbot.staff import charts, gaps, selectors
from supportbot.prefix_probe import prefix_cache_probe_latest
from supportbot.staff import services as staff_services
from supportbot.staff.services import semantic_mode_set
from core.tenancy import scoped_object_or_404, tenant_scope

RANGES = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90)}
SKIPPED_KEY = "label_skipped"


def staff_view(permission: str):
    """Staff only (the admin's login page otherwise), and the given permission (403 otherwise)."""
    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.has_perm(permission):
                raise PermissionDenied(f"needs permission {permission}")
            return view(request, *args, **kwargs)
        return admin.site.admin_view(wrapped)
    return decorate


def _page(request, template: str, context: dict, title: str, status: int = 200):
    context = {**admin.site.each_context(request), "title": title, "reasons": ReasonCode.choices, **context}
    return render(request, template, context, status=status)


# --------------------------------------------------------------------------- dashboard

def _period(request) -> dict:
    """The selected range: a preset (24h, 7d, 30d, 90d) or custom dates, aligned to the bucket."""
    now = timezone.now()
    choice = request.GET.get("range", "7d")
    end = floor_hour(now) + timedelta(hours=1)
    start = end - RANGES.get(choice, RANGES["7d"])
    if choice == "custom":
        try:
            start = datetime.combine(datetime.fromisoformat(request.GET["start"]).date(), dtime.min,
                                     tzinfo=timezone.get_current_timezone())
            end = datetime.combine(datetime.fromisoformat(request.GET["end"]).date(), dtime.min,
                                   tzinfo=timezone.get_current_timezone()) + timedelta(days=1)
        except (KeyError, ValueError):
            choice = "7d"
        if end <= start:
            start, end = end - timedelta(days=1), end
    elif choice not in RANGES:
        choice = "7d"
    bucket = request.GET.get("bucket")
    if bucket not in ("hour", "day"):
        bucket = "hour" if end - start <= timedelta(days=2) else "day"
    if bucket == "day":
        start = start.replace(hour=0)
    return {"range": choice, "start": start, "end": end, "bucket": bucket}


def _buckets(start: datetime, end: datetime, bucket: str) -> list[datetime]:
    step = timedelta(days=1) if bucket == "day" else timedelta(hours=1)
    out, t = [], start
    while t < end and len(out) < 5000:
        out.append(t)
        t += step
    return out


def _hit_rate_chart(series: dict, period: dict):
    buckets = _buckets(period["start"], period["end"], period["bucket"])
    lines = []
    for layer in stats.LAYERS:
        by_time = {t: (n, h, s) for t, n, h, s in series[layer]}
        if not by_time:
            continue
        lines.append(charts.Series(f"{layer} hit rate", [
            (t.timestamp(), (by_time[t][1] / by_time[t][0]) if t in by_time and by_time[t][0] else None)
            for t in buckets]))
        if layer == "semantic" and any(shadow for _, _, shadow in by_time.values()):
            lines.append(charts.Series("semantic shadow would-hit", [
                (t.timestamp(), (by_time[t][2] / by_time[t][0]) if t in by_time and by_time[t][0] else None)
                for t in buckets]))
    asks = dict(series["asks"])
    peak = max(asks.values(), default=0)
    labels = charts.time_labels(period["start"], period["end"], period["bucket"])
    rate = charts.line_chart(lines, x_min=period["start"].timestamp(), x_max=buckets[-1].timestamp(),
                             x_labels=labels, title="Hit rate by layer")
    volume = charts.line_chart([charts.Series("asks", [(t.timestamp(), asks.get(t, 0)) for t in buckets])],
                               x_min=period["start"].timestamp(), x_max=buckets[-1].timestamp(),
                               y_max=charts.nice_max(peak), x_labels=labels, y_format=lambda v: f"{v:.0f}", height=160,
                               title="Asks")
    return rate, volume


def _model_side_chart(period: dict, tenant: Tenant | None):
    """Cached-token share (a share of prompt tokens), vLLM's prefix-cache hit rate and KV-cache usage."""
    buckets = _buckets(period["start"], period["end"], period["bucket"])
    share = {t: (cached / prompt) if prompt else None for t, prompt, cached in selectors.cached_token_share_series(
        period["start"], period["end"], tenant.pk if tenant else None, period["bucket"])}
    fleet = {t: (hit_rate, kv) for t, hit_rate, kv in selectors.prefix_cache_series(
        period["start"], period["end"], period["bucket"])}
    lines = [
        charts.Series("cached-token share" + (f" ({tenant.slug})" if tenant else ""),
                      [(t.timestamp(), share.get(t)) for t in buckets]),
        charts.Series("prefix-cache hit rate (model servers)", [(t.timestamp(), fleet.get(t, (None, None))[0])
                                                                for t in buckets]),
        charts.Series("KV-cache usage (model servers)", [(t.timestamp(), fleet.get(t, (None, None))[1])
                                                         for t in buckets]),
    ]
    return charts.line_chart(lines, x_min=period["start"].timestamp(), x_max=buckets[-1].timestamp(),
                             x_labels=charts.time_labels(period["start"], period["end"], period["bucket"]),
                             title="The model side: prefix cache and KV cache")


@staff_view("caching.view_hourlyrollup")
def dashboard(request):
    period = _period(request)
    scope = tenant_scope(request.user)
    tenants = list(scope.tenants())
    tenant = next((t for t in tenants if t.slug == request.GET.get("tenant")), None)
    data = stats.dashboard(period["start"], period["end"], tenant.pk if tenant else scope.ids, period["bucket"])
    rate_chart, volume_chart = _hit_rate_chart(data["series"], period)
    wrong = data["wrong"]
    layer_rows = []
    for layer in stats.LAYERS:
        row = dict(data["layers"][layer], layer=layer, title=stats.LAYER_TITLES[layer],
                   money=data["money"].get(layer), wrong=wrong["by_layer"].get(layer),
                   wrong_answers=wrong["answers_by_layer"].get(layer))
        layer_rows.append(row)
    shadow = stats.shadow_precision(period["start"], period["end"])
    per_tenant = []
    if tenant is None:
        rates = data["tenants"]
        per_tenant = [{"tenant": t, "layers": [rates.get(t.pk, {}).get(layer) for layer in stats.LAYERS],
                       "shadow_precision": shadow.get(t.pk), "readiness": stats.serve_readiness(shadow.get(t.pk))}
                      for t in tenants]
    locales = stats.semantic_by_locale(period["start"], period["end"], tenant.pk if tenant else [t.pk for t in tenants])
    return _page(request, "admin/ask/dashboard.html", {
        **period, "tenants": tenants, "tenant": tenant, "layer_rows": layer_rows, "layers": stats.LAYERS,
        "per_tenant": per_tenant,
        "shadow_wrong": wrong["by_layer"].get("shadow"), "wrong_answers": data["wrong_answers"],
        "wrong_by_intent": [{"stratum": s, "intent": i, "rate": r} for (s, i), r in wrong["by_intent"].items()],
        "economics": data["economics"], "prices": data["prices"], "rate_chart": rate_chart,
        "admission": data["admission"], "incomplete": data["incomplete"],
        "volume_chart": volume_chart, "model_chart": _model_side_chart(period, tenant),
        "model_servers": selectors.prefix_cache_latest(), "ranges": list(RANGES) + ["custom"], "modes": Tenant.SemanticMode.choices,
        "can_switch_mode": request.user.has_perm("core.change_semantic_mode"),
        "open_items": scope.filter(ReviewItem.objects.filter(status=ReviewItem.Status.OPEN)).count(),
        "to_label": scope.filter(SampledHit.objects.filter(labeled=False)).count(),
        "sizes": stats.cache_sizes(period["start"], period["end"], [tenant] if tenant else tenants),
        "shadow_precision": shadow.get(tenant.pk) if tenant else None,
        "readiness": stats.serve_readiness(shadow.get(tenant.pk)) if tenant else None,
        "target": settings.CALIBRATION_TARGET_PRECISION, "locales": locales,
        "abstaining": [r["locale"] for r in locales if r["abstained"]],
        "near_misses": stats.near_miss_stats(period["start"], period["end"], tenant.pk if tenant else [t.pk for t in tenants]),
        "builds": builds_status(),
        "prefix_probe": prefix_cache_probe_latest(),
        "mode_changes": modes.recent_changes(tenant.pk if tenant else scope.ids),
        "fell_back": [s for s in modes.fell_back_tenants() if any(t.slug == s for t in tenants)],
        "thresholds_notice": threshold_state().notice(),
    }, "Cache dashboard")


@staff_view("core.change_semantic_mode")
def mode_set(request, tenant: str):
    """The switch page: the serve gate's figures, the fallback's, the history; a POST switches. A
    closed gate answers 409 with the figures, unless an override reason comes from a user allowed to give one."""
    t = scoped_object_or_404(request, Tenant.objects, "pk", slug=tenant)
    error, status = "", 200
    if request.method == "POST":
        mode = request.POST.get("mode", "")
        try:
            semantic_mode_set(t, mode, request.user, override_reason=request.POST.get("override_reason", ""))
        except ValueError as exc:
            return HttpResponseBadRequest(str(exc))
        except modes.GateClosed as exc:
            error, status = str(exc), 409
        else:
            messages.success(request, f"{t.slug}: semantic cache mode is now {mode}.")
            nxt = request.POST.get("next", "")
            if not url_has_allowed_host_and_scheme(nxt, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
                nxt = reverse("staff:mode", args=[t.slug])
            return redirect(nxt)
        t.refresh_from_db()
    elif request.method != "GET":
        return HttpResponseBadRequest("GET or POST")
    response = _page(request, "admin/ask/mode.html", {
        "tenant": t, "gate": modes.serve_gate(t), "fallback": modes.fallback_figures(t), "error": error,
        "modes": Tenant.SemanticMode.choices, "changes": modes.recent_changes(t.pk, limit=20),
        "can_override": request.user.has_perm(modes.OVERRIDE_PERMISSION),
    }, f"Semantic mode of {t.slug}")
    response.status_code = status
    return response


# --------------------------------------------------------------------------- review queue

@staff_view("caching.view_reviewitem")
def review_queue(request):
    status = request.GET.get("status", ReviewItem.Status.OPEN)
    if status not in ReviewItem.Status.values:
        status = ReviewItem.Status.OPEN
    source = request.GET.get("source", "")
    items = selectors.review_items(status, source if source in ReviewItem.Source.values else "",
                                   tenant_id=tenant_scope(request.user).ids)
    page = Paginator(items, 10).get_page(request.GET.get("page"))
    can_act = request.user.has_perm("caching.change_reviewitem")
    cards = [render_to_string("admin/ask/_review_card.html",
                              {**selectors.review_card(i), "can_act": can_act, "reasons": ReasonCode.choices},
                              request=request) for i in page.object_list]
    return _page(request, "admin/ask/review_queue.html", {
        "page": page, "cards": cards, "status": status,
        "source": source, "statuses": ReviewItem.Status.choices, "sources": ReviewItem.Source.choices,
    }, "Wrong-hit review queue")


@require_POST
@staff_view("caching.change_reviewitem")
def review_action(request, pk: int, action: str):
    item = scoped_object_or_404(request, ReviewItem.objects, pk=pk)
    error = ""
    try:
        if action == "confirm":
            review_confirm_wrong(item, request.POST.get("reason", ""), request.user)
        elif action == "dismiss":
            review_dismiss(item, request.user)
        elif action == "correct":
            review_correct(item, request.POST.get("answer", ""), request.POST.get("reason", ""), request.user)
        else:
            return HttpResponseBadRequest("unknown action")
    except ReviewError as exc:
        error = str(exc)
    item.refresh_from_db()
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(reverse("staff:queue"))
    return render(request, "admin/ask/_review_card.html", {
        **selectors.review_card(item), "can_act": True, "error": error, "reasons": ReasonCode.choices,
    }, status=200)


# --------------------------------------------------------------------------- labelling

def _label_context(request, sample: SampledHit | None) -> dict:
    skipped = request.session.get(SKIPPED_KEY, [])
    today = timezone.localdate()
    return {
        "card": selectors.label_card(sample) if sample else None,
        "remaining": tenant_scope(request.user).filter(SampledHit.objects.filter(labeled=False))
        .exclude(pk__in=skipped).count(),
        "done_today": Label.objects.filter(labeler=request.user, source=Label.Source.SAMPLE,
                                           created_at__date=today).count(),
        "skipped": len(skipped), "reason_keys": [(k, code, ReasonCode(code).label) for k, code in REASON_KEYS.items()],
    }


@staff_view("caching.label_hits")
def label_page(request):
    if request.GET.get("reset"):
        request.session[SKIPPED_KEY] = []
    sample = next_sample(request.session.get(SKIPPED_KEY, []), tenant_scope(request.user).ids)
    return _page(request, "admin/ask/label.html", _label_context(request, sample), "Label sampled hits")


@require_POST
@staff_view("caching.label_hits")
def label_submit(request, pk: int):
    sample = scoped_object_or_404(request, SampledHit.objects, pk=pk)
    error = ""
    if request.POST.get("verdict") == "skip":
        request.session[SKIPPED_KEY] = (request.session.get(SKIPPED_KEY, []) + [sample.pk])[-500:]
    else:
        try:
            label_sample(sample, request.POST.get("verdict", ""), request.POST.get("reason", ""), request.user)
        except ReviewError as exc:
            error = str(exc)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(reverse("staff:label"))
    nxt = sample if error else next_sample(request.session.get(SKIPPED_KEY, []), tenant_scope(request.user).ids)
    return render(request, "admin/ask/_label_card.html", {**_label_context(request, nxt), "error": error})


# --------------------------------------------------------------------------- calibration

def _curve_chart(curve: calibration.Curve):
    markers = []
    if curve.current is not None:
        markers.append((curve.current, f"now {curve.current:.2f}"))
    if curve.recommended is not None and curve.recommended != curve.current:
        markers.append((curve.recommended, f"recommended {curve.recommended:.2f}"))
    xs = [p.threshold for p in curve.points]
    return charts.line_chart(
        [charts.Series("precision", [(p.threshold, p.precision) for p in curve.points]),
         charts.Series("coverage", [(p.threshold, p.coverage) for p in curve.points])],
        x_min=min(xs), x_max=max(xs), markers=markers, height=200, width=560,
        x_labels=[(x, f"{x:.2f}") for x in xs[:: max(1, len(xs) // 6)]],
        title=f"Precision and coverage by threshold: {curve.intent}")


@staff_view("caching.view_thresholdsetting")
def calibration_page(request):
    """Curves of the labelled pairs (GET), or of an upload a worker calibrated (``?upload=<id>``). A
    POSTed pair file is checked and stored, then embedded and calibrated by a worker: 202 and the
    upload's status, 400 for a file that does not fit (nothing stored), 413 past the cap (unread)."""
    pairs, notes, status = [], [], 200
    scope = tenant_scope(request.user)
    try:
        target = float(request.POST.get("target") or request.GET.get("target")
                       or settings.CALIBRATION_TARGET_PRECISION)
    except ValueError:
        target = settings.CALIBRATION_TARGET_PRECISION
    upload = request.FILES.get("pairs") if request.method == "POST" else None
    shown = _upload_shown(request)
    if upload is not None and upload.size > settings.CALIBRATION_UPLOAD_MAX_BYTES:
        # every pair is embedded under the worker's encoder lock: refused before any is read
        notes.append(f"{upload.name}: larger than {settings.CALIBRATION_UPLOAD_MAX_BYTES} bytes "
                     "(CALIBRATION_UPLOAD_MAX_BYTES), not read; calibrate a large set with manage.py calibrate")
        upload, status = None, 413
    if upload is not None:
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as fh:
            for chunk in upload.chunks():
                fh.write(chunk)
            fh.flush()
            try:
                shown = staff_services.calibration_upload_queue(
                    fh.name, upload.name, request.user, target=target, include_db=bool(request.POST.get("include_db")),
                    tenant_ids=scope.ids)
                status = 202
            except (PairFileError, ValueError) as exc:
                notes.append(f"Not calibrated, nothing stored: {exc}")
                status = 400
    if shown is not None and shown.status == CalibrationUpload.Status.SUCCEEDED:
        curves = calibration.upload_curves(shown)
        pairs_count = shown.calibrated_pairs
    elif shown is not None:
        curves, pairs_count = {}, 0
    else:
        if request.method == "GET" or request.POST.get("include_db"):
            pairs += calibration.pairs_from_db(scope.ids)
        curves, pairs_count = calibration.calibrate(pairs, target=target), len(pairs)
    sections = [{"curve": c, "chart": _curve_chart(c), "history": calibration.threshold_history(c.intent),
                 "base": calibration.base_threshold(c.intent)} for c in curves.values()]
    state = threshold_state(refresh=True)
    return _page(request, "admin/ask/calibration.html", {
        **_judge_section(request, target),
        "sections": sections, "pairs": pairs_count, "target": shown.target if shown else target, "notes": notes,
        "upload": shown, "can_apply": request.user.has_perm("caching.change_thresholdsetting") and scope.all,
        "thresholds": state,
        "in_force": [(i, state.values.get(i), state.sources.get(i)) for i in guards.INTENT_CLASSES],
    }, "Threshold calibration", status=status)


def _upload_shown(request) -> CalibrationUpload | None:
    """The upload named by ``?upload=``: the user's own, or any for staff who see every tenant."""
    pk = request.GET.get("upload")
    if not pk:
        return None
    uploads = CalibrationUpload.objects.all() if tenant_scope(request.user).all \
        else CalibrationUpload.objects.filter(created_by=request.user)
    return get_object_or_404(uploads, pk=pk) if pk.isdigit() else None


@staff_view("caching.view_thresholdsetting")
def calibration_upload_status(request, pk: int):
    """An upload's status as JSON (the page polls it while a worker calibrates)."""
    uploads = CalibrationUpload.objects.all() if tenant_scope(request.user).all \
        else CalibrationUpload.objects.filter(created_by=request.user)
    upload = get_object_or_404(uploads, pk=pk)
    return JsonResponse({"id": upload.pk, "status": upload.status, "file": upload.file_name,
                         "file_pairs": upload.file_pairs, "crossed": upload.crossed,
                         "calibrated_pairs": upload.calibrated_pairs, "error": upload.error,
                         "job_run": upload.job_run_id, "url": reverse("staff:calibration") + f"?upload={upload.pk}"})


def _judge_section(request, target: float) -> dict:
    """The learned judge's precision/coverage curve over its probability, from one tenant's staff
    labels (the staff user's tenants pooled when none is chosen), with the tenant's recalibrated versions."""
    scope = tenant_scope(request.user)
    tenants = list(scope.tenants())
    tenant = next((t for t in tenants if t.slug == request.GET.get("judge_tenant")), None)
    version, pairs = judge_calibration.judge_pairs(tenant.pk if tenant else scope.ids)
    curve = judge_calibration.judge_curve(pairs, target)
    curve.current = judge_threshold(tenant.pk, version, refresh=True) if tenant and version else None
    chart = _curve_chart(curve) if curve.points else ""
    loaded = guards.learned_judge()
    in_force = None if loaded is None else {
        "version": loaded.version, "threshold": loaded.threshold, "serves": settings.SEMANTIC_JUDGE_SERVES,
        "least": guards.least_cosine(loaded, settings.SEMANTIC_JUDGE_MIN_SIMILARITY),
        "least_set": settings.SEMANTIC_JUDGE_MIN_SIMILARITY is not None, "own_least": loaded.min_similarity}
    return {"judge": {"tenants": tenants, "tenant": tenant, "version": version, "labels": len(pairs), "curve": curve,
                      "chart": chart, "min_labels": settings.JUDGE_RECALIBRATE_MIN_LABELS, "in_force": in_force,
                      "history": judge_calibration.judge_threshold_history(tenant.pk) if tenant else []}}


@require_POST
@staff_view("caching.change_thresholdsetting")
def judge_recalibrate(request, tenant: str):
    t = scoped_object_or_404(request, Tenant.objects.all(), "pk", slug=tenant)
    try:
        curve, row = judge_calibration.judge_recalibrate(
            t, request.user, target=float(request.POST.get("target") or settings.CALIBRATION_TARGET_PRECISION))
    except ValueError as exc:
        messages.error(request, f"Not recalibrated: {exc}")
    else:
        if row is None:
            messages.warning(request, f"{t.slug}: no new judge threshold. {curve.note or 'It is unchanged.'}")
        else:
            messages.success(request, f"{t.slug}: judge threshold {row.value:.2f} in force as version {row.version} "
                                      f"(judge {row.judge_version}).")
    return redirect(reverse("staff:calibration") + f"?judge_tenant={t.slug}#judge")


@require_POST
@staff_view("caching.change_thresholdsetting")
def threshold_apply(request):
    if not tenant_scope(request.user).all:  # a threshold applies to every tenant
        raise PermissionDenied("thresholds apply to every tenant: only staff who see every tenant set them")
    intent = request.POST.get("intent", "")
    try:
        value = float(request.POST.get("value", ""))
        row = calibration.threshold_apply(intent, value, request.user, note=request.POST.get("note", "")[:300])
    except ValueError as exc:
        messages.error(request, f"Not applied: {exc}")
    else:
        messages.success(request, f"{intent}: threshold {row.value:.2f} in force as version {row.version}.")
    return redirect(reverse("staff:calibration"))


# --------------------------------------------------------------------------- content gaps

@staff_view("caching.view_askevent")
def content_gaps_page(request):
    """The questions handed off as not covered, per tenant and locale, grouped and ranked (``gaps``)."""
    period = _period(request)
    tenants = list(tenant_scope(request.user).tenants())
    tenant = next((t for t in tenants if t.slug == request.GET.get("tenant")), tenants[0] if tenants else None)
    locale = request.GET.get("locale") or (tenant.default_locale if tenant else "")
    if tenant is not None and locale not in tenant.locales:
        return HttpResponseBadRequest(f"locale must be one of {sorted(tenant.locales)}")
    found = gaps.content_gaps(tenant.pk, locale, period["start"], period["end"]) if tenant else []
    return _page(request, "admin/ask/gaps.html", {
        **period, "tenants": tenants, "tenant": tenant, "locale": locale, "gaps": found,
        "asked": sum(g.asked for g in found), "ranges": list(RANGES) + ["custom"],
    }, "Content gaps")
