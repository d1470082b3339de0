"""Figures of the throughput-curve lesson, drawn from its Readout through the kit: total and
per-user throughput against concurrency, the same against a closed loop with prompts arriving,
the bytes a decode step reads, and the concurrency growing up to what the engine reaches (an
animation that opens at the latency target's pick)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import axis, bars, line, log_ticks, markers
from lessons.kit.story import fill
from lessons.theme import color
from lessons.throughput_curve.readout import Readout

TEXT = Path(__file__).with_name("text.md")
POW2_TICKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
ANIM_CURVE_POINTS = 160
PARTS = (  # (the step part's field, its label's key, its colour's role)
    ("linear_ms", "part-linear", "compute"),
    ("attention_ms", "part-attention", "kv"),
    ("other_ms", "part-other", "neutral"),
)


def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _log_range(values: np.ndarray, pad: float = 1.5) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return float(v.min() / pad), float(v.max() * pad)


def _log_y(title: str, lo: float, hi: float, **extra) -> dict:
    lo_log, hi_log = float(np.log10(lo)), float(np.log10(hi))
    return axis(
        title, type="log", range=[lo_log, hi_log], tickvals=log_ticks(lo_log, hi_log), **extra
    )


def _concurrency_axis(title: str, ticks: list[int] = POW2_TICKS, **extra) -> dict:
    span = [-0.05, float(np.log10(POW2_TICKS[-1])) + 0.05]
    return axis(title, type="log", tickvals=ticks, range=span, **extra)


def _vline(x: float, lo: float, hi: float, yaxis: str, name: str, role: str, dash: str, **extra):
    """A vertical line on one of the two panels; its name goes to the legend (no text on the
    plot, so no label can cover a curve or another label)."""
    return line([x, x], [lo, hi], name, role, dash=dash, yaxis=yaxis, hoverinfo="skip", **extra)


def _both(x: float, top: tuple, low: tuple, name: str, role: str, dash: str) -> list[dict]:
    """The same vertical line on both panels (top: y, low: y2), one legend entry for the two."""
    group = {"legendgroup": name or role}
    return [
        _vline(x, *top, "y", name, role, dash, showlegend=bool(name), **group),
        _vline(x, *low, "y2", name, role, dash, showlegend=False, **group),
    ]


def _star(x: list, y: list, name: str, role: str = "kv", **extra) -> dict:
    star = markers(x, y, name, role, size=15, **extra)
    star["marker"]["symbol"] = "star"
    return star


def curve(r: Readout) -> dict:
    """Total (top) and per-user (bottom) tokens per second against concurrency, with the knee,
    the latency target's pick, the KV-cache limit and max_num_seqs."""
    c = r.curves
    ok = c.n <= r.kv_cap
    top, low = _log_range(c.total), _log_range(c.per_user)
    words, values = labels(), vars(r)

    def part(mask: np.ndarray, series: np.ndarray) -> tuple[list, list]:
        return c.n[mask].tolist(), series[mask].tolist()

    each = {"yaxis": "y2", "hovertemplate": words["each-hover"]}
    data = [
        line(*part(ok, c.total), words["total"], "primary", hovertemplate=words["total-hover"]),
        line(*part(ok, c.per_user), words["each"], "prefill", **each),
    ]
    if (~ok).any():
        beyond = words["beyond"]
        far = {"opacity": 0.5, "dash": "dot", "hovertemplate": words["beyond-hover"]}
        data += [
            line(*part(~ok, c.total), beyond, "primary", **far),
            line(*part(~ok, c.per_user), beyond, "prefill", yaxis="y2", showlegend=False, **far),
        ]
        if r.kv_cap >= 1:
            full = fill(words["kv-full"], values)
            data += _both(r.kv_cap, top, low, full, "neutral", "dash")
    if r.has_knee:
        data += _both(r.knee, top, low, "", "highlight", "dot")
        knee = fill(words["knee"], values)
        hover = words["knee-hover"]
        data.append(markers([r.knee], [r.knee_total], knee, "highlight", hovertemplate=hover))
    if r.has_pick:
        name = fill(words["pick"], values)
        hover = {"hovertemplate": words["pick-hover"]}
        data += [
            _star([r.pick], [r.pick_total], name, **hover),
            _star([r.pick], [r.pick_per_user], name, yaxis="y2", showlegend=False, **hover),
        ]
    seqs = fill(words["max-seqs"], values)
    data += _both(r.max_num_seqs, top, low, seqs, "neutral", "dashdot")  # unlike the total line
    notes = []
    if r.has_dip:
        data.append(_dips(r, words, values))
        notes.append(_dip_note(r, words, values))
    layout = {
        "title": {"text": fill(words["curve-title"], values)},
        "xaxis": _concurrency_axis(words["curve-axis"], anchor="y2"),
        "yaxis": _log_y(words["total-axis"], *top, domain=[0.55, 1.0], anchor="x"),
        "yaxis2": _log_y(words["each-axis"], *low, domain=[0.0, 0.45], anchor="x"),
        "height": 560,  # presented with its larger legend: 640, a 1280x720 screen (kit/present.py)
        "annotations": notes,
    }
    return {"data": data, "layout": layout}


def _dips(r: Readout, words: dict, values: dict) -> dict:
    """A small down-triangle on the total where it drops: a new row of GEMM tiles."""
    n = r.dips
    dip = markers(
        n.tolist(),
        r.curves.total[n - 1].tolist(),
        fill(words["dip"], values),
        "neutral",
        size=9,
        hovertemplate=words["dip-hover"],
    )
    dip["marker"]["symbol"] = "triangle-down"
    return dip


