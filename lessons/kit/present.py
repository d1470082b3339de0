"""What presenter mode changes in a lesson: its prose cut to a brief, its charts made larger.

On a projector the class reads the charts, and the instructor says the rest. `brief()` keeps a
section's headings and the first sentence of its first paragraph (or first list item), so each
section keeps one short line; tables, code and the rest are left to the full page.
`presented()` returns a copy of a figure with every text at least `PRESENT_PX` (18 px at
1280x720 is the bar; the house style's 14-18 px grow by a third) and a taller plot, never
taller than `MAX_HEIGHT_PX`, so that it fits a projector's screen.
Pure functions: the page (ui/lesson_page.py, ui/charts.py) decides when they apply.
"""

from __future__ import annotations

import re
from typing import Any

from lessons.kit.figures import FONT_PX, HOUSE

PRESENT_PX = 20  # the smallest chart text when presenting
SCALE = 4 / 3  # house font sizes grow by this much (and never below PRESENT_PX)
HEIGHT_SCALE = 1.25
TOP_SCALE = 1.6  # the top margin, where the title and the legend rows sit
DEFAULT_HEIGHT_PX = 450  # Plotly's height when a figure sets none
# the tallest a presented chart gets: with the app's header it fits a 1280x720 projector whole
# (the memory grid and the watch dashboard grew to 918 and 775 px, taller than the screen)
MAX_HEIGHT_PX = 640

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
    tall = round(float(layout.get("height", DEFAULT_HEIGHT_PX)) * HEIGHT_SCALE)
    big["height"] = min(tall, MAX_HEIGHT_PX)
    # room above the plot for the title and a legend whose larger entries take more rows
    margin = {**HOUSE["margin"], **layout.get("margin", {})}
    big["margin"] = {**margin, "t": round(margin["t"] * TOP_SCALE)}
    out = {**figure, "layout": big}
    if "data" in figure:
        out["data"] = [_fonts(trace, base) for trace in figure["data"]]
    if "frames" in figure:
        out["frames"] = [_fonts(frame, base) for frame in figure["frames"]]
    return out
