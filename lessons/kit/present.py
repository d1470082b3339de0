"""What presenter mode changes in a lesson: its prose cut to a brief, its charts made larger.

On a projector the class reads the charts, and the instructor says the rest. `brief()` keeps a
section's headings and the first sentence of its first paragraph (or first list item), so each
section keeps one short line; tables, code and the rest are left to the full page.
`presented()` returns a copy of a figure with every text at least `PRESENT_PX` (18 px at
1280x720 is the bar; the house style's 14-18 px grow by a third) and a taller plot, up to
`MAX_HEIGHT_PX` so that it fits a projector's screen, but never with a smaller plot area than
on the page (a chart taller than that on the page stays as tall, plus its larger top margin).
Pure functions: the page (ui/lesson_page.py, ui/charts.py) decides when they apply.
"""

from __future__ import annotations

import re
from typing import Any

from lessons.kit.figures import FONT_PX, HOUSE
from lessons.kit.legend import has_legend

PRESENT_PX = 20  # the smallest chart text when presenting
SCALE = 4 / 3  # house font sizes grow by this much (and never below PRESENT_PX)
HEIGHT_SCALE = 1.25
TOP_SCALE = 1.6  # the top margin, where the title and the legend rows sit
DEFAULT_HEIGHT_PX = 450  # Plotly's height when a figure sets none
# the tallest a presented chart gets: with the app's header it fits a 1280x720 projector whole
# (the memory grid and the watch dashboard grew to 918 and 775 px, taller than the screen)
MAX_HEIGHT_PX = 640
ROW_SPACING = 1.25  # labels of a y axis at least this many font sizes apart when presenting

# A sentence ends at . ! or ? followed by a space and a capital, a digit, a quote, a bracket
# or markup; "e.g. " and "i.e. " do not end one.
_END = re.compile(r"(?<!e\.g)(?<!i\.e)(?<!vs)[.!?](?=\s+[A-Z0-9*`(\"'_])")


def _first_sentence(paragraph: str) -> str:
    flat = " ".join(paragraph.split())
    for match in _END.finditer(flat):
        cut = flat[: match.end()]
        # never inside bold, italics or code: the markup must balance
        if cut.count("**") % 2 == 0 and cut.count("`") % 2 == 0:
            return cut
    return flat


def brief(markdown: str) -> str:
    """The headings of a section's Markdown and one short line: the first sentence of its first
    paragraph or list item (a table or code block is skipped). Empty stays empty."""
    headings: list[str] = []
    line = ""
    for block in re.split(r"\n\s*\n", markdown.strip()):
        block = block.strip()
        if not block:
            continue
        if block.startswith("#"):
            first, _, rest = block.partition("\n")
            headings.append(first)
            block = rest.strip()
            if not block:
                continue
        if line or block.startswith(("|", "```", "<", ">")):
            continue
        if block.startswith(("- ", "* ", "1. ")):
            item = re.split(r"\n(?=\s*(?:[-*]|\d+\.)\s)", block)[0]
            line = "- " + _first_sentence(re.sub(r"^(?:[-*]|\d+\.)\s+", "", item))
        else:
            line = _first_sentence(block)
    return "\n\n".join([*headings, line] if line else headings)


def _grow(size: float) -> float:
    return max(PRESENT_PX, round(size * SCALE))


