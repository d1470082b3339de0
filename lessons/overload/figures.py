"""Figures of the lesson "Too many requests", drawn from its Readout.

- `hockey`: TTFT p50 and p99 against offered load, under FCFS and SJF, with the capacity marked;
  `held=True` draws the setup of the prediction only: the loads up to the capacity, and the
  loads past it as a blank band over the whole axis;
- `queue`: the waiting queue over one run at the chosen load (FCFS, SJF, FCFS with the limit),
  animated in time;
- `limits`: TTFT p99 of admitted requests against load, without a limit and with the two sized
  limits, and the target;
- `goodput`: requests per second that meet the target, the same three ways;
- `signals`: GPU busy, compute use, KV usage and the waiting queue over the run at the chosen
  load: what an autoscaler could watch.

Words a learner reads come from text.md's `labels` section (and frame-title), filled here.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.anim import animate, time_label
from lessons.kit.figures import axis, count_axis, line, log_axis
from lessons.overload.readout import Readout
from lessons.theme import color

TEXT = lesson("overload").text_path
HOCKEY_PX = 350  # the first chart: its load slider under it still on the first screen


@cache
def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _marker_line(x: float) -> dict:
    """A dotted vertical line at load x (% of capacity). Its name goes under the x tick, where
    no line of the chart can run over it."""
    return {
        "type": "line",
        "x0": x,
        "x1": x,
        "yref": "paper",
        "y0": 0,
        "y1": 1,
        "line": {"dash": "dot", "width": 2, "color": "#555555"},
    }


def _load_ticks(r: Readout) -> list[str]:
    """The loads as x ticks, the capacity's and the chosen load's named beneath."""
    words = labels()
    names = {r.load_pct: words["chosen"], 100: words["capacity"]}  # at 100%: the capacity
    return [f"{v}<br>{names[v]}" if v in names else f"{v}" for v in r.loads.tolist()]


def _load_chart(r: Readout, title: str, y: dict, traces: list[dict], extra: list[dict]) -> dict:
    """Lines over the sweep's loads, with the capacity and the chosen load marked."""
    words = labels()
    shapes = [_marker_line(100), *extra]
    if r.load_pct != 100:
        shapes.append(_marker_line(r.load_pct))
    ticks = list(r.loads)
    return {
        "data": traces,
        "layout": {
            "title": {"text": words[title]},
            "height": 420,
            "xaxis": axis(words["load-axis"], tickvals=ticks, ticktext=_load_ticks(r)),
            "yaxis": y,
            "shapes": shapes,
            "hovermode": "x unified",
        },
    }


def _lines(r: Readout, series: list[tuple], fmt: str, upto: float | None = None) -> list[dict]:
    """(values, label key, role, dash) -> line traces with markers over the loads (those up to
    `upto` % of capacity only, if given)."""
    words = labels()
    n = len(r.loads) if upto is None else int((r.loads <= upto).sum())
    return [
        line(
            r.loads[:n],
            [float(v) for v in values[:n]],
            words[name],
            role,
            dash=dash,
            mode="lines+markers",
            hovertemplate=fmt,
        )
        for values, name, role, dash in series
    ]


def _held_band(r: Readout) -> dict:
    """The loads past the capacity, blank while the learner predicts what happens there."""
    return {
        "type": "rect",
        "x0": 100,
        "x1": float(r.loads[-1]),
        "yref": "paper",
        "y0": 0,
        "y1": 1,
        "line": {"width": 0},
        "fillcolor": color("unused"),
        "opacity": 0.15,
        "layer": "below",
        # left of the band: clear of the marker line at the chosen load
        "label": {"text": labels()["held"], "textposition": "middle left", "font": {"size": 15}},
    }


def hockey(r: Readout, *, held: bool = False) -> dict:
    """TTFT p50 and p99 against offered load under FCFS and SJF (no limit). `held`: only the
    loads up to the capacity, the rest of the axis blank (the prediction's setup)."""
    words = labels()
    traces = _lines(
        r,
        [
            (r.ttft_p50_s, "fcfs-p50", "fcfs", None),
            (r.ttft_p99_s, "fcfs-p99", "fcfs", "dash"),
            (r.sjf_ttft_p50_s, "sjf-p50", "sjf", None),
            (r.sjf_ttft_p99_s, "sjf-p99", "sjf", "dash"),
        ],
        "%{y:.2f} s",
        upto=100 if held else None,
    )
    figure = _load_chart(r, "title-hockey", log_axis(words["ttft-axis"]), traces, [])
    figure["layout"]["height"] = HOCKEY_PX
    if held:
        lo, hi = float(r.loads[0]), float(r.loads[-1])
        figure["layout"]["shapes"].insert(0, _held_band(r))
        figure["layout"]["xaxis"]["range"] = [lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)]
    return figure


