"""Figures of the lesson "The step loop", drawn from its Readout: one picture of a step (the two
lists, then per request the batch, the KV blocks held and the tokens streamed), as a still for
the stepper and as the frames of the animation, so both always agree.

Frames carry only what changes from step to step (Plotly merges a frame's trace into the
figure's trace); rows, axes, colours and hover text are added once by `_full`.
"""

from __future__ import annotations

from pathlib import Path

from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import axis
from lessons.kit.story import fill
from lessons.kit.timeline import KIND_NAMES
from lessons.step_loop.lesson import frame_of
from lessons.step_loop.readout import Readout
from lessons.theme import color, palette

TEXT = Path(__file__).with_name("text.md")
STATE_KEYS = ("state-waiting", "state-running", "state-finished")  # the state rows' labels
KIND_WORD = {kind: name.split()[0] for kind, name in enumerate(KIND_NAMES)}  # decode, prompt, ...
# The labels of a step's events, in the order the title tells them.
EVENT_KEYS = (
    "event-arrives",
    "event-admitted",
    "event-preempted",
    "event-continues",
    "event-finished",
)


def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _states() -> list[str]:
    """The three state rows (the queue, the running list, finished), as the chart names them."""
    words = labels()
    return [words[key] for key in STATE_KEYS]


def _rows(r: Readout) -> list[str]:
    return [*r.replay.names, labels()["row-spare"]]


def _state_points(r: Readout, k: int) -> dict:
    rep = r.replay
    xs: list[int] = []
    ys: list[str] = []
    text: list[str] = []
    cols: list[int] = []
    rows = (rep.waiting[k], rep.running[k], rep.done[k])
    for row, members in zip(_states(), rows, strict=True):
        for pos, q in enumerate(members, start=1):
            xs.append(pos)
            ys.append(row)
            text.append(rep.names[q])
            cols.append(q)
    return {
        "type": "scatter",
        "x": xs or [None],
        "y": ys or [None],
        "text": text or [""],
        "marker": {"color": cols or [0]},
    }


def _names(r: Readout, reqs: tuple[int, ...]) -> str:
    return ", ".join(r.replay.names[q] for q in reqs)


def _frame_title(r: Readout, k: int) -> str:
    rep = r.replay
    words = labels()
    events = []
    for key, reqs in zip(
        EVENT_KEYS,
        (rep.arrived[k], rep.admitted[k], rep.preempted[k], rep.continuing[k], rep.finished[k]),
        strict=True,
    ):
        if reqs:
            events.append(fill(words[key], {"names": _names(r, reqs)}))
    line = " · ".join(events) or words["decode-only"]
    work = words["no-pass"]  # async
    if rep.used[k]:
        now = {**vars(r), "used": int(rep.used[k]), "step_ms": rep.step_ms[k]}
        work = fill(words["work"], now)
    now = {"step": k + 1, "work": work, "clock_ms": rep.clock_ms[k], "events": line}
    return fill(words["frame-title"], {**vars(r), **now})


def _frame_traces(r: Readout, k: int) -> list[dict]:
    """What changes in step k, and only that: the title line, queue, batch, blocks, streams."""
    rep = r.replay
    tokens = [int(t) for t in rep.tokens[k]]
    unused = r.budget - int(rep.used[k])
    kinds = [KIND_WORD.get(int(kind), "") for kind in rep.kinds[k]]
    held = [int(b) for b in rep.held[k]]
    free = r.usable - sum(held)
    streamed = [int(s) for s in rep.streamed[k]]
    words = labels()
    return [
        {"type": "scatter", "text": [_frame_title(r, k)]},
        _state_points(r, k),
        {
            "type": "bar",
            "x": [*tokens, unused],
            "text": [
                fill(words["batch-text"], {"tokens": t, "kind": kd}) if t else ""
                for t, kd in zip(tokens, kinds, strict=True)
            ]
            + [fill(words["unused"], {"unused": unused})],
        },
        {
            "type": "bar",
            "x": [*held, free],
            "text": [f"{v:,}" if v else "" for v in held] + [fill(words["free"], {"free": free})],
        },
        {
            "type": "bar",
            "x": [*streamed, 0],
            "text": [f"{v}" if v else "" for v in streamed] + [""],
        },
    ]


def _colors(r: Readout) -> list[str]:
    pal = palette()
    return [pal[i % len(pal)] for i in range(len(r.replay.names))]


def _full(r: Readout, traces: list[dict]) -> list[dict]:
    """Frame traces plus their static attributes (rows, axes, colours, hover, text placement)."""
    colors = _colors(r)
    n = len(colors)
    bar = {
        "orientation": "h",
        "y": _rows(r),
        "textposition": "outside",
        "cliponaxis": False,
        "constraintext": "none",  # Plotly would shrink the label to the bar's thickness
        "showlegend": False,
        "marker": {"color": [*colors, color("unused")], "opacity": [1.0] * n + [0.3]},
    }
    words = labels()
    static = (
        {
            "mode": "text",
            "x": [0],
            "y": [0],
            "xaxis": "x5",
            "yaxis": "y5",
            "textposition": "middle right",
            "textfont": {"size": 14},
            "cliponaxis": False,  # two lines of larger text overflow their strip when presenting
            "hoverinfo": "skip",
            "showlegend": False,
        },
        {
            "mode": "markers+text",
            "xaxis": "x",
            "yaxis": "y",
            "textfont": {"color": "white", "size": 14},
            "hovertemplate": words["state-hover"],
            "showlegend": False,
        },
        {**bar, "xaxis": "x2", "yaxis": "y2", "hovertemplate": words["batch-hover"]},
        {**bar, "xaxis": "x3", "yaxis": "y3", "hovertemplate": words["blocks-hover"]},
        {**bar, "xaxis": "x4", "yaxis": "y4", "hovertemplate": words["streamed-hover"]},
    )
    out = [{**t, **extra} for t, extra in zip(traces, static, strict=True)]
    out[1]["marker"] = {
        **out[1]["marker"],
        "symbol": "square",
        "size": 34,
        "colorscale": [[i / max(n - 1, 1), c] for i, c in enumerate(colors)],
        "cmin": 0,
        "cmax": n - 1,
    }
    return out


