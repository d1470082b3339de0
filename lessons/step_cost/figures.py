"""Figures of lesson 1: step time against the tokens in the step, its parts, and an animation.

`build(params)` makes one vectorized cost-model call for the whole lesson and returns the figure
dicts together with the numbers the text quotes, so text and charts always agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.anim import animate
from lessons.theme import color
from sim.cost import (
    Deployment,
    StepCosts,
    mixed_batch,
    ridge_tokens,
    step_costs,
    weight_read_ms,
)
from sim.hardware import get_gpu
from sim.models import get_model, kv_bytes_per_token, kv_pool, weight_read_bytes

MAX_TOKENS = 16_384
REF_TOKENS = 2_048
PARTS = (
    ("linear_ms", "linear layers", "compute"),
    ("attention_ms", "attention", "attention"),
    ("lm_head_ms", "LM head", "lm_head"),
    ("comm_ms", "GPU-to-GPU exchange", "comm"),
    ("overhead_ms", "fixed overhead", "overhead"),
)


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set."""

    gpu: str = "H100-SXM"
    model: str = "Llama-3.1-8B"
    dtype: str = "bf16"
    tp: int = 1
    tokens: int = 2_048
    decodes: int = 64
    context_tokens: int = 2_048


def _take(costs: StepCosts, index) -> dict[str, np.ndarray]:
    names = ["step_ms", "memory_bound"] + [name for name, _, _ in PARTS]
    return {name: np.asarray(getattr(costs, name))[index] for name in names}


def grid(max_tokens: int = MAX_TOKENS, points: int = 97) -> np.ndarray:
    """Token counts on a log scale from 1 to `max_tokens`."""
    return np.unique(np.geomspace(1, max_tokens, points).round().astype(np.int64))


def compute(p: Params) -> dict:
    """All cost-model numbers the lesson needs, from one vectorized call."""
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype)
    xs = grid()
    anim_xs = grid(points=41)
    chunks = [
        mixed_batch(xs, 0, 0),  # prompt only
        mixed_batch(xs, p.decodes, p.context_tokens),  # with the running decodes
        mixed_batch(np.array([p.tokens]), 0, 0),
        mixed_batch(np.array([p.tokens]), p.decodes, p.context_tokens),
        mixed_batch(np.array([REF_TOKENS]), 0, 0),
        mixed_batch(anim_xs, 0, 0),
    ]
    sizes = np.cumsum([0] + [len(c["query_tokens"]) for c in chunks])
    merged = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    costs = step_costs(dep, **merged)
    parts = [_take(costs, slice(sizes[i], sizes[i + 1])) for i in range(len(chunks))]
    model = get_model(p.model)
    kv_gb = p.decodes * p.context_tokens * kv_bytes_per_token(model, p.dtype, p.tp) / 1e9
    return {
        "deployment": dep,
        "xs": xs,
        "anim_xs": anim_xs,
        "prompt": parts[0],
        "with_kv": parts[1],
        "at_n": parts[2],
        "at_n_kv": parts[3],
        "ref": parts[4],
        "anim": parts[5],
        "weight_read_ms": weight_read_ms(dep),
        "ridge_tokens": ridge_tokens(dep),
        "weight_gb": weight_read_bytes(model, p.dtype, p.tp, tokens=1) / 1e9,
        "pool": kv_pool(p.gpu, p.model, tp=p.tp, dtype=p.dtype),
        "kv_gb": kv_gb,
    }


