"""Figures of the step-cost lesson, drawn from its Readout through the kit: the step-time curve
(with the measured linear layers where a profile exists), the parts of the learner's step, and
the step growing from one token (an animation)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import COST_PARTS, axis, bars, line, log_axis, markers
from lessons.kit.story import fill
from lessons.step_cost.readout import Readout
from lessons.theme import color

TEXT = Path(__file__).with_name("text.md")
MEASURED_ROLE = "lm_head"  # a colour no other trace of the step-time chart uses


def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _values(r: Readout) -> dict:
    """The Readout's fields, and the selection as the titles name it, for the labels."""
    out = dict(vars(r))
    out["selection"] = fill(labels()["selection"], out)
    return out


def _named(hover: str, name: str) -> str:
    """A hover template with a part's name in its box (the parts' names are the kit's)."""
    return f"{hover}<extra>{name}</extra>"


def measured(r: Readout) -> list[dict]:
    """Where the selection has a measured profile: the cost model's linear layers (a line) and
    the measured ones (markers), both all layers, in ms. Nothing without a profile."""
    if not r.has_profile:
        return []
    words = labels()
    hover = words["measured-hover"]
    return [
        line(
            r.prompt_only.tokens.tolist(),
            r.prompt_only.parts_ms["linear_ms"].tolist(),
            words["linear-model"],
            MEASURED_ROLE,
            dash="dashdot",
            hovertemplate=hover,
        ),
        markers(
            r.profile_tokens.tolist(),
            r.profile_ms.tolist(),
            fill(words["linear-measured"], vars(r)),
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
    words, values = labels(), _values(r)
    kv_name = fill(words["with-kv"], values)
    hover = words["curve-hover"]
    data = [
        line(
            xs, r.prompt_only.step_ms.tolist(), words["prompt-only"], "prefill", hovertemplate=hover
        ),  # prompt tokens are the prefill colour on every chart; the decodes' KV reads, kv's
        line(xs, r.with_kv.step_ms.tolist(), kv_name, "kv", dash="dash", hovertemplate=hover),
        line(
            [xs[0], xs[-1]],
            [r.weight_read_ms] * 2,
            fill(words["weight-read"], values),
            "neutral",
            dash="dot",
            hoverinfo="skip",
        ),
        line(
            [r.ridge_tokens] * 2,
            [bottom, top],
            fill(words["ridge"], values),
            "highlight",
            dash="dot",
            hoverinfo="skip",
        ),
        *measured(r),
        markers(
            [r.n_tokens] * 2,
            [r.n_ms, r.n_ms_with_kv],
            fill(words["your-step"], values),
            "neutral",
            hovertemplate=hover,
        ),
    ]
    layout = {
        "title": {"text": fill(words["curve-title"], values)},
        "xaxis": log_axis(words["tokens-axis"]),
        "yaxis": log_axis(
            # with a profile the chart also draws the linear layers alone, not only steps
            words["time-axis"] if r.has_profile else words["step-axis"],
            range=[np.log10(bottom), np.log10(top)],
        ),
        "height": 500,
    }
    return {"data": data, "layout": layout}


def parts(r: Readout) -> dict:
    """Stacked bars of the learner's step by part, without and with the running decodes."""
    words = labels()
    rows = [words["row-prompt"], words["row-decodes"]]
    data = [
        bars(
            [float(v) for v in r.at_n.parts_ms[name]],
            rows,
            label,
            role,
            horizontal=True,
            hovertemplate=_named(words["parts-hover"], label),
        )
        for name, label, role in COST_PARTS
    ]
    layout = {
        "title": {"text": fill(words["parts-title"], vars(r))},
        "barmode": "stack",
        "height": 340,
        "xaxis": axis(words["parts-axis"]),
        "yaxis": {"title": {"text": words["parts-kind"]}},
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
    words = labels()

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
                [words["this-step"]],
                label,
                role,
                horizontal=True,
                customdata=[round(float(a.parts_ms[name][i]), 2)],
                hovertemplate=_named(words["share-hover"], label),
                xaxis="x2",
                yaxis="y2",
            )
            for name, label, role in COST_PARTS
        ]
        bound = words["memory-bound"] if bool(a.memory_bound[i]) else words["compute-bound"]
        now = {"n": int(xs[i]), "step_ms": a.step_ms[i], "bound": bound}
        title = fill(words["grow-title"], now)
        return {
            "data": [dot, *stacked],
            "traces": list(range(1, 2 + len(COST_PARTS))),
            "layout": {"title": {"text": title}},
        }

    frames = [frame(i) for i in range(len(xs))]
    y_all = r.prompt_only.step_ms
    static = line(
        r.prompt_only.tokens.tolist(),
        y_all.tolist(),
        words["step-time"],
        "prefill",
        showlegend=False,
    )
    low, high = np.log10(float(y_all.min()) * 0.7), np.log10(float(y_all.max()) * 1.5)
    figure = {
        "data": [static, *frames[0]["data"]],
        "layout": {
            "xaxis": log_axis(
                words["tokens-axis"],
                domain=[0, 0.55],
                range=[0, np.log10(r.max_tokens) + 0.1],
            ),
            "yaxis": log_axis(words["step-axis"], range=[low, high]),
            "xaxis2": axis(words["share-axis"], domain=[0.65, 1], range=[0, 100], anchor="y2"),
            "yaxis2": {"anchor": "x2", "showticklabels": False},
            "barmode": "stack",
            "height": 540,
        },
    }
    steps = [f"{int(x):,}" for x in xs]
    return animate(figure, frames, steps, prefix=words["slider"] + " ", start=start_frame(r))
