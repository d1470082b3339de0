"""The figure vocabulary every lesson draws with: plain Plotly dicts, one house style.

- `HOUSE`: the layout every chart gets (ui/charts.py merges it into the template): chart text
  at least 14 px in a near-black that reads on a projector, colours from the theme, and the
  legend in a row above the plot area so it never covers data.
- `axis`, `log_axis`: axes always carry a title with its unit.
- `line`, `markers`, `bars`: traces coloured by role (lessons/theme.py), never by hex code.
- `block_grid`: the KV cache as a grid of blocks, one cell per block, as a single heatmap trace
  (cheap to animate even at thousands of blocks).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lessons.kit import story
from lessons.theme import color, palette

KIT_LABELS = Path(__file__).with_name("labels.md")


def kit_labels() -> dict[str, str]:
    """The kit's own chart words, from lessons/kit/labels.md (`- key :: words`)."""
    return story.labels(KIT_LABELS)


INK = "#1b1b1f"
GRID = "#d9d9de"
FONT_PX = 15
SMALL_PX = 14

HOUSE: dict = {
    "font": {"size": FONT_PX, "color": INK},
    "title": {
        "font": {"size": 18, "color": INK},
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        "automargin": True,
    },
    "colorway": list(palette()),
    "legend": {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "y": 1.0,
        "yanchor": "bottom",
        "font": {"size": SMALL_PX, "color": INK},
        "bgcolor": "rgba(255,255,255,0)",
    },
    "hoverlabel": {"font": {"size": SMALL_PX}},
    "xaxis": {
        "title": {"font": {"size": FONT_PX, "color": INK}},
        "tickfont": {"size": SMALL_PX, "color": INK},
        "gridcolor": GRID,
        "automargin": True,
    },
    "yaxis": {
        "title": {"font": {"size": FONT_PX, "color": INK}},
        "tickfont": {"size": SMALL_PX, "color": INK},
        "gridcolor": GRID,
        "automargin": True,
    },
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
    "margin": {"l": 70, "r": 30, "t": 90, "b": 60},
}


def merge(base: dict, top: dict) -> dict:
    """`top` laid over `base`, nested dicts merged key by key (neither is changed)."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def axis(title: str, **extra) -> dict:
    """A linear axis; the title names the quantity and its unit, e.g. "step time (ms)"."""
    if "(" not in title:
        raise ValueError(f"axis title {title!r} needs its unit in brackets")
    return {"title": {"text": title}, **extra}


def count_top(counts) -> float:
    """The top of a count axis: a little above the largest count (1 when all are 0)."""
    return max(float(np.max(counts, initial=0)), 1.0) * 1.08


def count_axis(title: str, top: float, **extra) -> dict:
    """An axis of counts from 0 to `top`: whole-number ticks while it is short (Plotly would
    put 0.5 and 1.5 on a near-empty one)."""
    small = {"dtick": 1} if top < 6 else {}
    return axis(title, range=[0, top], **small, **extra)


def category_axis(title: str, **extra) -> dict:
    """An axis of names (policies, classes, methods): no unit to bracket, so none is asked."""
    if "(" in title:
        raise ValueError(f"category axis title {title!r} names things; it has no unit")
    return {"title": {"text": title}, "type": "category", **extra}


def log_axis(title: str, **extra) -> dict:
    """A log axis with a tick per decade."""
    return axis(title, type="log", dtick=1, **extra)


def line(
    x: Sequence, y: Sequence, name: str, role: str, *, dash: str | None = None, **extra
) -> dict:
    """A line trace in the role's colour."""
    style = {"color": color(role), "width": 3}
    if dash:
        style["dash"] = dash
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": list(x),
        "y": list(y),
        "line": style,
        **extra,
    }


def markers(x: Sequence, y: Sequence, name: str, role: str, *, size: int = 12, **extra) -> dict:
    """Markers in the role's colour (diamonds: they stay visible on top of lines)."""
    marker = {"size": size, "color": color(role), "symbol": "diamond"}
    return {
        "type": "scatter",
        "mode": "markers",
        "name": name,
        "x": list(x),
        "y": list(y),
        "marker": marker,
        **extra,
    }


def bars(
    x: Sequence, y: Sequence, name: str, role: str, *, horizontal: bool = False, **extra
) -> dict:
    """Bars in the role's colour; horizontal bars take the values on x."""
    trace = {
        "type": "bar",
        "name": name,
        "x": list(x),
        "y": list(y),
        "marker": {"color": color(role)},
    }
    if horizontal:
        trace["orientation"] = "h"
    return {**trace, **extra}


