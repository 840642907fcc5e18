"""Charts for the staff console, drawn on the server as inline SVG from lists of numbers:
bars, lines and a funnel. They know no app and load nothing (no script, no CDN): the page
carries the picture. Each chart is an `<svg role="img">` whose `<title>` and `<desc>`
say what it shows, with a `<title>` on every bar, point and stage, so a screen reader (or
a hover) reads the figures; axes carry their labels and the largest value."""

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH = 720
HEIGHT = 240
# Room for the y axis labels (left), the x labels (bottom) and the legend (top).
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 28, 40
PALETTE = ("#417690", "#2e7d32", "#c62828", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037")
FONT = 'font-family="sans-serif" font-size="11"'
LEGEND_PER_ROW = 4

_ids = itertools.count(1)


@dataclass(frozen=True)
class Series:
    """One line of a line chart: its name (the legend) and one value per x label."""

    name: str
    values: Sequence[float]


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _nice_max(value: float) -> float:
    """The top of the y axis: the largest value rounded up to 1, 2 or 5 times a power of
    ten (1 when everything is zero)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def _open(kind: str, title: str, description: str, height: int = HEIGHT) -> tuple[str, str]:
    chart_id = f"chart-{next(_ids)}"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="console-chart console-chart-{kind}" '
        f'role="img" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        'style="max-width:100%;height:auto" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc">'
        f'<title id="{chart_id}-title">{escape(title)}</title>'
        f'<desc id="{chart_id}-desc">{escape(description)}</desc>'
    )
    # The title is also shown above the picture, for those who see it.
    return (
        f'<figure class="console-figure"><figcaption>{escape(title)}</figcaption>{head}',
        "</svg></figure>",
    )


def _y_axis(top: float, *, unit: str, plot_top: int = TOP) -> str:
    """The y axis: zero, half and the top, with light grid lines."""
    plot_bottom, plot_height = HEIGHT - BOTTOM, HEIGHT - plot_top - BOTTOM
    parts = []
    for fraction in (0.0, 0.5, 1.0):
        y = plot_bottom - fraction * plot_height
        parts.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
            'stroke="#ddd" stroke-width="1"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" {FONT} fill="#555">'
            f"{escape(_number(top * fraction))}</text>"
        )
    parts.append(
        f'<text x="12" y="{plot_top + plot_height / 2:.1f}" {FONT} fill="#555" '
        f'text-anchor="middle" transform="rotate(-90 12 {plot_top + plot_height / 2:.1f})">'
        f"{escape(unit)}</text>"
    )
    return "".join(parts)


def _x_labels(labels: Sequence[str], step: float, *, every: int) -> str:
    # A label longer than its room is cut short (the bar's own title has it whole).
    room = max(3, int(step * every / 6.5))
    parts = []
    for index, label in enumerate(labels):
        if index % every and index != len(labels) - 1:
            continue
        x = LEFT + step * (index + 0.5)
        shown = label if len(label) <= room else label[: room - 1] + "…"
        parts.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" {FONT} '
            f'fill="#555">{escape(shown)}</text>'
        )
    return "".join(parts)


def _label_every(count: int) -> int:
    # About ten labels at most, so dates do not run into each other.
    return max(1, math.ceil(count / 10))


def bar_chart(
    *, title: str, labels: Sequence[str], values: Sequence[float], unit: str = "count"
) -> SafeString:
    """One bar per label, the value on top of each bar."""
    if len(labels) != len(values):
        raise ValueError("A bar chart needs one value per label.")
    head, tail = _open(
        "bar",
        title,
        "; ".join(f"{label}: {_number(value)}" for label, value in zip(labels, values, strict=True))
        or "No data.",
    )
    top = _nice_max(max(values, default=0))
    plot_height = HEIGHT - TOP - BOTTOM
    step = (WIDTH - LEFT - RIGHT) / max(len(values), 1)
    bars = []
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        height = plot_height * value / top
        x, y = LEFT + step * index + step * 0.15, HEIGHT - BOTTOM - height
        bars.append(
            f'<g class="bar"><title>{escape(label)}: {escape(_number(value))}</title>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{step * 0.7:.1f}" height="{height:.1f}" '
            f'fill="{PALETTE[0]}"/>'
            f'<text x="{x + step * 0.35:.1f}" y="{y - 4:.1f}" text-anchor="middle" {FONT}>'
            f"{escape(_number(value))}</text></g>"
        )
    body = (
        _y_axis(top, unit=unit)
        + "".join(bars)
        + _x_labels(labels, step, every=_label_every(len(labels)))
    )
    return mark_safe(head + body + tail)  # noqa: S308 (every text above is escaped)


def line_chart(
    *, title: str, labels: Sequence[str], series: Sequence[Series], unit: str = "count"
) -> SafeString:
    """One line per series over the labels (days), a legend above."""
    for line in series:
        if len(line.values) != len(labels):
            raise ValueError(f"The series {line.name!r} needs one value per label.")
    totals = ", ".join(f"{line.name} {_number(sum(line.values))}" for line in series)
    head, tail = _open(
        "line",
        title,
        f"From {labels[0]} to {labels[-1]}; totals: {totals}." if labels else "No data.",
    )
    top = _nice_max(max((max(line.values, default=0) for line in series), default=0))
    # The legend takes a row per LEGEND_PER_ROW series above the plot.
    plot_top = TOP + 14 * ((max(len(series), 1) - 1) // LEGEND_PER_ROW)
    plot_height = HEIGHT - plot_top - BOTTOM
    step = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    parts = [_y_axis(top, unit=unit, plot_top=plot_top)]
    for number, line in enumerate(series):
        colour = PALETTE[number % len(PALETTE)]
        points = [
            (LEFT + step * (index + 0.5), HEIGHT - BOTTOM - plot_height * value / top)
            for index, value in enumerate(line.values)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        dots = "".join(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}">'
            f"<title>{escape(line.name)} on {escape(label)}: {escape(_number(value))}</title>"
            "</circle>"
            for (x, y), label, value in zip(points, labels, line.values, strict=True)
        )
        legend_x = LEFT + (number % LEGEND_PER_ROW) * 160
        legend_y = 8 + 14 * (number // LEGEND_PER_ROW)
        parts.append(
            f'<g class="series" data-series="{escape(line.name)}">'
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>{dots}'
            f'<rect x="{legend_x}" y="{legend_y}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{legend_x + 14}" y="{legend_y + 9}" {FONT}>{escape(line.name)}</text></g>'
        )
    parts.append(_x_labels(labels, step, every=_label_every(len(labels))))
    return mark_safe(head + "".join(parts) + tail)  # noqa: S308 (every text above is escaped)


def funnel_chart(*, title: str, stages: Sequence[tuple[str, float]]) -> SafeString:
    """One horizontal bar per stage, as wide as its share of the first stage, with the
    count and that share written beside it."""
    first = stages[0][1] if stages else 0
    row = 26
    height = TOP + row * max(len(stages), 1) + 8
    head, tail = _open(
        "funnel",
        title,
        "; ".join(f"{label}: {_number(value)}" for label, value in stages) or "No data.",
        height=height,
    )
    label_width, usable = 150, WIDTH - 150 - RIGHT - 110
    parts = []
    for index, (label, value) in enumerate(stages):
        share = value / first if first else 0.0
        width = usable * min(share, 1.0)
        y = TOP + row * index
        percent = f"{share:.0%}" if first else "—"
        of_first = f"{percent} of {stages[0][0]}"
        parts.append(
            f'<g class="stage" data-stage="{escape(label)}">'
            f"<title>{escape(label)}: {escape(_number(value))} ({escape(of_first)})</title>"
            f'<text x="{label_width - 8}" y="{y + 15}" text-anchor="end" {FONT}>{escape(label)}'
            "</text>"
            f'<rect x="{label_width}" y="{y + 3}" width="{max(width, 1):.1f}" height="{row - 8}" '
            f'fill="{PALETTE[0]}"/>'
            f'<text x="{label_width + max(width, 1) + 6:.1f}" y="{y + 15}" {FONT}>'
            f"{escape(_number(value))} ({percent})</text></g>"
        )
    return mark_safe(head + "".join(parts) + tail)  # noqa: S308 (every text above is escaped)
