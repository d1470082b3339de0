"""Figures of the step-cost lesson, drawn from its Readout through the kit: the step-time curve
(with the measured linear layers where a profile exists), the parts of the learner's step, and
the step growing from one token (an animation)."""

from __future__ import annotations

import numpy as np

from lessons.kit.anim import animate
from lessons.kit.figures import COST_PARTS, axis, bars, line, log_axis, markers
from lessons.step_cost.readout import Readout
from lessons.theme import color

MEASURED_ROLE = "lm_head"  # a colour no other trace of the step-time chart uses


def _selection(r: Readout) -> str:
    return f"{r.gpu}, {r.model_name} ({r.dtype}, TP {r.tp})"


def measured(r: Readout) -> list[dict]:
    """Where the selection has a measured profile: the cost model's linear layers (a line) and
    the measured ones (markers), both all layers, in ms. Nothing without a profile."""
    if not r.has_profile:
        return []
    hover = "%{x:,} tokens: %{y:.2f} ms<extra>%{fullData.name}</extra>"
    return [
        line(
            r.prompt_only.tokens.tolist(),
            r.prompt_only.parts_ms["linear_ms"].tolist(),
            "linear layers, cost model",
            MEASURED_ROLE,
            dash="dashdot",
            hovertemplate=hover,
        ),
        markers(
            r.profile_tokens.tolist(),
            r.profile_ms.tolist(),
            f"linear layers, measured ({r.profile_model} profile)",
            MEASURED_ROLE,
            size=7,
            hovertemplate=hover,
        ),
    ]


def curve(r: Readout) -> dict:
    """Step time against tokens: the floor, the slope, the ridge, the KV-read curve and, where
    a profile exists, the measured linear layers beside the model's."""
    xs = r.prompt_only.tokens.tolist()
    lows = [r.prompt_only.step_ms.min(), r.with_kv.step_ms.min()]
    if r.has_profile:
        lows += [r.profile_ms.min(), r.prompt_only.parts_ms["linear_ms"].min()]
    top = float(max(r.prompt_only.step_ms.max(), r.with_kv.step_ms.max())) * 1.3
    bottom = float(min(lows)) * 0.7
    kv_name = f"plus {r.decodes:,} decodes reading {r.context_tokens:,} tokens of KV each"
    hover = "%{x:,} tokens: %{y:.1f} ms<extra>%{fullData.name}</extra>"
    data = [
        line(
            xs, r.prompt_only.step_ms.tolist(), "prompt tokens only", "decode", hovertemplate=hover
        ),
        line(xs, r.with_kv.step_ms.tolist(), kv_name, "prefill", dash="dash", hovertemplate=hover),
        line(
            [xs[0], xs[-1]],
            [r.weight_read_ms] * 2,
            f"weight read: {r.weight_read_ms:.1f} ms",
            "neutral",
            dash="dot",
            hoverinfo="skip",
        ),
        line(
            [r.ridge_tokens] * 2,
            [bottom, top],
            f"ridge: {r.ridge_tokens:,} tokens",
            "highlight",
            dash="dot",
            hoverinfo="skip",
        ),
        *measured(r),
        markers(
            [r.n_tokens] * 2,
            [r.n_ms, r.n_ms_with_kv],
            f"your step: {r.n_tokens:,} tokens",
            "neutral",
            hovertemplate=hover,
        ),
    ]
    layout = {
        "title": {"text": f"Step time on {_selection(r)}"},
        "xaxis": log_axis("tokens in the step (log scale)"),
        "yaxis": log_axis(
            # with a profile the chart also draws the linear layers alone, not only steps
            "time (ms, log scale)" if r.has_profile else "step time (ms, log scale)",
            range=[np.log10(bottom), np.log10(top)],
        ),
        "height": 500,
    }
    return {"data": data, "layout": layout}


def parts(r: Readout) -> dict:
    """Stacked bars of the learner's step by part, without and with the running decodes."""
    rows = ["prompt only", "with decodes"]
    data = [
        bars(
            [float(v) for v in r.at_n.parts_ms[name]],
            rows,
            label,
            role,
            horizontal=True,
            hovertemplate="%{x:.2f} ms<extra>" + label + "</extra>",
        )
        for name, label, role in COST_PARTS
    ]
    layout = {
        "title": {"text": f"Where the time goes in a step of {r.n_tokens:,} prompt tokens"},
        "barmode": "stack",
        "height": 340,
        "xaxis": axis("time (ms)"),
        "yaxis": {"title": {"text": "step (kind)"}},
    }
    return {"data": data, "layout": layout}


def start_frame(r: Readout) -> int:
    """The animation frame nearest the learner's token count (it opens there)."""
    return int(np.argmin(np.abs(np.log(r.anim.tokens) - np.log(r.n_tokens))))


def growing(r: Readout) -> dict:
    """The step grows from 1 token: a dot moves along the curve, the parts bar follows."""
    xs, a = r.anim.tokens, r.anim
    # The bar shows each part's share of the step, so a 7 ms step reads as well as a 400 ms one.
    share = {name: 100 * a.parts_ms[name] / a.step_ms for name, _, _ in COST_PARTS}

    def frame(i: int) -> dict:
        dot = {
            "type": "scatter",
            "mode": "markers",
            "x": [int(xs[i])],
            "y": [float(a.step_ms[i])],
            "marker": {"size": 14, "color": color("highlight")},
            "showlegend": False,
        }
        stacked = [
            bars(
                [round(float(share[name][i]), 2)],
                ["this step"],
                label,
                role,
                horizontal=True,
                customdata=[round(float(a.parts_ms[name][i]), 2)],
                hovertemplate="%{x:.0f}% (%{customdata:.1f} ms)<extra>" + label + "</extra>",
                xaxis="x2",
                yaxis="y2",
            )
            for name, label, role in COST_PARTS
        ]
        bound = "memory-bound" if bool(a.memory_bound[i]) else "compute-bound"
        n = int(xs[i])
        title = f"A step of {n:,} token{'s' if n > 1 else ''}: {a.step_ms[i]:.1f} ms, {bound}"
        return {
            "data": [dot, *stacked],
            "traces": list(range(1, 2 + len(COST_PARTS))),
            "layout": {"title": {"text": title}},
        }

    frames = [frame(i) for i in range(len(xs))]
    y_all = r.prompt_only.step_ms
    static = line(
        r.prompt_only.tokens.tolist(), y_all.tolist(), "step time", "decode", showlegend=False
    )
    low, high = np.log10(float(y_all.min()) * 0.7), np.log10(float(y_all.max()) * 1.5)
    figure = {
        "data": [static, *frames[0]["data"]],
        "layout": {
            "xaxis": log_axis(
                "tokens in the step (log scale)",
                domain=[0, 0.55],
                range=[0, np.log10(r.max_tokens) + 0.1],
            ),
            "yaxis": log_axis("step time (ms, log scale)", range=[low, high]),
            "xaxis2": axis(
                "share of the step by part (%)", domain=[0.65, 1], range=[0, 100], anchor="y2"
            ),
            "yaxis2": {"anchor": "x2", "showticklabels": False},
            "barmode": "stack",
            "height": 540,
        },
    }
    labels = [f"{int(x):,}" for x in xs]
    return animate(figure, frames, labels, prefix="tokens in the step: ", start=start_frame(r))
