"""The figure of the lesson "What to watch": the dashboard, drawn from its Readout.

`dashboard`: four panels over the run, animated in time as a live dashboard fills: running and
waiting requests, KV cache usage, step time, and preemptions so far, each with its healthy band
shaded (waiting near zero, the cache below 90%, steps within the ITL target, no preemptions).
Words a learner reads come from text.md's `labels` section (and frame-title), filled here.
"""

from __future__ import annotations

from functools import cache

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.anim import animate, time_label
from lessons.kit.figures import axis, count_axis, count_top, line
from lessons.theme import color
from lessons.watch.readout import Readout

TEXT = lesson("watch").text_path
# (x axis, y axis) of each panel: top left, top right, bottom left, bottom right
PANELS = (("x", "y"), ("x2", "y2"), ("x3", "y3"), ("x4", "y4"))
DOMAINS = (
    ([0, 0.45], [0.6, 1]),
    ([0.55, 1], [0.6, 1]),
    ([0, 0.45], [0, 0.4]),
    ([0.55, 1], [0, 0.4]),
)


@cache
def labels() -> dict[str, str]:
    """The chart's words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _band(panel: int, top: float) -> dict:
    """The healthy band of a panel: from 0 up to `top`, across the whole time axis."""
    x, y = PANELS[panel]
    return {
        "type": "rect",
        "xref": f"{x} domain",
        "yref": y,
        "x0": 0,
        "x1": 1,
        "y0": 0,
        "y1": top,
        "fillcolor": color("healthy"),
        "opacity": 0.18,
        "line": {"width": 0},
        "layer": "below",
    }


def _series(r: Readout) -> list[tuple]:
    """(values, label key, role, panel, dash) of each trace."""
    d = r.dash
    return [
        (d.running, "running", "decode", 0, None),
        (d.waiting, "waiting", "waiting", 0, "dash"),
        (d.kv_pct, "kv", "kv", 1, None),
        (d.step_ms, "step", "prefill", 2, None),
        (d.preemptions, "preemptions", "recompute", 3, None),
    ]


def dashboard(r: Readout, held: bool = False) -> dict:
    """The four panels, drawn up to each frame's time (Play, Pause, step slider). `held`: the
    learner is still predicting how many wait, so the requests panel reaches up to every
    request of the run (a top fitted to the queue's peak would give the answer away)."""
    words = labels()
    d = r.dash
    t = [round(float(v), 3) for v in d.time_s]  # the grid is round (kit time_grid)
    series = _series(r)
    traces = [
        line(
            t[:1],
            [float(values[0])],
            words[name],
            role,
            dash=dash,
            xaxis=PANELS[panel][0],
            yaxis=PANELS[panel][1],
            hovertemplate="%{y:.0f}",
        )
        for values, name, role, panel, dash in series
    ]
    frames, names = [], []
    for k in range(len(t)):
        data = [{"x": t[: k + 1], "y": values[: k + 1].tolist()} for values, *_ in series]
        title = story.text(
            TEXT,
            "frame-title",
            None,
            preset=r.preset,
            time=t[k],
            running=int(d.running[k]),
            waiting=int(d.waiting[k]),
            kv=float(d.kv_pct[k]),
            preemptions=int(d.preemptions[k]),
        )
        frames.append(
            {"data": data, "traces": list(range(len(series))), "layout": {"title": {"text": title}}}
        )
        names.append(time_label(t[k]))
    tops = (
        max(float(d.running.max()), float(r.requests if held else d.waiting.max()), r.waiting_band)
        * 1.1,
        105.0,
        max(float(d.step_ms.max()), r.itl_target_ms) * 1.1,
        count_top(d.preemptions),
    )
    # presented with its larger legend: 640 px, a 1280x720 screen (lessons/kit/present.py)
    layout: dict = {"title": {"text": ""}, "height": 580, "hovermode": "x unified"}
    y_titles = ("requests-axis", "kv-axis", "step-axis", "preemptions-axis")
    for i, ((x, y), (dx, dy)) in enumerate(zip(PANELS, DOMAINS, strict=True)):
        xa, ya = ("xaxis", "yaxis") if i == 0 else (f"xaxis{i + 1}", f"yaxis{i + 1}")
        layout[xa] = axis(words["time-axis"], domain=dx, anchor=y, range=[0, t[-1] * 1.02])
        # the 0 of each y axis off the corner where the x axis' 0 sits
        title, place = words[y_titles[i]], {"domain": dy, "anchor": x, "ticklabelstandoff": 6}
        layout[ya] = (
            count_axis(title, tops[i], **place)  # preemptions: a count
            if i == 3
            else axis(title, range=[0, tops[i]], **place)
        )
    layout["shapes"] = [
        _band(0, r.waiting_band),
        _band(1, 90),
        _band(2, r.itl_target_ms),
        _band(3, 0.5),
    ]
    figure = {"data": traces, "layout": layout}
    return animate(figure, frames, names, prefix="time: ", start=len(t) - 1)
