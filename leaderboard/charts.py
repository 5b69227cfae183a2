"""Server-rendered SVG charts: no JavaScript library, no CDN, nothing to fetch.

Pure functions from numbers to SVG markup (escaped), so the pages work inside a network with
no internet access and the charts are testable as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float | None = None  # spread (p5)
    high: float | None = None  # spread (p95)
    note: str = ""


def bar_chart(bars: Sequence[Bar], unit: str, width: int = 640, bar_height: int = 22) -> str:
    """Horizontal bars with p5-p95 whiskers."""
    if not bars:
        return ""
    label_w, pad = 190, 60
    top = max(max(b.high or b.value for b in bars), 1e-12)
    scale = (width - label_w - pad) / top
    height = len(bars) * (bar_height + 8) + 10
    parts = [f'<svg class="chart bars" role="img" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    for i, b in enumerate(bars):
        y = 5 + i * (bar_height + 8)
        w = max(1.0, b.value * scale)
        parts.append(f'<text x="{label_w - 8}" y="{y + bar_height * 0.7:.1f}" text-anchor="end" '
                     f'font-size="12">{escape(b.label)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_height}" '
                     f'fill="#4e79a7"><title>{escape(b.label)}: {b.value:.4g} {escape(unit)}'
                     f'{escape(b.note)}</title></rect>')
        if b.low is not None and b.high is not None:
            x1, x2, ym = label_w + b.low * scale, label_w + b.high * scale, y + bar_height / 2
            parts.append(f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{ym:.1f}" y2="{ym:.1f}" '
                         'stroke="#222" stroke-width="1.5"/>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + bar_height * 0.7:.1f}" '
                     f'font-size="12">{b.value:.3g} {escape(unit)}{escape(b.note)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def line_chart(values: Sequence[float], labels: Sequence[str], unit: str, width: int = 320,
               height: int = 90) -> str:
    """A small history chart: one point per measurement, oldest left."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = (hi - lo) or (abs(hi) or 1.0)
    pad = 10
    step = (width - 2 * pad) / max(1, len(values) - 1)
    points = [(pad + i * step, height - pad - (v - lo) / span * (height - 2 * pad))
              for i, v in enumerate(values)]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    parts = [f'<svg class="chart history" role="img" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
             f'<polyline points="{path}" fill="none" stroke="#e15759" stroke-width="2"/>']
    for (x, y), v, label in zip(points, values, labels, strict=True):
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#e15759">'
                     f'<title>{escape(label)}: {v:.4g} {escape(unit)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class LinkCell:
    source: str
    target: str
    gbps: float | None
    rtt_ms: float | None
    confirmed: bool


def link_matrix(names: Sequence[str], cells: Sequence[LinkCell], cell_w: int = 64,
                cell_h: int = 30) -> str:
    """Every ordered pair, sender by row and receiver by column, coloured by throughput
    against the fastest link shown (red slow, green fast); RTT and both views on hover."""
    if not names or not cells:
        return ""
    label_w, head_h = 130, 70
    index = {n: i for i, n in enumerate(names)}
    fastest = max((c.gbps for c in cells if c.gbps), default=0.0) or 1.0
    width, height = label_w + len(names) * cell_w + 10, head_h + len(names) * cell_h + 10
    parts = [f'<svg class="chart links" role="img" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    for n, i in index.items():
        x = label_w + i * cell_w + cell_w / 2
        parts.append(f'<text x="{x:.1f}" y="{head_h - 8}" font-size="11" text-anchor="start" '
                     f'transform="rotate(-35 {x:.1f} {head_h - 8})">{escape(n)}</text>')
        parts.append(f'<text x="{label_w - 8}" y="{head_h + i * cell_h + cell_h * 0.65:.1f}" '
                     f'font-size="11" text-anchor="end">{escape(n)}</text>')
    for c in cells:
        if c.source not in index or c.target not in index:
            continue
        x, y = label_w + index[c.target] * cell_w, head_h + index[c.source] * cell_h
        share = (c.gbps or 0.0) / fastest
        colour = f"hsl({120 * share:.0f}, 60%, {55 if c.gbps is not None else 90}%)"
        rtt = f", RTT {c.rtt_ms:.3g} ms" if c.rtt_ms is not None else ""
        state = "confirmed by both ends" if c.confirmed else "not confirmed by the receiver"
        figure = f"{c.gbps:.3g}" if c.gbps is not None else "–"
        parts.append(f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                     f'fill="{colour}"><title>{escape(c.source)} → {escape(c.target)}: '
                     f'{figure} Gbit/s{rtt} ({state})</title></rect>')
        parts.append(f'<text x="{x + cell_w / 2 - 1:.1f}" y="{y + cell_h * 0.62:.1f}" '
                     f'font-size="11" text-anchor="middle">{figure}{"" if c.confirmed else "*"}</text>')
    parts.append("</svg>")
    return "".join(parts)