def _layout(r: Readout) -> dict:
    rows = _rows(r)
    rep = r.replay
    max_tokens = max(int(rep.used.max()), 1)
    cat = {"categoryorder": "array", "categoryarray": rows[::-1], "type": "category"}
    note = {"xref": "paper", "yref": "paper", "showarrow": False, "font": {"size": 14}}
    words = labels()
    mode = words["mode-async"] if r.async_scheduling else words["mode-sync"]
    return {
        "height": 700,
        "margin": {"t": 60, "l": 110, "r": 40},
        "barmode": "overlay",
        "bargap": 0.25,
        "xaxis": axis(
            words["place-axis"],
            domain=[0, 1],
            anchor="y",
            range=[0.4, len(rep.names) + 0.6],
            dtick=1,
        ),
        "yaxis": {
            "domain": [0.66, 0.88],
            "anchor": "x",
            "type": "category",
            "categoryorder": "array",
            "categoryarray": _states()[::-1],
            "range": [-0.6, 2.6],
            "title": {"text": words["state-axis"]},
        },
        "xaxis2": axis(
            words["batch-axis"], domain=[0, 0.3], anchor="y2", range=[0, max_tokens * 1.45]
        ),
        "yaxis2": {"domain": [0, 0.42], "anchor": "x2", "title": {"text": words["request"]}, **cat},
        "xaxis3": axis(
            fill(words["blocks-axis"], vars(r)),
            domain=[0.36, 0.66],
            anchor="y3",
            range=[0, r.usable * 1.3],
        ),
        "yaxis3": {"domain": [0, 0.42], "anchor": "x3", "showticklabels": False, **cat},
        "xaxis4": axis(
            words["streamed-axis"],
            domain=[0.72, 1.0],
            anchor="y4",
            range=[0, max(rep.outputs) * 1.3],
        ),
        "yaxis4": {"domain": [0, 0.42], "anchor": "x4", "showticklabels": False, **cat},
        "annotations": [
            {**note, "x": 0, "y": 0.47, "xanchor": "left", "text": words["batch-note"]},
            {**note, "x": 0.36, "y": 0.47, "xanchor": "left", "text": words["blocks-note"]},
            {**note, "x": 0.72, "y": 0.47, "xanchor": "left", "text": words["streamed-note"]},
        ],
        "xaxis5": {"domain": [0, 1], "anchor": "y5", "range": [0, 1], "visible": False},
        "yaxis5": {"domain": [0.92, 1.0], "anchor": "x5", "range": [-1, 1], "visible": False},
        "title": {"text": fill(words["title"], {"mode": mode})},
        "showlegend": False,
    }


def _targets(r: Readout) -> dict:
    """Tick marks at each request's answer length, on the streamed panel."""
    words = labels()
    return {
        "type": "scatter",
        "mode": "markers",
        "name": words["answer-length"],
        "y": list(r.replay.names),
        "x": list(r.replay.outputs),
        "marker": {"symbol": "line-ns-open", "size": 18, "color": color("neutral")},
        "hovertemplate": words["answer-hover"],
        "showlegend": False,
        "xaxis": "x4",
        "yaxis": "y4",
    }


def still(r: Readout, step: int) -> dict:
    """The state of one step (1-based) as a still figure, for stepping by hand."""
    k = min(max(int(step), 1), r.num_steps) - 1
    return {"data": [_targets(r), *_full(r, _frame_traces(r, k))], "layout": _layout(r)}


def animation(r: Readout, step: int) -> dict:
    """Every step (sampled evenly past 200) as Plotly frames, opening at the stepper's step."""
    layout = _layout(r)
    frames = []
    for s in r.frame_steps.tolist():
        traces = _frame_traces(r, s - 1)
        # The answer-length ticks (trace 0) are static, but Plotly drops them from view when
        # the bars around them redraw unless the frame repeats them.
        frames.append(
            {
                "data": [{"type": "scatter", "x": list(r.replay.outputs)}, *traces],
                "traces": list(range(1 + len(traces))),
            }
        )
    if r.sampled:
        layout["title"]["text"] += fill(labels()["sampled"], vars(r))
    start = frame_of(r, step)
    data = [_targets(r), *_full(r, frames[start]["data"][1:])]
    steps = [str(s) for s in r.frame_steps.tolist()]
    figure = animate({"data": list(data), "layout": layout}, frames, steps, start=start)
    # animate() opens at a frame by putting its traces in place of the figure's; these frames
    # carry only what changes, so the full traces of that step go back in.
    figure["data"] = data
    return figure