def numbers(p: Params, c: dict) -> dict:
    """The values the lesson text quotes, all taken from `c`."""
    # The seed's back-of-envelope: an 8B model on a 3 TB/s, 500 TFLOP/s GPU (H100-SXM's numbers
    # scaled by sim.cost's seed assumptions), whatever the learner has selected.
    h100_8b = Deployment(gpu="H100-SXM", model="Llama-3.1-8B")
    seed = step_costs(h100_8b, **mixed_batch(np.array([1, REF_TOKENS]), 0, 0), assumptions="seed")
    calibrated = step_costs(h100_8b, **mixed_batch(np.array([REF_TOKENS]), 0, 0))
    # A step well below the ridge (a power of two at most half of it): the text quotes its price.
    small_tokens = int(2 ** np.clip(np.floor(np.log2(c["ridge_tokens"] / 2)), 3, 8))
    cal_weight_ms = weight_read_ms(h100_8b)
    small = step_costs(c["deployment"], **mixed_batch(np.array([1, small_tokens]), 0, 0))
    one_ms, small_ms = (float(v) for v in small.step_ms)
    ref_ms = float(c["ref"]["step_ms"][0])
    return {
        "gpu_name": get_gpu(p.gpu).name,
        "fits": c["pool"].fits,
        "memory_gib": get_gpu(p.gpu).memory_gib,
        "model_name": p.model,
        "dtype": p.dtype.upper(),
        "tp_phrase": "" if p.tp == 1 else f", split over {p.tp} GPUs",
        "weight_gb": c["weight_gb"],
        "weight_read_ms": c["weight_read_ms"],
        "ridge_tokens": int(round(c["ridge_tokens"])),
        "ref_tokens": REF_TOKENS,
        "ref_ms": ref_ms,
        "ref_ratio": ref_ms / c["weight_read_ms"],
        "decodes": p.decodes,
        "context_tokens": p.context_tokens,
        "kv_gb": c["kv_gb"],
        "n_tokens": p.tokens,
        "n_ms": float(c["at_n"]["step_ms"][0]),
        "n_ms_with_kv": float(c["at_n_kv"]["step_ms"][0]),
        "n_bound": "memory" if bool(c["at_n"]["memory_bound"][0]) else "compute",
        "max_tokens": MAX_TOKENS,
        "seed_weight_ms": float(seed.step_ms[0]),
        "seed_2048_ms": float(seed.step_ms[1]),
        "cal_weight_ms": cal_weight_ms,
        "cal_2048_ms": float(calibrated.step_ms[0]),
        "cal_ratio": float(calibrated.step_ms[0]) / cal_weight_ms,
        "seed_ratio": float(seed.step_ms[1]) / float(seed.step_ms[0]),
        "one_ms": one_ms,
        "small_tokens": small_tokens,
        "small_ms": small_ms,
        "small_pct": (small_ms / one_ms - 1) * 100,
        "small_per_token_ms": (small_ms - one_ms) / (small_tokens - 1),
    }


def _axes_titles(layout: dict, x: str, y: str, xkey="xaxis", ykey="yaxis") -> None:
    layout.setdefault(xkey, {})["title"] = {"text": x}
    layout.setdefault(ykey, {})["title"] = {"text": y}


def curve_figure(p: Params, c: dict) -> dict:
    """Step time against tokens: the floor, the slope, the ridge, and the KV-read curve."""
    xs = c["xs"].tolist()
    y_prompt = c["prompt"]["step_ms"]
    y_kv = c["with_kv"]["step_ms"]
    top = float(max(y_prompt.max(), y_kv.max())) * 1.3
    bottom = float(min(y_prompt.min(), y_kv.min())) * 0.7
    ridge = float(c["ridge_tokens"])
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "prompt tokens only",
            "x": xs,
            "y": y_prompt.tolist(),
            "line": {"color": color("decode"), "width": 3},
            "hovertemplate": "%{x:,} tokens: %{y:.1f} ms<extra>prompt only</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"plus {p.decodes:,} decodes reading {p.context_tokens:,} tokens of KV each",
            "x": xs,
            "y": y_kv.tolist(),
            "line": {"color": color("prefill"), "width": 3, "dash": "dash"},
            "hovertemplate": "%{x:,} tokens: %{y:.1f} ms<extra>with decodes</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"weight read: {c['weight_read_ms']:.1f} ms",
            "x": [xs[0], xs[-1]],
            "y": [c["weight_read_ms"]] * 2,
            "line": {"color": color("neutral"), "width": 1, "dash": "dot"},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"ridge: {ridge:,.0f} tokens",
            "x": [ridge, ridge],
            "y": [bottom, top],
            "line": {"color": color("highlight"), "width": 2, "dash": "dot"},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"your step: {p.tokens:,} tokens",
            "x": [p.tokens, p.tokens],
            "y": [float(c["at_n"]["step_ms"][0]), float(c["at_n_kv"]["step_ms"][0])],
            "marker": {"size": 12, "color": color("neutral"), "symbol": "diamond"},
            "hovertemplate": "%{x:,} tokens: %{y:.1f} ms<extra>your step</extra>",
        },
    ]
    layout = {
        "title": {"text": f"Step time on {p.gpu}, {p.model} ({p.dtype.upper()}, TP {p.tp})"},
        "xaxis": {"type": "log", "dtick": 1},
        "yaxis": {"type": "log", "dtick": 1, "range": [np.log10(bottom), np.log10(top)]},
        "legend": {"orientation": "h", "y": -0.25},
        "height": 460,
        "margin": {"t": 60, "b": 40},
    }
    _axes_titles(layout, "tokens in the step (log scale)", "step time (ms, log scale)")
    return {"data": data, "layout": layout}


