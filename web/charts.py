"""Server-rendered SVG charts: no JavaScript library, no CDN, nothing to fetch.

Pure functions from numbers (and the words the page gives them, already translated) to SVG
markup, escaped. Server-side SVG rather than a vendored charting library: the pages work
inside a network with no internet access and without JavaScript, print as they show, and the
charts are testable as text (every axis has its title and tick labels as <text>, every mark
its value on hover as <title>).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from contract.numbers import number

BLUE, ORANGE, GREY, INK, GRID = "#3b6ea5", "#e07b39", "#9aa5b1", "#1f2933", "#e4e7eb"
FONT = 'font-family="system-ui, sans-serif"'


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round numbers spanning low..high (1, 2 or 5 times a power of ten apart)."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    norm = raw / power
    step = power * (1 if norm < 1.5 else 2 if norm < 3 else 5 if norm < 7 else 10)
    start = math.floor(low / step) * step
    out = []
    value = start
    while value < high + step * 0.999:
        out.append(round(value, 12))
        value += step
    return out


def text_width(text: str, size: int = 12) -> float:
    """Roughly how wide a label draws: CJK characters are about twice a Latin one."""
    return sum(size * (1.0 if ord(c) > 0x2E80 else 0.58) for c in text)


def _svg(kind: str, width: float, height: float, label: str) -> str:
    return (f'<svg class="chart {kind}" role="img" aria-label="{escape(label)}" '
            f'xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" {FONT}>')


def _text(x: float, y: float, content: str, cls: str, anchor: str = "start", size: int = 12,
          extra: str = "") -> str:
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" font-size="{size}" '
            f'text-anchor="{anchor}" fill="{INK}"{extra}>{escape(content)}</text>')


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    low: float | None = None  # spread (p5)
    high: float | None = None  # spread (p95)
    note: str = ""
    best: bool = False  # drawn in the accent colour: the winner


def bar_chart(bars: Sequence[Bar], unit: str, axis_title: str = "", width: int = 680,
              bar_height: int = 20) -> str:
    """Horizontal bars with p5-p95 whiskers on a labelled value axis. Labels sit in their
    own column and values after the whisker's end, so neither crosses a mark."""
    if not bars:
        return ""
    label_w = min(260.0, max(text_width(b.label) for b in bars) + 16)
    right = max(text_width(f"{number(b.value)} {unit}{b.note}") for b in bars) + 16
    plot_w = max(120.0, width - label_w - right)
    axis = ticks(0.0, max(max(b.high or b.value, b.value) for b in bars) or 1.0)
    scale = plot_w / axis[-1]
    row, top = bar_height + 10, 8
    plot_h = len(bars) * row
    height = top + plot_h + 44
    parts = [_svg("bars", width, height, axis_title or unit)]
    for t in axis:  # grid and tick labels under the plot
        x = label_w + t * scale
        parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" '
                     f'y2="{top + plot_h}" stroke="{GRID}"/>')
        parts.append(_text(x, top + plot_h + 15, number(t), "tick", "middle", 11))
    parts.append(_text(label_w + plot_w / 2, top + plot_h + 34, axis_title or unit,
                       "axis-label", "middle"))
    for i, b in enumerate(bars):
        y = top + i * row + 4
        w = max(1.0, b.value * scale)
        spread = (f" (p5–p95 {number(b.low)}–{number(b.high)})"
                  if b.low is not None and b.high is not None else "")
        hover = f"<title>{escape(b.label)}: {number(b.value)} {escape(unit)}{escape(b.note)}{spread}</title>"
        parts.append(_text(label_w - 8, y + bar_height * 0.72, b.label, "label", "end"))
        parts.append(f'<rect class="bar" x="{label_w:.1f}" y="{y}" width="{w:.1f}" '
                     f'height="{bar_height}" rx="2" fill="{ORANGE if b.best else BLUE}">{hover}</rect>')
        end = label_w + w
        if b.low is not None and b.high is not None:
            x1, x2, ym = label_w + b.low * scale, label_w + b.high * scale, y + bar_height / 2
            parts.append(f'<path class="whisker" d="M{x1:.1f},{ym - 5:.1f}v10M{x1:.1f},{ym:.1f}'
                         f'H{x2:.1f}M{x2:.1f},{ym - 5:.1f}v10" stroke="{INK}" stroke-width="1.5" '
                         f'fill="none">{hover}</path>')
            end = max(end, x2)
        parts.append(_text(end + 6, y + bar_height * 0.72, f"{number(b.value)} {unit}{b.note}",
                           "value"))
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    kind: str = "node"  # legend group: "node" or "cluster"
    href: str = ""


