"""Scatter plots as SVG, written by hand (no plotting library): TTFA against first-sentence
length, one series per server; a series may join its points (a curve against load). Small on
purpose: axes with ticks, points, a legend, a title; ``stack_svg`` puts charts one above the
other in one document."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

__all__ = ["Series", "scatter_svg", "stack_svg"]

_WIDTH, _HEIGHT = 720, 420
_LEFT, _RIGHT, _TOP, _BOTTOM = 70, 170, 40, 55
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]  # (x, y)
    connect: bool = False  # join the points in order with a line


def _ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``high``."""
    if high <= 0:
        return [0.0, 1.0]
    raw = high / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(math.ceil(high / step) + 1)]


def scatter_svg(title: str, x_label: str, y_label: str, series: Sequence[Series]) -> str:
    """An SVG document plotting every series' points on shared axes starting at 0."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    x_ticks, y_ticks = _ticks(max(xs, default=1.0)), _ticks(max(ys, default=1.0))
    plot_w = _WIDTH - _LEFT - _RIGHT
    plot_h = _HEIGHT - _TOP - _BOTTOM

    def px(x: float) -> float:
        return _LEFT + plot_w * x / x_ticks[-1]

    def py(y: float) -> float:
        return _TOP + plot_h * (1 - y / y_ticks[-1])

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{_WIDTH}" height="{_HEIGHT}" fill="white"/>',
        f'<text x="{_LEFT}" y="22" font-size="15">{escape(title)}</text>',
    ]
    for t in x_ticks:
        out.append(
            f'<line x1="{px(t):.1f}" y1="{_TOP}" x2="{px(t):.1f}" y2="{_TOP + plot_h}" '
            'stroke="#eee"/>'
        )
        out.append(
            f'<text x="{px(t):.1f}" y="{_TOP + plot_h + 18}" text-anchor="middle">{t:g}</text>'
        )
    for t in y_ticks:
        out.append(
            f'<line x1="{_LEFT}" y1="{py(t):.1f}" x2="{_LEFT + plot_w}" y2="{py(t):.1f}" '
            'stroke="#eee"/>'
        )
        out.append(f'<text x="{_LEFT - 8}" y="{py(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    out += [
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#333"/>',
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_HEIGHT - 14}" text-anchor="middle">'
        f"{escape(x_label)}</text>",
        f'<text transform="translate(18 {_TOP + plot_h / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>',
    ]
    for index, s in enumerate(series):
        colour = _COLOURS[index % len(_COLOURS)]
        if s.connect and len(s.points) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in s.points)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}"/>')
        for x, y in s.points:
            out.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}" '
                'fill-opacity="0.75"/>'
            )
        legend_y = _TOP + 18 + 20 * index
        out.append(
            f'<circle cx="{_LEFT + plot_w + 20}" cy="{legend_y - 4}" r="5" fill="{colour}"/>'
        )
        out.append(f'<text x="{_LEFT + plot_w + 32}" y="{legend_y}">{escape(s.label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def stack_svg(charts: Sequence[str]) -> str:
    """Charts made by ``scatter_svg``, one above the other, as one SVG document."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{_HEIGHT * len(charts)}" viewBox="0 0 {_WIDTH} {_HEIGHT * len(charts)}">'
    ]
    for index, chart in enumerate(charts):
        inner = chart.replace("<svg ", f'<svg y="{_HEIGHT * index}" ', 1)
        parts.append(inner.strip())
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
