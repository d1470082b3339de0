"""Figures of the lesson "Choosing the budget", drawn from its Readout through the kit: the
budget's trade (the longest step and the prompt's first token against the budget) and an
animation that walks through the budgets, one timed run per frame."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lessons.choosing_budget.placing import label_place
from lessons.choosing_budget.readout import Lane, Readout
from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import axis, line, log_ticks
from lessons.kit.story import fill
from lessons.theme import color

POW2_TICKS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
MAX_LANE_STEPS = 160  # steps drawn per animation frame (the window is cut there)
TEXT = Path(__file__).with_name("text.md")
NEAR_RIGHT = 16_384  # a budget line this far right has its label on its left (the edge is 32,768)


def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _range(values: np.ndarray, pad: float = 1.6) -> list[float]:
    """A log-axis range (log10 units) around finite `values`, padded by a factor."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return [float(np.log10(v.min() / pad)), float(np.log10(v.max() * pad))]


def _vline(
    x: int,
    label: str,
    role: str,
    dash: str,
    ranges: list[list[float]],
    *,
    left: bool,
    height: float = 1.0,
) -> tuple[list[dict], dict]:
    """A vertical line at budget `x` through both panels (traces named by the label), and its
    label in the upper panel (an annotation on a white backing, so that a line it crosses runs
    behind it): to the left or right of the line, its top at `height` (0 = bottom, 1 = top)."""
    lines = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": label,
            "x": [x, x],
            "y": [10**lo, 10**hi],
            "yaxis": yaxis,
            "line": {"color": color(role), "width": 2, "dash": dash},
            "hoverinfo": "skip",
            "showlegend": False,
        }
        for yaxis, (lo, hi) in zip(("y", "y2"), ranges, strict=True)
    ]
    lo, hi = ranges[0]
    note = {
        "text": label,
        "xref": "x",
        "yref": "y",
        "x": float(np.log10(x)),  # annotations on a log axis are placed in log10 units
        "y": lo + height * (hi - lo),
        "xanchor": "right" if left else "left",
        "yanchor": "top",
        "xshift": -4 if left else 4,
        "showarrow": False,
        "font": {"color": color(role)},
        "bgcolor": "rgba(255,255,255,0.85)",
    }
    return lines, note


def trade(r: Readout) -> dict:
    """Top: the longest step while the prompt is chunked in; bottom: the prompt's first token."""
    xs = r.curve_budgets.astype(np.float64).tolist()
    ends = [xs[0], xs[-1]]
    words = labels()
    ranges = [
        _range(np.append(r.curve_worst_ms, [r.decode_ms, r.target_ms])),
        _range(r.curve_ttft_s),
    ]
    data = [
        line(
            xs,
            r.curve_worst_ms.tolist(),
            words["worst"],
            "prefill",
            hovertemplate=words["worst-hover"],
        ),
        line(
            ends,
            [r.decode_ms] * 2,
            fill(words["decode-only"], {"ms": r.decode_ms}),
            "decode",
            dash="dot",
            hoverinfo="skip",
        ),
        line(
            ends,
            [r.target_ms] * 2,
            fill(words["target"], {"ms": r.target_ms}),
            "neutral",
            dash="dash",
            hoverinfo="skip",
        ),
        line(
            xs,
            r.curve_ttft_s.tolist(),
            words["ttft"],
            "kv",
            yaxis="y2",
            customdata=r.curve_steps.tolist(),
            hovertemplate=words["ttft-hover"],
        ),
    ]
    if r.has_pick:
        star = {
            "type": "scatter",
            "mode": "markers",
            "name": fill(words["pick"], {"budget": r.pick}),
            "x": [r.pick],
            "y": [r.pick_worst_ms],
            "marker": {"size": 14, "color": color("highlight"), "symbol": "star"},
            "hovertemplate": words["pick-hover"],
        }
        data += [star, {**star, "y": [r.pick_ttft_s], "yaxis": "y2", "showlegend": False}]
    # Labels near the right edge go left of their line. The two labels point away from each
    # other where they can, so that neither line crosses the other's label; each sits at a
    # height clear of the curve and of the other label (label_place), on a white backing.
    default_right = not r.is_default and r.budget < r.default_budget
    marked = []  # (budget, label key, role, dash, label on the left)
    if r.simulated:
        marked.append(
            (r.budget, "yours", "primary", "solid", r.budget >= NEAR_RIGHT or default_right)
        )
    if not r.is_default:
        left = r.default_budget >= NEAR_RIGHT or not default_right
        marked.append((r.default_budget, "default", "neutral", "dot", left))
    taken, notes = None, []
    for x, key, role, dash, left in marked:
        label = fill(words[key], {"budget": x})
        taken = label_place(r, x, label, left, ranges, taken)
        lines, note = _vline(x, label, role, dash, ranges, left=left, height=taken[0])
        data += lines
        notes.append(note)
    layout = {
        "title": {"text": fill(words["trade-title"], vars(r))},
        "xaxis": axis(
            words["budget-axis"],
            type="log",
            anchor="y2",
            tickvals=POW2_TICKS,
            ticktext=[f"{v:,}" for v in POW2_TICKS],
            range=[float(np.log10(r.budget_min / 1.1)), float(np.log10(r.budget_max * 1.1))],
        ),
        "yaxis": axis(
            words["step-axis"],
            type="log",
            domain=[0.56, 1.0],
            anchor="x",
            range=ranges[0],
            tickvals=log_ticks(*ranges[0]),
        ),
        "yaxis2": axis(
            words["ttft-axis"],
            type="log",
            domain=[0.0, 0.44],
            anchor="x",
            range=ranges[1],
            tickvals=log_ticks(*ranges[1]),
        ),
        "height": 580,  # presented with its larger legend: 640, a 1280x720 screen (kit/present.py)
        "annotations": notes,
    }
    return {"data": data, "layout": layout}


