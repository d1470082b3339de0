"""Figures of the chunked-prefill lesson, drawn from its Readout through the kit: the two lanes on
one clock (an animation: a curtain uncovers time while each lane's counter keeps the longest wait
between tokens so far) and the share of the GPU's peaks each step uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lessons.chunked_prefill.lanes import USERS_SHOWN
from lessons.chunked_prefill.readout import CHUNK, DECODE, WHOLE, LaneView, Readout
from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import SMALL_PX, axis, line, markers
from lessons.kit.story import fill
from lessons.kit.words import ms
from lessons.theme import color

TEXT = Path(__file__).with_name("text.md")
KIND_KEYS = {DECODE: "kind-decode", CHUNK: "kind-chunk", WHOLE: "kind-whole"}  # their labels
KIND_ROLES = {DECODE: "decode", CHUNK: "prefill", WHOLE: "highlight"}
LANE_ROLES = {"whole": "highlight", "chunked": "decode"}  # a lane's label is "lane-<name>"
TOP = -0.6  # above the first lane's title row (the y axis is reversed)
ROOM = -1.9  # the axis's top: room for a lane title in two lines on a 1024x768 projector


def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _lanes(r: Readout) -> list[tuple[str, LaneView]]:
    return [("whole", r.whole), ("chunked", r.chunked)]


def _title(r: Readout, name: str) -> str:
    """A lane's title (bold), from the label "title-whole" or "title-chunked"."""
    return fill(labels()["title-" + name], vars(r))


def _rgba(hex_color: str, alpha: float) -> str:
    """A theme colour ("#RRGGBB") with transparency, for fills."""
    red, green, blue = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _rows(lane: int) -> dict[str, float]:
    """y positions of one lane's rows (the y axis is reversed: smaller is higher)."""
    top = lane * (USERS_SHOWN + 6)
    return {
        "title": top,
        "counter": top + 1,  # the live counter, at the right, below the lane's title
        "steps": top + 2,
        "user0": top + 3,
        "newcomer": top + 3.5 + USERS_SHOWN,
        "bottom": top + 4.1 + USERS_SHOWN,
    }


def _boxes(x0: np.ndarray, x1: np.ndarray, y: np.ndarray, half: float) -> tuple[list, list]:
    """Rectangles as one polygon path, NaN between them. (Bar traces with a `base` vanish while
    a figure animates, so the strips are drawn as filled polygons.)"""
    gap = np.full_like(x0, np.nan)
    xs = np.stack([x0, x1, x1, x0, x0, gap], axis=1).ravel()
    lo, hi = y - half, y + half
    ys = np.stack([lo, lo, hi, hi, lo, gap], axis=1).ravel()
    return xs.round(3).tolist(), ys.round(3).tolist()


def _strips(r: Readout) -> list[dict]:
    """The strip of steps of each lane: one filled trace per kind of step."""
    out = []
    for kind in (DECODE, CHUNK, WHOLE):
        x0, x1, y = [], [], []
        for i, (_, lane) in enumerate(_lanes(r)):
            starts = lane.bar_start_s[kind] * r.time_scale
            x0.append(starts)
            x1.append(lane.bar_end_s[kind] * r.time_scale)
            y.append(np.full(starts.size, _rows(i)["steps"]))
        xs, ys = _boxes(np.concatenate(x0), np.concatenate(x1), np.concatenate(y), 0.35)
        alpha = 0.35 if kind == DECODE else 0.9
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": labels()[KIND_KEYS[kind]],
                "x": xs,
                "y": ys,
                "fill": "toself",
                "fillcolor": _rgba(color(KIND_ROLES[kind]), alpha),
                "line": {"width": 0.5, "color": "white"},
                "hoveron": "fills",
                "hoverinfo": "name",
            }
        )
    return out


def _ticks(r: Readout) -> dict:
    """Each token a user receives: a short vertical segment, NaN between them (one path)."""
    tx = np.concatenate([lane.tick_s * r.time_scale for _, lane in _lanes(r)])
    ty = np.concatenate(
        [_rows(i)["user0"] + lane.tick_row for i, (_, lane) in enumerate(_lanes(r))]
    ).astype(float)
    gap = np.full_like(tx, np.nan)
    trace = line(
        np.stack([tx, tx, gap], axis=1).ravel().round(3).tolist(),
        np.stack([ty - 0.3, ty + 0.3, gap], axis=1).ravel().tolist(),
        labels()["token"],
        "decode",
        hoverinfo="skip",
    )
    trace["line"]["width"] = 1.5
    return trace


def _newcomer(r: Readout) -> list[dict]:
    """The new prompt's wait (a dotted line from its arrival) and its first token (a star)."""
    x1 = r.window_s[1] * r.time_scale
    words = labels()
    wait_x, wait_y, star_x, star_y, text, where = [], [], [], [], [], []
    for i, (_, lane) in enumerate(_lanes(r)):
        first = round(lane.first_token_s * r.time_scale, 3)
        y = _rows(i)["newcomer"]
        wait_x += [0.0, first, None]
        wait_y += [y, y, None]
        star_x.append(first)
        star_y.append(y)
        text.append(fill(words["first-token-after"], {"wait": ms(lane.first_token_s * 1e3)}))
        where.append("top left" if first > x1 / 2 else "top right")
    name = words["waiting"]
    wait = line(wait_x, wait_y, name, "prefill", dash="dot", hoverinfo="skip")
    wait["line"]["width"] = 2
    star = markers(
        star_x,
        star_y,
        words["first-token"],
        "prefill",
        size=11,
        text=text,
        textposition=where,
        hovertemplate=words["first-token-hover-" + r.time_unit],
    )
    star["mode"] = "markers+text"
    star["marker"]["symbol"] = "star"
    ys = [TOP, _rows(1)["bottom"]]
    arrival = line([0.0, 0.0], ys, words["arrives"], "neutral", dash="dash", hoverinfo="skip")
    arrival["line"]["width"] = 1
    return [wait, star, arrival]


