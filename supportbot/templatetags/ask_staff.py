"""Number formatting for the staff pages."""
from __future__ import annotations

from django import template
from django.conf import settings

register = template.Library()
DASH = "—"


@register.filter
def pct(value, digits: int = 1) -> str:
    if value is None or value == "":
        return DASH
    return f"{float(value) * 100:.{int(digits)}f}%"


@register.filter
def interval(rate) -> str:
    """A Rate as "1.2% [0.3–4.1%] (3/250)": point estimate, 95% Wilson interval, counts."""
    if rate is None or not rate.n:
        return "no labels"
    return f"{rate.k / rate.n * 100:.1f}% [{rate.low * 100:.1f}–{rate.high * 100:.1f}%] ({rate.k}/{rate.n})"


@register.filter
def money(value) -> str:
    if value is None:
        return DASH
    value = float(value)
    if value and abs(value) < 0.01:
        return f"{value:.6f} {settings.PRICE_CURRENCY}"
    return f"{value:,.2f} {settings.PRICE_CURRENCY}"


@register.filter
def num(value, digits: int = 0) -> str:
    if value is None:
        return DASH
    return f"{float(value):,.{int(digits)}f}"


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None