def _lane_traces(lane: Lane, window_ms: float, decodes: int) -> list[dict]:
    """One budget's first `window_ms` after the prompt arrives: its steps and the token ticks."""
    words = labels()
    keep = lane.start_ms < window_ms
    keep[MAX_LANE_STEPS:] = False
    n = int(min(lane.steps, keep.sum()))
    # Each prefill step is a rectangle: 5 corners and a NaN to lift the pen (one trace for all).
    s0, e0 = lane.start_ms[:n], np.minimum(lane.end_ms[:n], window_ms)
    nan = np.full(n, np.nan)
    xs = np.stack([s0, e0, e0, s0, s0, nan], axis=1).reshape(-1)
    ys = np.tile([0.15, 0.15, 0.85, 0.85, 0.15, np.nan], n)
    last_end = float(lane.end_ms[keep][-1]) if keep.any() else 0.0
    ticks = lane.tick_ms[(lane.tick_ms < window_ms) & (lane.tick_ms <= last_end)]
    first = [lane.ttft_ms] if lane.ttft_ms <= min(window_ms, last_end) else []
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "fill": "toself",
            "name": words["prefill"],
            "x": xs.tolist(),
            "y": ys.tolist(),
            "fillcolor": color("prefill"),
            "line": {"color": "white", "width": 1},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": words["ticks-one"]
            if decodes == 1
            else fill(words["ticks"], {"decodes": decodes}),
            "x": ticks.tolist(),
            "y": [1.5] * ticks.size,
            "marker": {
                "symbol": "line-ns",
                "size": 22,
                "line": {"width": 2, "color": color("decode")},
            },
            "hovertemplate": words["ticks-hover"],
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": words["first"],
            "x": first,
            "y": [0.5] * len(first),
            "marker": {"symbol": "star", "size": 18, "color": color("highlight")},
            "hovertemplate": words["first-hover"],
        },
    ]


def _lane_title(lane: Lane) -> str:
    return fill(labels()["lane-title"], {**vars(lane), "ttft_s": lane.ttft_ms / 1e3})


def budgets(r: Readout) -> dict:
    """Walk through the budgets: each frame shows the first moments after the prompt arrives.
    It opens at the frame of the learner's budget (or the nearest one)."""
    words = labels()
    frames = [
        {
            "data": _lane_traces(lane, r.window_ms, r.decodes),
            "traces": [0, 1, 2],
            "layout": {"title": {"text": _lane_title(lane)}},
        }
        for lane in r.frames
    ]
    figure = {
        "data": [dict(t) for t in frames[r.anim_start]["data"]],
        "layout": {
            "xaxis": axis(words["lane-axis"], range=[0, r.window_ms]),
            "yaxis": {
                "range": [0, 2],
                "tickvals": [0.5, 1.5],
                "ticktext": [words["lane-prompt"], words["lane-users"]],
                "title": {"text": words["lane-y-axis"]},
            },
            "height": 500,
        },
    }
    steps = [f"{lane.budget:,}" for lane in r.frames]
    return animate(figure, frames, steps, prefix=words["slider"] + " ", start=r.anim_start)