def _curtain(r: Readout, i: int) -> dict:
    """What has not happened yet at frame i, hidden; each lane's live counter on its edge."""
    now = float(r.frame_s[i] * r.time_scale)
    edge = r.window_s[1] * r.time_scale + 1e-9
    bottom = _rows(1)["bottom"]
    rows = [_rows(0)["counter"], _rows(1)["counter"]]
    counter = labels()["counter"]
    counters = [fill(counter, {"gap_ms": lane.live_gap_ms[i]}) for _, lane in _lanes(r)]
    return {
        "type": "scatter",
        "mode": "lines+text",
        "x": [now, edge, edge, edge, edge, now, now],
        "y": [TOP, TOP, rows[0], rows[1], bottom, bottom, TOP],
        "text": ["", "", *counters, "", "", ""],
        "textposition": "middle left",
        "textfont": {"size": SMALL_PX, "color": color("highlight")},
        "fill": "toself",
        "fillcolor": "rgba(255,255,255,0.85)",
        "line": {"width": 1, "color": color("neutral")},
        "hoverinfo": "skip",
        "showlegend": False,
    }


def lanes(r: Readout) -> dict:
    """The two lanes over time, animated: Play moves the curtain from the window's start."""
    x0, x1 = (w * r.time_scale for w in r.window_s)
    bottom = _rows(1)["bottom"]
    data = [*_strips(r), _ticks(r), *_newcomer(r)]
    words = labels()
    tickvals, ticktext, notes = [], [], []
    for i, (name, _) in enumerate(_lanes(r)):
        rows = _rows(i)
        users = [rows["user0"] + k for k in range(len(r.users_shown))]
        tickvals += [rows["steps"], *users, rows["newcomer"]]
        ticktext += [
            words["row-steps"],
            *[fill(words["row-user"], {"n": u + 1}) for u in r.users_shown],
        ]
        ticktext.append(fill(words["row-newcomer"], vars(r)))
        notes.append(
            {
                "text": _title(r, name),
                "x": 0,
                "xref": "paper",
                "xanchor": "left",
                "y": rows["title"] + 0.45,  # a second line, presenting, goes up, not on the counter
                "yref": "y",
                "yanchor": "bottom",
                "align": "left",
                "showarrow": False,
                "font": {"size": SMALL_PX},
            }
        )
    layout = {
        "title": {"text": words["lanes-title"]},
        "height": 690,
        "xaxis": axis(fill(words["time-axis"], vars(r)), range=[x0, x1], zeroline=False),
        "yaxis": {
            "title": {"text": words["rows-axis"]},
            "range": [bottom + 0.3, ROOM],
            "tickmode": "array",
            "tickvals": tickvals,
            "ticktext": ticktext,
            "showgrid": False,
            "zeroline": False,
        },
        "annotations": notes,
        "margin": {"t": 130, "l": 10},
    }
    moving = len(data)
    frames = [{"data": [_curtain(r, i)], "traces": [moving]} for i in range(r.frame_s.size)]
    figure = {"data": [*data, _curtain(r, r.start_frame)], "layout": layout}
    digits = 0 if r.time_unit == "ms" else 1
    steps = [f"{t * r.time_scale:,.{digits}f} {r.time_unit}" for t in r.frame_s]
    prefix = words["slider"] + " "
    return animate(figure, frames, steps, prefix=prefix, start=r.start_frame)


def use(r: Readout) -> dict:
    """Per step: compute use (top) and bandwidth use (bottom), as shares of the GPU's peaks."""
    words = labels()
    data = []
    for name, lane in _lanes(r):
        lane_name = words["lane-" + name]
        for suffix, xs, ys, hover in (
            ("", lane.compute_x_s, lane.compute_pct, words["compute-hover"]),
            ("2", lane.bandwidth_x_s, lane.bandwidth_pct, words["bandwidth-hover"]),
        ):
            trace = line(
                (xs * r.time_scale).round(6).tolist(),
                ys.round(2).tolist(),
                lane_name,
                LANE_ROLES[name],
                legendgroup=name,
                showlegend=suffix == "",
                xaxis="x" + suffix,
                yaxis="y" + suffix,
                hovertemplate=f"{hover}<extra>{lane_name}</extra>",  # the lane's name in its box
            )
            trace["line"].update(shape="vh", width=2)
            data.append(trace)
    x_range = [w * r.time_scale for w in r.window_s]
    top = max(100.0, 1.05 * max(max(t["y"]) for t in data))
    values = vars(r)
    layout = {
        "title": {"text": words["use-title"]},
        "height": 520,
        "xaxis": axis(fill(words["use-x-axis"], values), anchor="y", range=x_range, matches="x2"),
        "yaxis": axis(words["compute-axis"], domain=[0.6, 1], range=[0, top]),
        "xaxis2": axis(fill(words["time-axis"], values), anchor="y2", range=x_range),
        "yaxis2": axis(words["bandwidth-axis"], domain=[0, 0.4], range=[0, top]),
    }
    layout["xaxis"]["title"]["standoff"] = 2
    return {"data": data, "layout": layout}