def _bars(at: dict) -> list[dict]:
    return [
        {
            "type": "bar",
            "orientation": "h",
            "name": label,
            "y": ["prompt only", "with decodes"],
            "x": [float(v) for v in at[name]],
            "marker": {"color": color(role)},
            "hovertemplate": "%{x:.2f} ms<extra>" + label + "</extra>",
        }
        for name, label, role in PARTS
    ]


def parts_figure(p: Params, c: dict) -> dict:
    """Stacked bars of the step's parts at the slider's token count, without and with decodes."""
    both = {name: np.array([c["at_n"][name][0], c["at_n_kv"][name][0]]) for name, _, _ in PARTS}
    layout = {
        "title": {"text": f"Where the time goes in a step of {p.tokens:,} prompt tokens"},
        "barmode": "stack",
        "height": 300,
        "legend": {"orientation": "h", "y": -0.35},
        "margin": {"t": 50, "b": 40},
    }
    _axes_titles(layout, "time (ms)", "step")
    return {"data": _bars(both), "layout": layout}


def animation_figure(p: Params, c: dict) -> dict:
    """The step grows from 1 token: a dot moves along the curve, the parts bar follows."""
    xs = c["anim_xs"]
    anim = c["anim"]
    y_all = c["prompt"]["step_ms"]
    # The bar shows each part's share of the step, so a 7 ms step reads as well as a 400 ms one.
    share = {
        name: 100 * np.asarray(anim[name]) / np.asarray(anim["step_ms"]) for name, _, _ in PARTS
    }

    def frame_data(i: int) -> list[dict]:
        marker = {
            "type": "scatter",
            "mode": "markers",
            "x": [int(xs[i])],
            "y": [float(anim["step_ms"][i])],
            "marker": {"size": 14, "color": color("highlight")},
            "showlegend": False,
            "xaxis": "x",
            "yaxis": "y",
        }
        bars = [
            {
                "type": "bar",
                "orientation": "h",
                "name": label,
                "y": ["this step"],
                "x": [round(float(share[name][i]), 2)],
                "customdata": [round(float(anim[name][i]), 2)],
                "hovertemplate": "%{x:.0f}% (%{customdata:.1f} ms)<extra>" + label + "</extra>",
                "marker": {"color": color(role)},
                "xaxis": "x2",
                "yaxis": "y2",
            }
            for name, label, role in PARTS
        ]
        return [marker, *bars]

    static = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "step time",
            "x": c["xs"].tolist(),
            "y": y_all.tolist(),
            "line": {"color": color("decode"), "width": 3},
            "xaxis": "x",
            "yaxis": "y",
            "showlegend": False,
        }
    ]

    def title(i: int) -> dict:
        bound = "memory-bound" if bool(anim["memory_bound"][i]) else "compute-bound"
        n = int(xs[i])
        text = f"A step of {n:,} token{'s' if n > 1 else ''}: {anim['step_ms'][i]:.1f} ms, {bound}"
        return {"title": {"text": text}}

    frames = [
        {"data": frame_data(i), "traces": list(range(1, 1 + 1 + len(PARTS))), "layout": title(i)}
        for i in range(len(xs))
    ]
    figure = {
        "data": static + frames[0]["data"],
        "layout": {
            **title(0),
            "xaxis": {
                "type": "log",
                "dtick": 1,
                "domain": [0, 0.55],
                "range": [0, np.log10(MAX_TOKENS) + 0.1],
            },
            "yaxis": {
                "type": "log",
                "dtick": 1,
                "range": [np.log10(float(y_all.min()) * 0.7), np.log10(float(y_all.max()) * 1.5)],
            },
            "xaxis2": {"domain": [0.65, 1], "range": [0, 100], "anchor": "y2"},
            "yaxis2": {"anchor": "x2", "showticklabels": False},
            "barmode": "stack",
            "height": 460,
            "legend": {"orientation": "h", "y": 1.12, "x": 0.65},
        },
    }
    layout = figure["layout"]
    _axes_titles(layout, "tokens in the step (log scale)", "step time (ms, log scale)")
    _axes_titles(layout, "share of this step's time by part (%)", "", "xaxis2", "yaxis2")
    labels = [f"{int(x):,}" for x in xs]
    return animate(figure, frames, labels, prefix="tokens in the step: ")


