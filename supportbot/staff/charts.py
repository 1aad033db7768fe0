"""Server-rendered SVG charts: no JavaScript, no chart library, readable without colour
(every series has a label in the legend and a dash pattern)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = [("#0b5fff", ""), ("#d9480f", "6 3"), ("#2b8a3e", "2 3"), ("#862e9c", "8 3 2 3"), ("#495057", "1 2"),
           ("#e8590c", "4 4")]


@dataclass
class Series:
    label: str
    points: list[tuple[float, float | None]]  # (x, y); y None leaves a gap


def _fmt_pct(v: float) -> str:
    return f"{v * 100:.0f}%"


def line_chart(series: list[Series], *, x_min: float, x_max: float, y_max: float = 1.0, width: int = 760,
               height: int = 240, x_labels: list[tuple[float, str]] | None = None, y_format=_fmt_pct,
               markers: list[tuple[float, str]] | None = None, title: str = "") -> SafeString:
    rows = (len(series) + 2) // 3
    height += 14 * max(rows - 1, 0)
    left, right, top, bottom = 48, 12, 12, 30 + 14 * rows
    pw, ph = width - left - right, height - top - bottom
    span = (x_max - x_min) or 1.0

    def sx(x):
        return left + (x - x_min) / span * pw

    def sy(y):
        return top + ph - (min(y, y_max) / y_max) * ph

    out = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
           f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
           f"<title>{escape(title)}</title>",
           '<style>text{font:11px system-ui,sans-serif;fill:#495057}.grid{stroke:#dee2e6}</style>']
    for i in range(5):
        y = y_max * i / 4
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{sy(y):.1f}" y2="{sy(y):.1f}"/>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{escape(y_format(y))}</text>')
    labels = x_labels or []
    for i, (x, label) in enumerate(labels):
        anchor = "start" if i == 0 else ("end" if i == len(labels) - 1 else "middle")
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 16}" text-anchor="{anchor}">{escape(label)}</text>')
    for x, label in markers or []:
        out.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{top}" y2="{top + ph}" stroke="#212529" '
                   f'stroke-dasharray="3 3"/><text x="{sx(x) + 3:.1f}" y="{top + 10}">{escape(label)}</text>')
    for i, s in enumerate(series):
        colour, dash = PALETTE[i % len(PALETTE)]
        runs, run = [], []
        for x, y in s.points:
            if y is None:
                if run:
                    runs.append(run)
                run = []
            else:
                run.append((sx(x), sy(y), x, y))
        if run:
            runs.append(run)
        for r in runs:
            if len(r) == 1:
                out.append(f'<circle cx="{r[0][0]:.1f}" cy="{r[0][1]:.1f}" r="2.5" fill="{colour}"/>')
            else:
                pts = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in r)
                out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                           f'stroke-dasharray="{dash}" points="{pts}"><title>{escape(s.label)}</title></polyline>')
        lx, ly = left + (i % 3) * (pw // 3), top + ph + 36 + (i // 3) * 14
        out.append(f'<line x1="{lx}" x2="{lx + 22}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" stroke-width="2" '
                   f'stroke-dasharray="{dash}"/><text x="{lx + 27}" y="{ly}">{escape(s.label)}</text>')
    out.append("</svg>")
    return mark_safe("".join(out))


def time_labels(start: datetime, end: datetime, bucket: str, count: int = 6) -> list[tuple[float, str]]:
    span = (end - start).total_seconds()
    fmt = "%d %b" if bucket == "day" else ("%H:%M" if span <= 2 * 86400 else "%d %b %H:%M")
    return [(start.timestamp() + span * i / (count - 1),
             datetime.fromtimestamp(start.timestamp() + span * i / (count - 1), tz=start.tzinfo).strftime(fmt))
            for i in range(count)]


def nice_max(value: float) -> float:
    """A round upper bound for a count axis (four grid steps of a round size)."""
    if value <= 4:
        return 4
    step = 10 ** (len(str(int(value / 4))) - 1)
    for mult in (1, 2, 2.5, 4, 5, 10):
        if value / 4 <= step * mult:
            return 4 * step * mult
    return value
