"""Small SVG charts written directly (no plotting library, nothing fetched): line
charts on a linear or log scale with an optional band, and horizontal bars with
whiskers. Inline SVG in HTML needs no namespace declaration."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

WIDTH = 1000
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40
FONT = 12


@dataclass
class Line:
    label: str
    values: Sequence[float | None]  # one per x; None: no point
    color: str
    width: float = 2.0
    dash: str | None = None
    markers: bool = False


@dataclass
class Band:
    label: str
    low: Sequence[float]
    high: Sequence[float]
    color: str


@dataclass
class Bar:
    label: str
    value: float
    low: float | None = None  # whisker
    high: float | None = None
    color: str = "#4c78a8"
    text: str = ""  # written after the bar


@dataclass
class Chart:
    title: str
    x_label: str
    y_label: str
    lines: list[Line] = field(default_factory=list)
    band: Band | None = None
    log: bool = False
    height: int = 280
    floor: float | None = None  # log scale: values at or below it sit on the floor
    note: str = ""


def nice_ticks(low: float, high: float, count: int = 5, *, integer: bool = False) -> list[float]:
    if not math.isfinite(low) or not math.isfinite(high):
        return []
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    steps = (1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)
    step = min((m * magnitude for m in steps), key=lambda c: abs(c - raw))
    if integer:
        step = max(step, 1.0)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _text(x: float, y: float, content: str, cls: str = "tick", anchor: str = "start") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}" text-anchor="{anchor}">'
        f"{escape(content)}</text>"
    )


def _rule(x1: float, x2: float, y1: float, y2: float, cls: str) -> str:
    return f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{y1:.1f}" y2="{y2:.1f}" class="{cls}"/>'


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.0e}"
    return f"{value:g}"


def line_chart(chart: Chart) -> str:
    points = [v for line in chart.lines for v in line.values if v is not None]
    if chart.band is not None:
        points += [*chart.band.low, *chart.band.high]
    n = max((len(line.values) for line in chart.lines), default=0)
    height = chart.height
    plot_w, plot_h = WIDTH - LEFT - RIGHT, height - TOP - BOTTOM
    if not points or n == 0:
        return f'<p class="empty">{escape(chart.title)}: nothing recorded.</p>'
    if chart.log:
        floor = chart.floor or min((p for p in points if p > 0), default=1e-12)
        positive = [max(p, floor) for p in points]
        y_min = 10 ** math.floor(math.log10(floor))
        y_max = 10 ** math.ceil(math.log10(max(positive)))
        if y_max <= y_min:
            y_max = y_min * 10
        span = math.log10(y_max) - math.log10(y_min)

        def y_of(value: float) -> float:
            v = max(value, y_min)
            return TOP + plot_h * (1 - (math.log10(v) - math.log10(y_min)) / span)

        exponents = range(int(math.log10(y_min)), int(math.log10(y_max)) + 1)
        step = max(1, len(exponents) // 6)
        y_ticks = [10.0**e for e in exponents[::step]]
    else:
        low, high = min(points), max(points)
        pad = (high - low) * 0.05 or abs(high) * 0.05 or 1.0
        y_ticks = nice_ticks(low - pad, high + pad)
        y_min, y_max = min(y_ticks[0], low - pad), max(y_ticks[-1], high + pad)

        def y_of(value: float) -> float:
            return TOP + plot_h * (1 - (value - y_min) / (y_max - y_min))

    def x_of(index: int) -> float:
        return LEFT + plot_w * (index / max(n - 1, 1))

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="{escape(chart.title)}">',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="plot"/>',
    ]
    for tick in y_ticks:
        y = y_of(tick)
        if TOP - 0.5 <= y <= TOP + plot_h + 0.5:
            parts.append(_rule(LEFT, LEFT + plot_w, y, y, "grid"))
            parts.append(_text(LEFT - 6, y + 4, _fmt(tick), anchor="end"))
    for tick in nice_ticks(1, max(n, 2), 8, integer=True):
        index = int(tick) - 1
        if 0 <= index < n:
            parts.append(_text(x_of(index), TOP + plot_h + 16, str(int(tick)), anchor="middle"))
    parts.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{height - 6}" class="axis" text-anchor="middle">'
        f"{escape(chart.x_label)}</text>"
    )
    parts.append(
        f'<text x="14" y="{TOP + plot_h / 2:.1f}" class="axis" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(chart.y_label)}</text>'
    )
    if chart.band is not None:
        band = chart.band
        upper = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in enumerate(band.high))
        lower = " ".join(
            f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in reversed(list(enumerate(band.low)))
        )
        parts.append(
            f'<polygon points="{upper} {lower}" fill="{band.color}" '
            'fill-opacity="0.25" stroke="none"/>'
        )
    for line in chart.lines:
        segments: list[list[str]] = [[]]
        for i, v in enumerate(line.values):
            # a value on a log chart's floor stands for zero: a point, not a line
            on_floor = chart.log and chart.floor is not None and v is not None and v <= chart.floor
            if v is None or on_floor or (chart.log and v <= 0):
                segments.append([])
                continue
            segments[-1].append(f"{x_of(i):.1f},{y_of(v):.1f}")
        dash = f' stroke-dasharray="{line.dash}"' if line.dash else ""
        for segment in segments:
            if len(segment) > 1:
                parts.append(
                    f'<polyline points="{" ".join(segment)}" fill="none" stroke="{line.color}" '
                    f'stroke-width="{line.width}"{dash} stroke-linejoin="round"/>'
                )
            elif segment and not line.markers:  # a lone value between gaps: a dot
                cx, cy = segment[0].split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="2.5" fill="{line.color}"/>')
        if line.markers or n == 1:
            for i, v in enumerate(line.values):
                if v is None:
                    continue
                hollow = chart.log and chart.floor is not None and v <= chart.floor
                fill = "white" if hollow else line.color
                parts.append(
                    f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="3" fill="{fill}" '
                    f'stroke="{line.color}"/>'
                )
    parts.append("</svg>")
    legend = [
        f'<span class="key"><i style="background:{line.color}"></i>{escape(line.label)}</span>'
        for line in chart.lines
    ]
    if chart.band is not None:
        legend.append(
            f'<span class="key"><i style="background:{chart.band.color};opacity:.35"></i>'
            f"{escape(chart.band.label)}</span>"
        )
    note = f'<p class="note">{escape(chart.note)}</p>' if chart.note else ""
    return (
        f"<figure><figcaption>{escape(chart.title)}</figcaption>{''.join(parts)}"
        f'<div class="legend">{"".join(legend)}</div>{note}</figure>'
    )


def bar_chart(title: str, bars: Sequence[Bar], unit: str) -> str:
    if not bars:
        return ""
    row_h, label_w, text_w = 30, 110, 440
    plot_w = WIDTH - label_w - text_w - 16
    height = TOP + row_h * len(bars) + 24
    top = max(max(b.high or b.value for b in bars), 1e-12) * 1.05
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    for tick in nice_ticks(0, top, 4):
        x = label_w + plot_w * tick / top
        if x <= label_w + plot_w + 0.5:
            parts.append(_rule(x, x, TOP, height - 24, "grid"))
            parts.append(_text(x, height - 8, _fmt(tick), anchor="middle"))
    for i, bar in enumerate(bars):
        y = TOP + i * row_h
        width = plot_w * bar.value / top
        parts.append(_text(label_w - 8, y + row_h / 2 + 4, bar.label, "label", "end"))
        parts.append(
            f'<rect x="{label_w}" y="{y + 5}" width="{max(width, 1):.1f}" height="{row_h - 10}" '
            f'fill="{bar.color}" rx="2"/>'
        )
        if bar.low is not None and bar.high is not None:
            x1, x2 = label_w + plot_w * bar.low / top, label_w + plot_w * bar.high / top
            mid = y + row_h / 2
            parts.append(_rule(x1, x2, mid, mid, "whisker"))
            parts.append(_rule(x1, x1, mid - 5, mid + 5, "whisker"))
            parts.append(_rule(x2, x2, mid - 5, mid + 5, "whisker"))
        parts.append(_text(label_w + plot_w + 8, y + row_h / 2 + 4, bar.text, "label"))
    parts.append("</svg>")
    return (
        f'<figure><figcaption>{escape(title)} <span class="unit">({escape(unit)})</span>'
        f"</figcaption>{''.join(parts)}</figure>"
    )