FREE, NULL, CACHED = -1, -2, -3  # as sim.blocks.owners marks them
OUTSIDE = -4  # a cell of the last row past the end of the pool
CACHED_TINT = "#b0b0b0"  # a free block that still holds a cached prefix: a darker grey than free
# (a pale blue was taken for the palette's sky blue, a request's colour)
FREE_TINT = "#eeeeee"


SHIFT = -OUTSIDE  # cells are sent as owner + SHIFT, so every value is a small unsigned number


def grid_z(owner: np.ndarray, columns: int = 64) -> dict:
    """The heatmap z of a block grid: rows of `columns` blocks, OUTSIDE past the end of the pool,
    each value sent as owner + SHIFT. It goes to the browser as a packed typed array (Plotly's
    base64 `bdata` with a shape), one unsigned byte per block for up to 251 requests. Small
    unsigned values keep base64's "/" (which Plotly's JSON writes as six characters) rare.
    A frame of an animated grid carries only this."""
    owner = np.asarray(owner, dtype=np.int64)
    rows = -(-owner.size // columns)
    small = owner.size == 0 or int(owner.max()) + SHIFT < 256
    z = np.full(rows * columns, 0, dtype=np.uint8 if small else np.uint16)
    z[: owner.size] = owner + SHIFT
    return {
        "dtype": "u1" if small else "u2",
        "bdata": base64.b64encode(z.tobytes()).decode("ascii"),
        "shape": f"{rows}, {columns}",
    }


def grid_owners(value: object) -> np.ndarray:
    """The owner values (request index, FREE, NULL, CACHED, OUTSIDE) of a `grid_z`, 2-D."""
    raw = value
    arr = np.frombuffer(base64.b64decode(raw["bdata"]), dtype=np.dtype(raw["dtype"]))
    shape = [int(n) for n in str(raw["shape"]).split(",")]
    return arr.astype(np.int64).reshape(shape) - SHIFT


def block_grid(owner: np.ndarray, columns: int = 64, *, owners: int | None = None) -> dict:
    """The KV pool as a heatmap: cell b is block b, coloured by the request that holds it.

    `owner[b]` is the request index holding block b, FREE (-1) for a free block, CACHED (-3) for
    a free block that keeps a cached prefix (prefix caching), NULL (-2) for vLLM's null block
    (block 0, never handed out). Returns one heatmap trace (z as `grid_z` sends it); cells past
    the end of the pool are white. Request colours cycle through the theme palette without its
    black (the null block's); `owners` is the number of requests (default: the largest index
    seen plus one).
    """
    owner = np.asarray(owner, dtype=np.int64)
    rows = -(-owner.size // columns)
    pal = [c for c in palette() if c.lower() != "#000000"]
    k = len(pal)
    top = owners if owners is not None else max(int(owner.max(initial=0)), 0) + 1
    top = max(top, 1)
    stops = [(OUTSIDE, "#ffffff"), (CACHED, CACHED_TINT), (NULL, INK), (FREE, FREE_TINT)]
    stops += [(r, pal[r % k]) for r in range(top)]
    span = top - OUTSIDE
    scale = []
    for value, c in stops:
        lo, hi = (value - OUTSIDE) / span, (value + 1 - OUTSIDE) / span
        scale += [[lo, c], [min(hi, 1.0), c]]
    return {
        "type": "heatmap",
        "z": grid_z(owner, columns),
        "zmin": OUTSIDE + SHIFT,
        "zmax": top + SHIFT,
        "colorscale": scale,
        "showscale": False,
        "xgap": 1,
        "ygap": 1,
        "hovertemplate": kit_labels()["block-hover"],
        "customdata": np.where(
            np.arange(rows * columns) < owner.size, np.arange(rows * columns), -1
        ).reshape(rows, columns),
    }


# The parts of a step as sim.cost prices them: (field of StepCosts, label, colour role); the
# labels are lessons/kit/labels.md's `part-<field>`.
COST_PARTS = tuple(
    (name, kit_labels()[f"part-{name}"], role)
    for name, role in (
        ("linear_ms", "compute"),
        ("attention_ms", "attention"),
        ("lm_head_ms", "lm_head"),
        ("comm_ms", "comm"),
        ("overhead_ms", "overhead"),
    )
)


def log_ticks(lo_log: float, hi_log: float) -> list[float]:
    """1-2-5 tick values between two log10 bounds, so a log axis reads 10, 20, 50, 100, ..."""
    out = []
    for e in range(int(np.floor(lo_log)) - 1, int(np.ceil(hi_log)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if 10**lo_log <= v <= 10**hi_log:
                out.append(v)
    return out