def _dip_note(r: Readout, words: dict, values: dict) -> dict:
    """The drop the text describes, named on the chart: where it is and what it costs."""
    return {
        "x": float(np.log10(r.dip_n)),
        "y": float(np.log10(r.dip_after_total)),
        "xref": "x",
        "yref": "y",
        "text": fill(words["dip-note"], values),
        "showarrow": True,
        "arrowhead": 0,
        "ax": 0,
        "ay": 36,
        "font": {"color": color("neutral")},
        "bgcolor": "rgba(255,255,255,0.85)",
    }


def reads(r: Readout) -> dict:
    """Bytes one step reads: the weights (the same for any N) against every sequence's KV cache."""
    n = np.asarray(POW2_TICKS)  # a straight line on log-log axes: the powers of two draw it
    kv = n * r.kv_per_seq_gb
    w = r.weight_gb
    lo, hi = _log_range(np.append(kv, w), 2.0)
    words, values = labels(), vars(r)
    data = [
        line(
            [1, int(n[-1])],
            [w, w],
            fill(words["weights"], values),
            "compute",
            hovertemplate=words["weights-hover"],
        ),
        line(
            n.tolist(),
            kv.tolist(),
            fill(words["kv"], values),
            "kv",
            hovertemplate=words["kv-hover"],
        ),
    ]
    x = r.crossover
    if 1 <= x <= n[-1]:
        data.append(
            markers(
                [x],
                [w],
                fill(words["equal"], values),
                "highlight",
                mode="markers+text",
                text=[fill(words["equal-text"], values)],
                textposition="top left",
                hoverinfo="skip",
            )
        )
    layout = {
        "title": {"text": words["reads-title"]},
        "xaxis": _concurrency_axis(words["reads-x-axis"]),
        "yaxis": _log_y(words["reads-axis"], lo, hi),
        "height": 420,
    }
    return {"data": data, "layout": layout}


def growing(r: Readout) -> dict:
    """The concurrency grows from 1 to what the engine reaches: two dots ride the throughput
    curves and the bars split the step into its parts. It opens at the latency target's pick."""
    c = r.curves
    idx = r.anim_n - 1
    t_lo, t_hi = _log_range(c.total)
    u_lo, u_hi = _log_range(c.per_user)
    part_max = max(float(c.parts_ms[name][idx].max()) for name, _, _ in PARTS) * 1.08
    words = labels()
    kinds = [words[key] for _, key, _ in PARTS]
    dot = {"size": 14, "showlegend": False, "hoverinfo": "skip"}

    def frame(k: int) -> dict:
        j = k - 1
        parts = [round(float(c.parts_ms[name][j]), 3) for name, _, _ in PARTS]
        moving = [
            markers([k], [float(c.total[j])], words["dot-total"], "primary", **dot),
            markers([k], [float(c.per_user[j])], words["dot-user"], "prefill", yaxis="y3", **dot),
            bars(
                kinds,
                parts,
                words["parts"],
                "neutral",
                xaxis="x2",
                yaxis="y2",
                marker={"color": [color(role) for _, _, role in PARTS]},
                showlegend=False,
                hovertemplate=words["parts-hover"],
            ),
        ]
        now = {"n": k, "step_ms": c.step_ms[j], "total": c.total[j], "per_user": c.per_user[j]}
        title = fill(words["grow-title"], now)
        return {"data": moving, "traces": [4, 5, 6], "layout": {"title": {"text": title}}}

    frames = [frame(int(k)) for k in r.anim_n]
    # The curves behind the dots, on a log grid (160 points read as well as 1,024):
    # solid up to what the engine reaches, dotted beyond.
    grid = np.union1d(np.geomspace(1, c.n[-1], ANIM_CURVE_POINTS).round(), [r.anim_last])
    j = grid.astype(np.int64) - 1
    upto, beyond = j[grid <= r.anim_last], j[grid >= r.anim_last]

    def at(rows: np.ndarray, series: np.ndarray) -> tuple[list, list]:
        return (rows + 1).tolist(), series[rows].tolist()

    far = {"dash": "dot", "opacity": 0.4, "showlegend": False}
    static = [
        line(*at(upto, c.total), words["grow-total"], "primary", hoverinfo="skip"),
        line(*at(upto, c.per_user), words["grow-user"], "prefill", yaxis="y3", hoverinfo="skip"),
        line(*at(beyond, c.total), "", "primary", hoverinfo="skip", **far),
        line(*at(beyond, c.per_user), "", "prefill", yaxis="y3", hoverinfo="skip", **far),
    ]
    figure = {
        "data": static + frames[r.anim_start]["data"],
        "layout": {
            "xaxis": _concurrency_axis(words["grow-axis"], POW2_TICKS[::2], domain=[0.0, 0.5]),
            "yaxis": _log_y(words["total-axis"], t_lo, t_hi, color=color("primary")),
            "yaxis3": _log_y(
                words["per-user-axis"],
                u_lo,
                u_hi,
                overlaying="y",
                side="right",
                anchor="x",
                color=color("prefill"),
            ),
            "xaxis2": {
                "domain": [0.68, 1.0],
                "anchor": "y2",
                "tickangle": 0,
                "title": {"text": words["part-axis"]},
            },
            "yaxis2": axis(words["part-ms-axis"], anchor="x2", range=[0, part_max]),
            "height": 560,
        },
    }
    steps = [f"{int(k):,}" for k in r.anim_n]
    return animate(figure, frames, steps, prefix=words["slider"] + " ", start=r.anim_start)