def _fonts(node: Any, base: float) -> Any:
    """A copy of a layout or trace tree where every `font` has a size of at least PRESENT_PX."""
    if isinstance(node, list):
        return [_fonts(item, base) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("font", "tickfont", "textfont", "insidetextfont", "outsidetextfont") and (
            isinstance(value, dict)
        ):
            value = {**value, "size": _grow(value.get("size", base))}
            out[key] = value
        elif key in ("x", "y", "z", "customdata", "text", "hovertext", "ids"):
            out[key] = value  # data, not layout: copied by reference
        else:
            out[key] = _fonts(value, base)
    return out


def _sized(node: Any, house: dict) -> dict:
    """A layout element (title, legend, axis...) whose `font` is grown from its own size, else
    the house size for it (which the template would give)."""
    node = {"text": node} if isinstance(node, str) else dict(node or {})
    size = node.get("font", {}).get("size", house.get("font", {}).get("size", FONT_PX))
    node["font"] = {**node.get("font", {}), "size": _grow(size)}
    return node


def _rows_px(layout: dict) -> float:
    """The plot height (px) at which the labels of every y axis with fixed ticks (`tickvals`,
    or a category axis's `categoryarray`) are ROW_SPACING times their font size apart: Plotly
    drops category labels that would collide, and prints fixed ticks on top of each other."""
    need = 0.0
    for key, axis in layout.items():
        if not key.startswith("yaxis") or not isinstance(axis, dict):
            continue
        if axis.get("showticklabels") is False or axis.get("visible") is False:
            continue
        if "tickvals" in axis:
            ticks = sorted(float(v) for v in axis["tickvals"])
        elif axis.get("type") == "category" and "categoryarray" in axis:
            ticks = [float(i) for i in range(len(axis["categoryarray"]))]
        else:
            continue
        if len(ticks) < 2:
            continue
        gap = min(b - a for a, b in zip(ticks, ticks[1:], strict=False))
        lo, hi = axis.get("range") or (ticks[0] - gap / 2, ticks[-1] + gap / 2)
        lo, hi = sorted((float(lo), float(hi)))
        share = float(axis.get("domain", [0, 1])[1]) - float(axis.get("domain", [0, 1])[0])
        if gap <= 0 or share <= 0:
            continue
        font = float(axis.get("tickfont", {}).get("size", PRESENT_PX))
        need = max(need, ROW_SPACING * font * (hi - lo) / gap / share)
    return need


def presented(figure: dict) -> dict:
    """The figure as a projector shows it: all text at least PRESENT_PX, the plot taller.
    Only sizes change: the house template keeps every position (the legend above the plot)."""
    layout = figure.get("layout", {})
    base = float(layout.get("font", {}).get("size", FONT_PX))
    big = _fonts(layout, base)
    big["font"] = {**big.get("font", {}), "size": _grow(base)}
    for key in ("title", "legend", "hoverlabel"):
        big[key] = _sized(big.get(key), HOUSE.get(key, {}))
    for key in {"xaxis", "yaxis", *(k for k in layout if k.startswith(("xaxis", "yaxis")))}:
        axis = dict(big.get(key, {}))
        house = HOUSE[key[0] + "axis"]
        axis["title"] = _sized(axis.get("title"), house["title"])
        tick = axis.get("tickfont", {}).get("size", house["tickfont"]["size"])
        axis["tickfont"] = {**axis.get("tickfont", {}), "size": _grow(tick)}
        big[key] = axis
    # room above the plot for the title and a legend whose larger entries take more rows;
    # without a legend, only for the larger text (the memory grid's title and caption)
    margin = {**HOUSE["margin"], **layout.get("margin", {})}
    top = round(margin["t"] * (TOP_SCALE if has_legend(figure) else SCALE))
    big["margin"] = {**margin, "t": top}
    # taller, up to what a projector shows whole; but never a smaller plot area than on the
    # page: a tall chart (the step loop's 700 px) capped to MAX_HEIGHT_PX with larger text
    # lost category labels and ran its rows into one another
    height = float(layout.get("height", DEFAULT_HEIGHT_PX))
    tall = min(round(height * HEIGHT_SCALE), MAX_HEIGHT_PX)
    grown = max(tall, round(height) + top - margin["t"])
    # and tall enough that no two labels of a y axis overlap at the larger size
    plot = grown - top - margin.get("b", HOUSE["margin"]["b"])
    rows = _rows_px(big)
    big["height"] = grown + max(0, round(rows - plot))
    out = {**figure, "layout": big}
    if "data" in figure:
        out["data"] = [_fonts(trace, base) for trace in figure["data"]]
    if "frames" in figure:
        out["frames"] = [_fonts(frame, base) for frame in figure["frames"]]
    return out