def scatter_chart(points: Sequence[Point], x_title: str, y_title: str, corner: str,
                  legend: dict[str, str], width: int = 680, height: int = 360) -> str:
    """Each candidate a point (price across, score up); the cheap-and-good corner, under the
    median price and over the median score, shaded and named."""
    if not points:
        return ""
    left, right, top, bottom = 64, 24, 28, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    xs = ticks(0.0, max(p.x for p in points) * 1.05 or 1.0)
    ys = ticks(0.0, 100.0)
    sx, sy = plot_w / xs[-1], plot_h / ys[-1]

    def at(x: float, y: float) -> tuple[float, float]:
        return left + x * sx, top + plot_h - y * sy

    parts = [_svg("scatter", width, height, f"{x_title} / {y_title}")]
    mx = sorted(p.x for p in points)[len(points) // 2]
    my = sorted(p.y for p in points)[len(points) // 2]
    cx, cy = at(mx, my)
    parts.append(f'<rect class="corner" x="{left}" y="{top}" width="{cx - left:.1f}" '
                 f'height="{cy - top:.1f}" fill="#e3f4e8"/>')
    parts.append(_text(left + 6, top + 16, corner, "corner-label", size=12))
    for t in xs:
        x, _ = at(t, 0)
        parts.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" '
                     f'stroke="{GRID}"/>')
        parts.append(_text(x, top + plot_h + 15, number(t), "tick", "middle", 11))
    for t in ys:
        _, y = at(0, t)
        parts.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{GRID}"/>')
        parts.append(_text(left - 6, y + 4, number(t), "tick", "end", 11))
    parts.append(_text(left + plot_w / 2, height - 10, x_title, "axis-label", "middle"))
    parts.append(_text(16, top + plot_h / 2, y_title, "axis-label", "middle",
                       extra=f' transform="rotate(-90 16 {top + plot_h / 2:.1f})"'))
    colours = {"node": BLUE, "cluster": ORANGE}
    for i, p in enumerate(points):
        x, y = at(p.x, p.y)
        mark = (f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="5" '
                f'fill="{colours.get(p.kind, GREY)}"><title>{escape(p.label)}: {number(p.x)} · '
                f'{number(p.y)}</title></circle>')
        parts.append(f'<a href="{escape(p.href)}">{mark}</a>' if p.href else mark)
        if len(points) <= 12:  # names beside the points, alternately above and below
            parts.append(_text(x + 7, y + (-6 if i % 2 == 0 else 14), p.label, "point-label",
                               size=11))
    lx = left + plot_w
    for i, (kind, words) in enumerate(legend.items()):
        y = top - 14
        x = lx - (len(legend) - i) * 110
        parts.append(f'<circle class="legend" cx="{x:.1f}" cy="{y - 4}" r="5" '
                     f'fill="{colours.get(kind, GREY)}"/>')
        parts.append(_text(x + 9, y, words, "legend-label", size=11))
    parts.append("</svg>")
    return "".join(parts)


def line_chart(points: Sequence[tuple[datetime, float]], unit: str, y_title: str,
               x_title: str, width: int = 560, height: int = 210, time_title: str = "") -> str:
    """A node's history: one point per measurement at its date, with dated x ticks and a
    value axis in the metric's unit. Points all of one day are ticked by time of day, under
    ``time_title`` (its %(date)s: that day) when one is given: a date title over times
    read as dates."""
    if not points:
        return ""
    left, right, top, bottom = 62, 18, 14, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [v for _, v in points]
    ys = ticks(min(0.0, min(values)), max(values) or 1.0, 4)
    t0, t1 = points[0][0].timestamp(), points[-1][0].timestamp()
    span = (t1 - t0) or 1.0

    def at(when: datetime, v: float) -> tuple[float, float]:
        x = left + (plot_w / 2 if t1 == t0 else (when.timestamp() - t0) / span * plot_w)
        return x, top + plot_h - (v - ys[0]) / (ys[-1] - ys[0]) * plot_h

    parts = [_svg("history", width, height, y_title)]
    for t in ys:
        _, y = at(points[0][0], t)
        parts.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                     f'stroke="{GRID}"/>')
        parts.append(_text(left - 6, y + 4, number(t), "tick", "end", 11))
    one_day = points[0][0].date() == points[-1][0].date()
    shown = points if len(points) <= 4 else [points[round(i * (len(points) - 1) / 3)] for i in range(4)]
    for when, _v in dict.fromkeys(shown):
        x, _ = at(when, ys[0])
        parts.append(_text(x, top + plot_h + 15, when.strftime("%H:%M" if one_day else "%Y-%m-%d"),
                           "tick", "middle", 11))
    day = f"{points[0][0]:%Y-%m-%d}"
    if one_day:
        x_title = time_title % {"date": day} if time_title else f"{x_title} ({day})"
    parts.append(_text(left + plot_w / 2, height - 8, x_title, "axis-label", "middle"))
    title = f"{y_title} ({unit})" if text_width(f"{y_title} ({unit})", 11) < plot_h else unit
    parts.append(_text(14, top + plot_h / 2, title, "axis-label", "middle",
                       size=11, extra=f' transform="rotate(-90 14 {top + plot_h / 2:.1f})"'))
    xy = [at(when, v) for when, v in points]
    parts.append(f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}" fill="none" '
                 f'stroke="{BLUE}" stroke-width="2"/>')
    for (x, y), (when, v) in zip(xy, points, strict=True):
        parts.append(f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{BLUE}">'
                     f'<title>{when:%Y-%m-%d %H:%M}: {number(v)} {escape(unit)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class LinkCell:
    source: str
    target: str
    gbps: float | None
    rtt_ms: float | None
    confirmed: bool
    agreed: bool = False  # both ends counted the same, but they are one provider's hosts


@dataclass(frozen=True)
class MatrixWords:
    sender: str = "sender"
    receiver: str = "receiver"
    confirmed: str = "confirmed by both ends"
    unconfirmed: str = "not confirmed by the receiver"
    agreed: str = "both ends agree, but both are the provider's hosts"


def link_matrix(names: Sequence[str], cells: Sequence[LinkCell], words: MatrixWords | None = None,
                cell_w: int = 64, cell_h: int = 30) -> str:
    """A heat map of every ordered pair, sender by row and receiver by column, coloured by
    throughput against the fastest link shown (red slow, green fast), with its colour scale;
    RTT and whether both ends agree on hover."""
    if not names or not cells:
        return ""
    words = words or MatrixWords()
    label_w = min(200.0, max(text_width(n, 11) for n in names) + 34)
    head_h = 34 + max(text_width(n, 11) for n in names) * 0.6
    index = {n: i for i, n in enumerate(names)}
    fastest = max((c.gbps for c in cells if c.gbps), default=0.0) or 1.0
    grid_w = len(names) * cell_w
    width = max(label_w + grid_w + 20, label_w + 260)
    height = head_h + len(names) * cell_h + 48
    parts = [_svg("links", width, height, f"{words.sender} → {words.receiver}")]
    parts.append(_text(label_w + grid_w / 2, 14, f"{words.receiver} →", "axis-label", "middle"))
    parts.append(_text(12, head_h + len(names) * cell_h / 2, f"{words.sender} →", "axis-label",
                       "middle", extra=f' transform="rotate(-90 12 {head_h + len(names) * cell_h / 2:.1f})"'))
    for n, i in index.items():
        x = label_w + i * cell_w + cell_w / 2
        parts.append(_text(x, head_h - 8, n, "label", size=11,
                           extra=f' transform="rotate(-35 {x:.1f} {head_h - 8:.1f})"'))
        parts.append(_text(label_w - 8, head_h + i * cell_h + cell_h * 0.65, n, "label", "end", 11))
    for c in cells:
        if c.source not in index or c.target not in index:
            continue
        x, y = label_w + index[c.target] * cell_w, head_h + index[c.source] * cell_h
        share = (c.gbps or 0.0) / fastest
        colour = f"hsl({120 * share:.0f}, 60%, {55 if c.gbps is not None else 90}%)"
        rtt = f", RTT {number(c.rtt_ms)} ms" if c.rtt_ms is not None else ""
        state = (words.confirmed if c.confirmed else words.agreed if c.agreed
                 else words.unconfirmed)
        figure = number(c.gbps) if c.gbps is not None else "–"
        parts.append(f'<rect class="cell" x="{x}" y="{y:.1f}" width="{cell_w - 2}" height="{cell_h - 2}" '
                     f'fill="{colour}"><title>{escape(c.source)} → {escape(c.target)}: '
                     f'{figure} Gbit/s{rtt} ({escape(state)})</title></rect>')
        parts.append(f'<text x="{x + cell_w / 2 - 1:.1f}" y="{y + cell_h * 0.62:.1f}" font-size="11" '
                     f'text-anchor="middle">{figure}{"" if c.confirmed else "*"}</text>')
    # The colour scale: 0 to the fastest link shown.
    ly = head_h + len(names) * cell_h + 16
    parts.append('<defs><linearGradient id="scale"><stop offset="0" stop-color="hsl(0,60%,55%)"/>'
                 '<stop offset="0.5" stop-color="hsl(60,60%,55%)"/>'
                 '<stop offset="1" stop-color="hsl(120,60%,55%)"/></linearGradient></defs>')
    parts.append(f'<rect class="scale" x="{label_w}" y="{ly}" width="160" height="10" fill="url(#scale)"/>')
    parts.append(_text(label_w, ly + 24, "0", "tick", "middle", 10))
    parts.append(_text(label_w + 160, ly + 24, f"{number(fastest)} Gbit/s", "tick", "middle", 10))
    parts.append("</svg>")
    return "".join(parts)