def build(p: Params) -> dict:
    """Every figure and number of the lesson, from one cost-model evaluation."""
    c = compute(p)
    nums = numbers(p, c)
    return {
        "numbers": nums,
        "curve": curve_figure(p, c),
        "parts": parts_figure(p, c),
        "anim": animation_figure(p, c),
        "alt": {
            "curve": (
                f"Line chart, log-log: step time against tokens in the step on {p.gpu} with "
                f"{p.model}. Flat at about {nums['weight_read_ms']:.1f} ms up to the ridge near "
                f"{nums['ridge_tokens']:,} tokens, then rising in proportion; a {REF_TOKENS:,}-"
                f"token step takes {nums['ref_ms']:.1f} ms. A second curve adds {p.decodes:,} "
                "decodes and their KV-cache reads."
            ),
            "parts": (
                f"Stacked bars: the parts of a {p.tokens:,}-token step, {nums['n_ms']:.1f} ms "
                f"alone and {nums['n_ms_with_kv']:.1f} ms with the running decodes."
            ),
            "anim": (
                "Animation: a dot moves along the step-time curve as the step grows from 1 to "
                f"{MAX_TOKENS:,} tokens, with a bar of each part's share of the step beside it."
            ),
        },
    }


def calculator(
    gpu: str,
    model: str,
    dtype: str,
    tp: int,
    tokens: tuple[int, ...],
    decodes: int,
    context_tokens: int,
) -> dict:
    """The step-time calculator: a table of parts and a stacked bar per token count."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    costs = step_costs(dep, **mixed_batch(np.array(tokens), decodes, context_tokens))
    labels = [f"{n:,}" for n in tokens]
    rows = {"prompt tokens": list(tokens), "step (ms)": costs.step_ms.tolist()}
    for name, label, _ in PARTS:
        rows[f"{label} (ms)"] = getattr(costs, name).tolist()
    rows["bound"] = ["memory" if m else "compute" for m in costs.memory_bound]
    layout = {
        "title": {"text": f"Step time by part on {gpu}, {model} ({dtype.upper()}, TP {tp})"},
        "barmode": "stack",
        "height": 380,
        "legend": {"orientation": "h", "y": -0.3},
        "xaxis": {"type": "category"},
    }
    _axes_titles(layout, "prompt tokens in the step", "time (ms)")
    data = [
        {
            "type": "bar",
            "name": label,
            "x": labels,
            "y": getattr(costs, name).tolist(),
            "marker": {"color": color(role)},
            "hovertemplate": "%{y:.2f} ms<extra>" + label + "</extra>",
        }
        for name, label, role in PARTS
    ]
    alt = (
        f"Stacked bars of step time by part for {len(tokens)} token counts on {gpu} with "
        f"{model}: from {costs.step_ms.min():.1f} ms to {costs.step_ms.max():.1f} ms."
    )
    return {"rows": rows, "figure": {"data": data, "layout": layout}, "alt": alt}
