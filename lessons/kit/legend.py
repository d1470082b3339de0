"""The room above a plot: whether Plotly draws a legend, and how tall the title and legend are.

The house legend sits in rows right above the plot (lessons/kit/figures.py HOUSE), and Plotly
grows the top margin to fit it, but not to fit the title above it as well: a chart whose legend
wraps into three rows printed its title on the legend's first row. `top_room` estimates the
rows the way Plotly lays a wrapped horizontal legend out (entries row by row, each column as
wide as its widest entry) at the width a 1280-pixel screen gives, and asks for a top margin
that holds both.

`text_px` and `wrap` estimate and bound a text's width the same way, for presenter mode on the
narrowest projector served (CHART_MIN_PX: the chart's width on a 1024x768 screen), where
Plotly neither wraps a title, an annotation or a text label nor keeps it inside the chart.
"""

from __future__ import annotations

import math
import re

from lessons.kit.figures import HOUSE, SMALL_PX

PLOT_WIDTH_PX = 740  # the legend's width in the page's main column on a 1280-pixel screen
CHAR_EM = 0.55  # a character's average width, in font sizes (Open Sans, Arial)
SYMBOL_PX = 46  # an entry's symbol and the gaps around its text
ROW_EM = 1.6  # a legend row's height, in font sizes
TITLE_PX = 32  # the title's line at the top of the chart, with the gap under it
LINE_EM = 1.3  # each further line of a title (a "<br>"), in its font sizes
CHART_MIN_PX = 864  # a chart's width in the main column of a 1024x768 screen, presenting
BOLD_EM = 0.58  # a bold character's average width, in font sizes
_TAG = re.compile(r"<[^>]*>")
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)


def has_legend(figure: dict) -> bool:
    """Whether Plotly draws the figure's legend: `layout.showlegend` if set, else (Plotly's
    default) when two or more traces would show in it, or one says it does. Heatmaps do not."""
    shown = figure.get("layout", {}).get("showlegend")
    if shown is not None:
        return bool(shown)
    traces = [t for t in figure.get("data", []) if t.get("type") != "heatmap"]
    listed = [t for t in traces if t.get("showlegend", True)]
    return len(listed) >= 2 or any(t.get("showlegend") is True for t in traces)


def _entries(figure: dict) -> list[str]:
    """The legend's entries: the names of the traces it lists (a legend group once)."""
    names, groups = [], set()
    for trace in figure.get("data", []):
        if trace.get("type") == "heatmap" or trace.get("showlegend") is False:
            continue
        group = trace.get("legendgroup")
        if group is not None and group in groups:
            continue
        groups.add(group)
        names.append(str(trace.get("name", "")))
    return names


def legend_rows(figure: dict) -> int:
    """The rows the legend takes at PLOT_WIDTH_PX (0 without a legend)."""
    names = _entries(figure) if has_legend(figure) else []
    if not names:
        return 0
    font = figure.get("layout", {}).get("legend", {}).get("font", {}).get("size", SMALL_PX)
    widths = [SYMBOL_PX + CHAR_EM * font * len(name) for name in names]
    for columns in range(len(widths), 0, -1):  # the most columns whose widest entries fit
        width = sum(max(widths[j::columns]) for j in range(columns))
        if width <= PLOT_WIDTH_PX:
            break
    return math.ceil(len(names) / columns)


def top_room(figure: dict) -> int:
    """The top margin (px) that holds the figure's title and its legend's rows, at least the one
    it sets (or the house's)."""
    layout = figure.get("layout", {})
    top = {**HOUSE["margin"], **layout.get("margin", {})}["t"]
    rows = legend_rows(figure)
    if not rows:
        return top
    title = layout.get("title", {})
    text = title.get("text", "") if isinstance(title, dict) else str(title)
    font = layout.get("legend", {}).get("font", {}).get("size", SMALL_PX)
    need = TITLE_PX if text else 8
    need += text.count("<br>") * LINE_EM * HOUSE["title"]["font"]["size"]
    return max(top, math.ceil(need + rows * ROW_EM * font))


def text_px(text: str, font: float) -> float:
    """The estimated width (px) of a text's longest line at a font size (tags not counted; a
    line with bold in it counted as bold)."""
    widths = [0.0]
    for line in _BREAK.split(str(text)):
        em = BOLD_EM if "<b>" in line.lower() else CHAR_EM
        widths.append(em * font * len(_TAG.sub("", line)))
    return max(widths)


def wrap(text: str, width_px: float, font: float) -> str:
    """The text with "<br>" between words wherever a line would be wider than width_px (a
    single word longer than that stays whole on its line)."""
    out = []
    for line in _BREAK.split(str(text)):
        if text_px(line, font) <= width_px:
            out.append(line)
            continue
        current = ""
        for word in line.split(" "):
            trial = f"{current} {word}" if current else word
            if current and text_px(trial, font) > width_px:
                out.append(current)
                trial = word
            current = trial
        out.append(current)
    return "<br>".join(out)
