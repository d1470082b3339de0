"""What presenter mode changes in a lesson: its prose cut to a brief, its charts made larger.

On a projector the class reads the charts, and the instructor says the rest. `brief()` keeps a
section's headings and the first sentence of its first paragraph (or first list item), so each
section keeps one short line; tables, code and the rest are left to the full page.
`presented()` returns a copy of a figure with every text at least `PRESENT_PX` (18 px at
1280x720 is the bar; the house style's 14-18 px grow by a third) and a taller plot, up to
`MAX_HEIGHT_PX` so that it fits a projector's screen, but never with a smaller plot area than
on the page (a chart taller than that on the page stays as tall, plus its larger top margin).
`_fit` keeps every text inside the chart on the narrowest projector served, 1024x768 (its
chart is CHART_MIN_PX wide): the title starts at the chart's left edge and shrinks (never below
PRESENT_PX) or wraps to fit, and annotations, text labels and x-axis titles wrap to the width
they have. Pure functions: the page (ui/lesson_page.py, ui/charts.py) decides when they apply.
"""

from __future__ import annotations

import re
from typing import Any

from lessons.kit.figures import FONT_PX, HOUSE
from lessons.kit.legend import CHAR_EM, CHART_MIN_PX, LINE_EM, has_legend, text_px, wrap

PRESENT_PX = 20  # the smallest chart text when presenting
SCALE = 4 / 3  # house font sizes grow by this much (and never below PRESENT_PX)
HEIGHT_SCALE = 1.25
TOP_SCALE = 1.6  # the top margin, where the title and the legend rows sit
DEFAULT_HEIGHT_PX = 450  # Plotly's height when a figure sets none
# the tallest a presented chart gets: with the app's header it fits a 1280x720 projector whole
# (the memory grid and the watch dashboard grew to 918 and 775 px, taller than the screen)
MAX_HEIGHT_PX = 640
ROW_SPACING = 1.25  # labels of a y axis at least this many font sizes apart when presenting
TITLE_PAD_PX = 12  # the title's distance from the chart's left edge when presenting

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


def _left_px(layout: dict) -> float:
    """An estimate of the plot's left edge (px): the left margin, or the widest tick label and
    the title of a y axis on the left of the plot, whichever is wider (Plotly's automargin)."""
    left = float(layout.get("margin", {}).get("l", 0))
    for key, axis in layout.items():
        if not key.startswith("yaxis") or not isinstance(axis, dict) or axis.get("side") == "right":
            continue
        anchor = layout.get("xaxis" + axis.get("anchor", "x")[1:], {})
        if axis.get("visible") is False or float(anchor.get("domain", [0, 1])[0]) > 0:
            continue
        labels = axis.get("ticktext") or axis.get("categoryarray") or ["0000"]
        chars = 0 if axis.get("showticklabels") is False else max(len(str(x)) for x in labels)
        title = axis.get("title", {})
        text = title.get("text") if isinstance(title, dict) else title
        size = float(axis.get("tickfont", {}).get("size", PRESENT_PX))
        px = CHAR_EM * size * chars + (LINE_EM * PRESENT_PX if text else 0) + 12
        left = max(left, px)
    return left


def _wrap_texts(texts: Any, width: float, size: float) -> Any:
    if isinstance(texts, list):
        return [wrap(t, width, size) if isinstance(t, str) else t for t in texts]
    return wrap(texts, width, size) if isinstance(texts, str) else texts


def _fit_title(big: dict, frames: list[dict]) -> float:
    """The title at the chart's left edge, its font shrunk (to PRESENT_PX at least) or its
    lines wrapped so that it fits CHART_MIN_PX, in the layout and in every frame; returns the
    room (px) the lines it gained take."""
    title = big.get("title", {})
    size = float(title.get("font", {}).get("size", PRESENT_PX))
    shown = [title] + [f["layout"]["title"] for f in frames if "title" in f.get("layout", {})]
    texts = [str(t.get("text") or "") for t in shown]
    room = CHART_MIN_PX - 2 * TITLE_PAD_PX
    widest = max(text_px(t, size) for t in texts)
    if widest <= 0:
        return 0.0
    if widest > room:
        size = max(PRESENT_PX, int(size * room / widest))
    big["title"] = {
        **title,
        "xref": "container",
        "x": 0,
        "xanchor": "left",
        "pad": {**title.get("pad", {}), "l": TITLE_PAD_PX},
        "font": {**title.get("font", {}), "size": size},
    }
    shown[0] = big["title"]
    gained = 0
    for node, text in zip(shown, texts, strict=True):
        node["text"] = wrap(text, room, size)
        gained = max(gained, node["text"].count("<br>") - text.count("<br>"))
    return gained * LINE_EM * size


def _fit(big: dict, data: list[dict], frames: list[dict]) -> float:
    """Keep every text inside a chart CHART_MIN_PX wide (see the module's docstring), in the
    copies `presented` made; returns the room (px) that more lines need above the plot."""
    extra = _fit_title(big, frames)
    width = CHART_MIN_PX - _left_px(big) - float(big.get("margin", {}).get("r", 30))

    def share(axis: str) -> float:
        lo, hi = big.get("xaxis" + axis[1:], {}).get("domain", [0, 1])
        return max(0.0, float(hi) - float(lo))

    for key, axis in list(big.items()):
        title = axis.get("title") if key.startswith("xaxis") and isinstance(axis, dict) else None
        if isinstance(title, dict) and title.get("text"):
            size = float(title.get("font", {}).get("size", PRESENT_PX))
            room = width * share("x" + key[5:])
            big[key] = {**axis, "title": {**title, "text": wrap(title["text"], room, size)}}
    above = 0
    for holder in [big, *(f.get("layout", {}) for f in frames)]:
        notes = []
        for note in holder.get("annotations", []) or []:
            if note.get("xref", "paper") == "paper" and note.get("xanchor") == "left":
                size = float(note.get("font", {}).get("size", PRESENT_PX))
                text = wrap(note.get("text", ""), width * (1 - float(note.get("x", 0))), size)
                if note.get("yref") == "paper" and note.get("yanchor") == "bottom":
                    gained = text.count("<br>") - str(note.get("text", "")).count("<br>")
                    above = max(above, gained * LINE_EM * size)
                note = {**note, "text": text}
            notes.append(note)
        if notes:
            holder["annotations"] = notes
    # text labels drawn as a trace of their own (the step loop's status line)
    for i, trace in enumerate(data):
        if trace.get("mode") != "text":
            continue
        size = float(trace.get("textfont", {}).get("size", PRESENT_PX))
        room = width * share(trace.get("xaxis", "x"))
        data[i] = {**trace, "text": _wrap_texts(trace.get("text"), room, size)}
        for f, frame in enumerate(frames):
            where = frame.get("traces", list(range(len(frame.get("data", [])))))
            moved = [
                {**t, "text": _wrap_texts(t.get("text"), room, size)} if at == i else t
                for at, t in zip(where, frame.get("data", []), strict=False)
            ]
            frames[f] = {**frame, "data": moved}
    return extra + above


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
    data = [_fonts(trace, base) for trace in figure.get("data", [])]
    frames = [_fonts(frame, base) for frame in figure.get("frames", [])]
    top += round(_fit(big, data, frames))
    big["margin"]["t"] = top
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
        out["data"] = data
    if "frames" in figure:
        out["frames"] = frames
    return out