def _target(r: Readout) -> dict:
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": r.ttft_target_s,
        "y1": r.ttft_target_s,
        "line": {"dash": "dot", "width": 2, "color": "#555555"},
        "label": {"text": labels()["target"], "textposition": "start", "font": {"size": 14}},
    }


def limits(r: Readout) -> dict:
    """TTFT p99 of admitted requests against load: no limit, the rule's limit, the peak one."""
    words = labels()
    traces = _lines(
        r,
        [
            (r.ttft_p99_s, "no-limit", "no_limit", None),
            (r.lim_ttft_p99_s, "limit-rule", "limit_rule", None),
            (r.peak_ttft_p99_s, "limit-peak", "limit_peak", "dash"),
        ],
        "%{y:.2f} s",
    )
    traces[1]["customdata"] = [round(float(v), 1) for v in r.lim_refused_pct]
    traces[1]["hovertemplate"] = words["refused-hover"]
    y = log_axis(words["ttft-p99-axis"])
    return _load_chart(r, "title-limits", y, traces, [_target(r)])


def goodput(r: Readout) -> dict:
    """Requests per second meeting the TTFT target against load, the same three ways."""
    words = labels()
    traces = _lines(
        r,
        [
            (r.goodput, "no-limit", "no_limit", None),
            (r.lim_goodput, "limit-rule", "limit_rule", None),
            (r.peak_goodput, "limit-peak", "limit_peak", "dash"),
        ],
        "%{y:.2f} req/s",
    )
    return _load_chart(
        r, "title-goodput", axis(words["goodput-axis"], rangemode="tozero"), traces, []
    )


def queue(r: Readout) -> dict:
    """The waiting queue over the run at the chosen load, drawn up to each frame's time."""
    words = labels()
    q = r.queue
    series = [
        (q.fcfs, "fcfs", "fcfs", None),
        (q.sjf, "sjf", "sjf", "dash"),
        (q.limited, "limit-rule", "limit_rule", None),
    ]
    t = [round(float(v), 3) for v in q.time_s]  # the grid is round (kit time_grid)

    def upto(k: int) -> list[dict]:
        return [{"x": t[: k + 1], "y": values[: k + 1].tolist()} for values, *_ in series]

    traces = [
        line(t[:1], values[:1].tolist(), words[name], role, dash=dash, hovertemplate="%{y}")
        for values, name, role, dash in series
    ]
    top = max(int(max(q.fcfs.max(), q.sjf.max(), q.limited.max())), 1)
    frames, names = [], []
    for k in range(len(t)):
        title = story.text(
            TEXT,
            "frame-title",
            None,
            time=t[k],
            fcfs=int(q.fcfs[k]),
            sjf=int(q.sjf[k]),
            limited=int(q.limited[k]),
            arrived=int(q.arrived[k]),
        )
        frames.append({"data": upto(k), "traces": [0, 1, 2], "layout": {"title": {"text": title}}})
        names.append(time_label(t[k]))
    figure = {
        "data": traces,
        "layout": {
            "title": {"text": ""},
            "height": 440,
            "xaxis": axis(words["time-axis"], range=[0, t[-1] * 1.02]),
            "yaxis": count_axis(words["waiting-axis"], top * 1.08),
            "hovermode": "x unified",
        },
    }
    return animate(figure, frames, names, prefix="time: ", start=len(t) - 1)


def signals(r: Readout) -> dict:
    """Four signals over the run at the chosen load: three in % on the left, the queue right."""
    words = labels()
    s = r.signals
    t = s.time_s.round(2)
    # the queue axis: 5 round ticks, on the grid lines of the % axis
    rough = max(float(s.waiting.max()), 1.0) / 5
    tick = min(m * 10**e for e in range(7) for m in (1, 2, 5) if m * 10**e >= rough)
    top = 5 * tick
    traces = [
        line(t, s.busy_pct.round(1), words["busy"], "neutral", hovertemplate="%{y:.0f}%"),
        line(t, s.compute_pct.round(1), words["compute"], "compute", hovertemplate="%{y:.0f}%"),
        line(t, np.nan_to_num(s.kv_pct).round(1), words["kv"], "kv", hovertemplate="%{y:.0f}%"),
        line(
            t, s.waiting, words["waiting"], "waiting", dash="dash", yaxis="y2", hovertemplate="%{y}"
        ),
    ]
    return {
        "data": traces,
        "layout": {
            "title": {"text": words["title-signals"]},
            "height": 420,
            "xaxis": axis(words["time-axis"]),
            # the 0 of the y axis off the corner where the x axis' 0 sits
            "yaxis": axis(words["pct-axis"], range=[0, 100], dtick=20, ticklabelstandoff=6),
            "yaxis2": axis(
                words["waiting-axis"],
                overlaying="y",
                side="right",
                range=[0, top],
                dtick=top / 5,
                showgrid=False,
            ),
            "hovermode": "x unified",
        },
    }
