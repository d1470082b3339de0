"""Figures of lesson 5, "The sequence budget and the throughput curve".

With N sequences decoding together, vLLM's scheduler gives each running request one token per
step (SCHEDULER.md a3), so a steady step holds N query tokens from N sequences, each reading its
`context` tokens of KV cache. The lesson prices that step for every N from 1 to 1,024 in one
vectorized `sim.cost.step_costs` call: total decode throughput is N tokens per step time, and
each user gets one token per step. From those arrays come the knee (defined below), the largest
concurrency that meets an ITL target, the KV-cache limit of the GPU (`sim.models.kv_pool`), the
bytes each step reads (weights against KV cache, which is why the curve bends) and an animation
that grows N.

The knee: the smallest N at which doubling the concurrency to 2N raises total throughput by less
than half (KNEE_GAIN = 1.5). Prompt prefill is left out: these are decode steps only.

`build(params)` returns the figure dicts and the numbers the text quotes, from the same arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from lessons.anim import animate
from lessons.choosing_budget.figures import log_ticks, lower_controls
from lessons.theme import color
from sim.cost import Deployment, step_costs, weight_read_ms
from sim.errors import SimInputError
from sim.models import get_model, kv_bytes_per_token, kv_pool, weight_read_bytes

MAX_SEQS = 1_024
KNEE_GAIN = 1.5
BLOCK = 16
CONCURRENCY = np.arange(1, MAX_SEQS + 1, dtype=np.int64)
ANIM_N = np.unique(np.geomspace(1, MAX_SEQS, 31).round().astype(np.int64))
POW2_TICKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
PARTS = (
    ("linear_ms", "linear layers", "compute"),
    ("attention_ms", "attention", "kv"),
    ("other_ms", "the rest", "neutral"),
)


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set."""

    gpu: str = "H100-SXM"
    model: str = "Llama-3.1-8B"
    context: int = 2_048
    itl_target_ms: int = 20
    max_num_seqs: int = 1_024
    budget: int = 8_192

    @property
    def scene(self) -> Params:
        """What the step times and the KV pool depend on (not the target, not max_num_seqs)."""
        return replace(self, itl_target_ms=Params.itl_target_ms, max_num_seqs=Params.max_num_seqs)

    @property
    def view(self) -> Params:
        """What the reads chart and the animation depend on: GPU, model and context only."""
        return replace(self.scene, budget=Params.budget)


def compute(p: Params) -> dict:
    """Steady decode steps for N = 1..1,024 priced in one call, and the derived curves.

    The curves are cached on the scene; the ITL pick is recomputed for the target. Callers must
    treat the arrays as read-only.
    """
    c = _compute_scene(p.scene)
    step, n, kv_cap = c["step_ms"], c["n"], c["kv_cap"]
    # The ITL target's pick: the largest concurrency that meets it and that the KV cache holds.
    meets = np.flatnonzero(step <= p.itl_target_ms)
    held = np.flatnonzero((step <= p.itl_target_ms) & (n <= kv_cap))
    return {
        **c,
        "fast_enough": int(n[meets[-1]]) if meets.size else None,
        "pick": int(n[held[-1]]) if held.size else None,
    }


@lru_cache(maxsize=64)
def _compute_scene(p: Params) -> dict:
    dep = Deployment(gpu=p.gpu, model=p.model)
    n = CONCURRENCY
    costs = step_costs(
        dep,
        query_tokens=n,
        num_seqs=n,
        kv_read_tokens=n * p.context,
        attn_pairs=n * (p.context + 1),
    )
    step = np.asarray(costs.step_ms, dtype=np.float64)
    total = n / step * 1e3
    per_user = 1e3 / step
    half = np.arange(1, MAX_SEQS // 2 + 1)
    gain = total[2 * half - 1] / total[half - 1]
    below = np.flatnonzero(gain < KNEE_GAIN)
    knee = int(half[below[0]]) if below.size else None
    model = get_model(p.model)
    weight_gb = weight_read_bytes(model) / 1e9
    kv_per_seq_gb = p.context * kv_bytes_per_token(model) / 1e9
    pool = kv_pool(p.gpu, p.model, max_num_batched_tokens=p.budget)
    blocks_per_seq = -(-p.context // BLOCK)
    kv_cap = int((pool.num_gpu_blocks - 1) // blocks_per_seq) if pool.fits else 0
    parts = {
        "linear_ms": np.asarray(costs.linear_ms),
        "attention_ms": np.asarray(costs.attention_ms),
        "other_ms": np.asarray(costs.lm_head_ms + costs.comm_ms + costs.overhead_ms),
    }
    return {
        "deployment": dep,
        "n": n,
        "step_ms": step,
        "total": total,
        "per_user": per_user,
        "gain": gain,
        "knee": knee,
        "weight_gb": weight_gb,
        "weight_read_ms": weight_read_ms(dep),
        "kv_per_seq_gb": kv_per_seq_gb,
        "kv_gb": n * kv_per_seq_gb,
        "crossover": weight_gb / kv_per_seq_gb,
        "kv_cap": kv_cap,
        "fits": pool.fits,
        "pool_gib": pool.kv_pool_gib,
        "parts": parts,
    }


def config_error(p: Params) -> str | None:
    """vLLM's own words if it would refuse these limits (max_num_seqs above the budget)."""
    from sim.config import SchedulerConfig

    try:
        SchedulerConfig(
            max_num_batched_tokens=p.budget,
            max_num_seqs=p.max_num_seqs,
            max_model_len=max(p.context + 1, 2),
            num_gpu_blocks=2,
        )
    except SimInputError as err:
        return str(err)
    return None


def numbers(p: Params, c: dict) -> dict:
    """The values the lesson text quotes, all taken from `c`."""

    def at(n: int) -> dict:
        i = int(n) - 1
        return {
            "step_ms": float(c["step_ms"][i]),
            "total": float(c["total"][i]),
            "per_user": float(c["per_user"][i]),
        }

    one, top = at(1), at(MAX_SEQS)
    knee = c["knee"]
    k = at(knee) if knee else {"step_ms": np.nan, "total": np.nan, "per_user": np.nan}
    pick = c["pick"]
    pk = at(pick) if pick else {"step_ms": np.nan, "total": np.nan, "per_user": np.nan}
    cap = min(p.max_num_seqs, MAX_SEQS)
    mine = at(cap)
    reach = min(cap, c["kv_cap"]) if c["kv_cap"] > 0 else 0
    r = at(reach) if reach else {"step_ms": np.nan, "total": np.nan, "per_user": np.nan}
    return {
        "gpu": p.gpu,
        "model": p.model,
        "context": p.context,
        "target_ms": p.itl_target_ms,
        "max_num_seqs": p.max_num_seqs,
        "budget": p.budget,
        "one_step_ms": one["step_ms"],
        "one_total": one["total"],
        "top_step_ms": top["step_ms"],
        "top_total": top["total"],
        "top_per_user": top["per_user"],
        "knee": knee,
        "knee_step_ms": k["step_ms"],
        "knee_total": k["total"],
        "knee_per_user": k["per_user"],
        "knee_gain_pct": (KNEE_GAIN - 1) * 100,
        "knee_share": k["total"] / top["total"] if knee else np.nan,
        "top_vs_knee": top["total"] / k["total"] if knee else np.nan,
        "pick": pick,
        "fast_enough": c["fast_enough"],
        "pick_kv_bound": bool(pick and c["fast_enough"] and c["fast_enough"] > pick),
        "pick_step_ms": pk["step_ms"],
        "pick_total": pk["total"],
        "pick_per_user": pk["per_user"],
        "cap": cap,
        "cap_step_ms": mine["step_ms"],
        "cap_total": mine["total"],
        "cap_per_user": mine["per_user"],
        "weight_gb": c["weight_gb"],
        "weight_read_ms": c["weight_read_ms"],
        "max_seqs": MAX_SEQS,
        "weight_share": min(c["weight_read_ms"] / one["step_ms"], 1.0),
        "kv_per_seq_gb": c["kv_per_seq_gb"],
        "kv_per_seq_mb": c["kv_per_seq_gb"] * 1e3,
        "crossover": c["crossover"],
        "kv_cap": c["kv_cap"],
        "reach": reach,
        "reach_step_ms": r["step_ms"],
        "reach_total": r["total"],
        "reach_per_user": r["per_user"],
        "pool_gib": c["pool_gib"],
        "fits": c["fits"],
        "speedup_1_to_knee": k["total"] / one["total"] if knee else np.nan,
        "slowdown_1_to_top": one["per_user"] / top["per_user"],
    }


def _vline(x: float, lo: float, hi: float, axis: str, role: str, dash: str, label: str = ""):
    return {
        "type": "scatter",
        "mode": "lines+text" if label else "lines",
        "x": [x, x],
        "y": [lo, hi],
        "yaxis": axis,
        "text": ["", label] if label else None,
        "textposition": "bottom left" if x > 128 else "bottom right",
        "textfont": {"color": color(role)},
        "line": {"color": color(role), "width": 2, "dash": dash},
        "hoverinfo": "skip",
        "showlegend": False,
    }


def _log_range(values: np.ndarray, pad: float = 1.5) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return float(v.min() / pad), float(v.max() * pad)


def curve_figure(p: Params, c: dict, nums: dict) -> dict:
    """Total and per-user tokens per second against concurrency, with the knee and the picks."""
    n = c["n"].astype(np.float64)
    cap = c["kv_cap"]
    ok = n <= cap
    total, per_user = c["total"], c["per_user"]
    t_lo, t_hi = _log_range(total)
    u_lo, u_hi = _log_range(per_user)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "total tokens/s (all users)",
            "x": n[ok],
            "y": total[ok],
            "line": {"color": color("primary"), "width": 3},
            "hovertemplate": "%{x} sequences: %{y:,.0f} tokens/s<extra>total</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "tokens/s for each user",
            "x": n[ok],
            "y": per_user[ok],
            "yaxis": "y2",
            "line": {"color": color("prefill"), "width": 3},
            "hovertemplate": "%{x} sequences: %{y:,.1f} tokens/s each<extra>per user</extra>",
        },
    ]
    if (~ok).any():
        beyond = "beyond the KV cache (not reachable)"
        data += [
            {
                "type": "scatter",
                "mode": "lines",
                "name": beyond,
                "x": n[~ok],
                "y": total[~ok],
                "line": {"color": color("primary"), "width": 2, "dash": "dot"},
                "opacity": 0.5,
                "hovertemplate": "%{x} sequences would need more KV cache<extra></extra>",
            },
            {
                "type": "scatter",
                "mode": "lines",
                "name": beyond,
                "x": n[~ok],
                "y": per_user[~ok],
                "yaxis": "y2",
                "line": {"color": color("prefill"), "width": 2, "dash": "dot"},
                "opacity": 0.5,
                "showlegend": False,
                "hovertemplate": "%{x} sequences would need more KV cache<extra></extra>",
            },
        ]
        if cap >= 1:
            label = f" KV cache full at {cap:,}"
            data += [
                _vline(cap, t_lo, t_hi, "y", "neutral", "dash", label),
                _vline(cap, u_lo, u_hi, "y2", "neutral", "dash"),
            ]
    if nums["knee"]:
        k = nums["knee"]
        data += [
            _vline(k, t_lo, t_hi, "y", "highlight", "dot", f" knee: {k:,}"),
            _vline(k, u_lo, u_hi, "y2", "highlight", "dot"),
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"knee: {k:,} sequences",
                "x": [k],
                "y": [nums["knee_total"]],
                "marker": {"size": 12, "symbol": "diamond", "color": color("highlight")},
                "hovertemplate": "knee at %{x}: %{y:,.0f} tokens/s<extra></extra>",
            },
        ]
    if nums["pick"]:
        star = {
            "type": "scatter",
            "mode": "markers",
            "name": f"largest within {p.itl_target_ms} ms: {nums['pick']:,}",
            "x": [nums["pick"]],
            "y": [nums["pick_total"]],
            "marker": {"size": 15, "symbol": "star", "color": color("kv")},
            "hovertemplate": "%{x} sequences<extra>largest within the target</extra>",
        }
        data += [star, {**star, "y": [nums["pick_per_user"]], "yaxis": "y2", "showlegend": False}]
    data += [
        _vline(nums["cap"], t_lo, t_hi, "y", "decode", "solid", f" max_num_seqs: {nums['cap']:,}"),
        _vline(nums["cap"], u_lo, u_hi, "y2", "decode", "solid"),
    ]
    layout = {
        "title": {
            "text": f"Throughput against concurrency on {p.gpu}, {p.model}, "
            f"{p.context:,} tokens of context each"
        },
        "xaxis": {
            "type": "log",
            "anchor": "y2",
            "tickvals": POW2_TICKS,
            "range": [-0.05, float(np.log10(MAX_SEQS)) + 0.05],
            "title": {"text": "sequences decoding together (concurrency, log scale)"},
        },
        "yaxis": {
            "type": "log",
            "domain": [0.55, 1.0],
            "anchor": "x",
            "range": [float(np.log10(t_lo)), float(np.log10(t_hi))],
            "tickvals": log_ticks(np.log10(t_lo), np.log10(t_hi)),
            "title": {"text": "total (tokens/s, log)"},
        },
        "yaxis2": {
            "type": "log",
            "domain": [0.0, 0.45],
            "anchor": "x",
            "range": [float(np.log10(u_lo)), float(np.log10(u_hi))],
            "tickvals": log_ticks(np.log10(u_lo), np.log10(u_hi)),
            "title": {"text": "each user (tokens/s, log)"},
        },
        "legend": {"orientation": "h", "y": -0.16},
        "height": 640,
        "margin": {"t": 60, "b": 40},
    }
    return {"data": data, "layout": layout}


def reads_figure(p: Params, c: dict, nums: dict) -> dict:
    """Bytes one step reads: the weights (the same for any N) against every sequence's KV cache."""
    n = c["n"].astype(np.float64)
    kv = c["kv_gb"]
    w = c["weight_gb"]
    lo, hi = _log_range(np.append(kv, w), 2.0)
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"weights: {w:.1f} GB every step",
            "x": [1.0, float(MAX_SEQS)],
            "y": [w, w],
            "line": {"color": color("compute"), "width": 3},
            "hovertemplate": "weights: %{y:.1f} GB<extra></extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"KV cache: {nums['kv_per_seq_mb']:,.0f} MB per sequence",
            "x": n,
            "y": kv,
            "line": {"color": color("kv"), "width": 3},
            "hovertemplate": "%{x} sequences: %{y:.1f} GB of KV<extra></extra>",
        },
    ]
    x = nums["crossover"]
    if 1 <= x <= MAX_SEQS:
        data.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": f"equal at {x:,.0f} sequences",
                "x": [x],
                "y": [w],
                "text": [f"equal at {x:,.0f}"],
                "textposition": "top left",
                "marker": {"size": 12, "color": color("highlight")},
                "hoverinfo": "skip",
            }
        )
    layout = {
        "title": {"text": "What one decode step reads from GPU memory"},
        "xaxis": {
            "type": "log",
            "tickvals": POW2_TICKS,
            "range": [-0.05, float(np.log10(MAX_SEQS)) + 0.05],
            "title": {"text": "sequences decoding together (log scale)"},
        },
        "yaxis": {
            "type": "log",
            "range": [float(np.log10(lo)), float(np.log10(hi))],
            "tickvals": log_ticks(np.log10(lo), np.log10(hi)),
            "title": {"text": "bytes read per step (GB, log)"},
        },
        "legend": {"orientation": "h", "y": -0.25},
        "height": 380,
        "margin": {"t": 50, "b": 40},
    }
    return {"data": data, "layout": layout}


def anim_figure(p: Params, c: dict) -> dict:
    """Grow the concurrency: the two throughputs move along their curves, the step splits."""
    idx = ANIM_N - 1
    n = c["n"].astype(np.float64)
    step = c["step_ms"]
    part_max = max(float(c["parts"][name][idx].max()) for name, _, _ in PARTS) * 1.08
    t_lo, t_hi = _log_range(c["total"])
    u_lo, u_hi = _log_range(c["per_user"])

    def frame(i: int) -> tuple[list[dict], str]:
        k = int(ANIM_N[i])
        j = k - 1
        traces = [
            {"x": [k], "y": [float(c["total"][j])]},
            {"x": [k], "y": [float(c["per_user"][j])]},
        ]
        traces.append({"x": bar_x, "y": [float(c["parts"][name][j]) for name, _, _ in PARTS]})
        title = (
            f"{k:,} sequence{'s' if k > 1 else ''}: a step takes {step[j]:.1f} ms; "
            f"{c['total'][j]:,.0f} tokens/s in all, {c['per_user'][j]:,.0f} for each user"
        )
        return traces, title

    bar_x = [label for _, label, _ in PARTS]
    first, title0 = frame(0)
    static = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "total tokens/s",
            "x": n,
            "y": c["total"],
            "line": {"color": color("primary"), "width": 2},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "tokens/s per user",
            "x": n,
            "y": c["per_user"],
            "yaxis": "y3",
            "line": {"color": color("prefill"), "width": 2},
            "hoverinfo": "skip",
        },
    ]
    moving = [
        {
            "type": "scatter",
            "mode": "markers",
            "x": first[0]["x"],
            "y": first[0]["y"],
            "marker": {
                "size": 14,
                "color": color("primary"),
                "line": {"width": 2, "color": "white"},
            },
            "showlegend": False,
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "x": first[1]["x"],
            "y": first[1]["y"],
            "yaxis": "y3",
            "marker": {
                "size": 14,
                "color": color("prefill"),
                "line": {"width": 2, "color": "white"},
            },
            "showlegend": False,
            "hoverinfo": "skip",
        },
    ]
    moving.append(
        {
            "type": "bar",
            "name": "step time by part",
            "x": bar_x,
            "y": first[2]["y"],
            "xaxis": "x2",
            "yaxis": "y2",
            "marker": {"color": [color(role) for _, _, role in PARTS]},
            "showlegend": False,
            "hovertemplate": "%{y:.1f} ms<extra>%{x}</extra>",
        }
    )
    frames, labels = [], []
    for i in range(ANIM_N.size):
        traces, title = frame(i)
        frames.append(
            {
                "data": [{"type": t["type"], **d} for t, d in zip(moving, traces, strict=True)],
                "traces": list(range(2, 2 + len(moving))),
                "layout": {"title": {"text": title}},
            }
        )
        labels.append(f"{int(ANIM_N[i]):,}")
    figure = {
        "data": static + moving,
        "layout": {
            "title": {"text": title0},
            "xaxis": {
                "type": "log",
                "domain": [0.0, 0.54],
                "tickvals": POW2_TICKS,
                "range": [-0.05, float(np.log10(MAX_SEQS)) + 0.05],
                "title": {"text": "sequences decoding together (log)"},
            },
            "yaxis": {
                "type": "log",
                "range": [float(np.log10(t_lo)), float(np.log10(t_hi))],
                "tickvals": log_ticks(np.log10(t_lo), np.log10(t_hi)),
                "title": {"text": "total tokens/s (log)"},
                "color": color("primary"),
            },
            "yaxis3": {
                "type": "log",
                "overlaying": "y",
                "side": "right",
                "range": [float(np.log10(u_lo)), float(np.log10(u_hi))],
                "tickvals": log_ticks(np.log10(u_lo), np.log10(u_hi)),
                "title": {"text": "tokens/s per user (log)"},
                "color": color("prefill"),
                "anchor": "x",
            },
            "xaxis2": {
                "domain": [0.74, 1.0],
                "anchor": "y2",
                "title": {"text": "part of the step"},
            },
            "yaxis2": {
                "anchor": "x2",
                "side": "right",
                "range": [0, part_max],
                "title": {"text": "time in the step (ms)"},
            },
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0.0},
            "height": 440,
            "margin": {"t": 110},
        },
    }
    figure = animate(figure, frames, labels, prefix="sequences: ")
    lower_controls(figure)
    return figure


def build(p: Params) -> dict:
    """The numbers and the throughput chart (they follow every control); see build_static."""
    c = compute(p)
    nums = numbers(p, c)
    knee_txt = (
        f"the knee, where doubling adds less than half again, is at {nums['knee']:,} sequences"
        if nums["knee"]
        else "the curve has no knee below 1,024 sequences"
    )
    pick_txt = (
        f"the largest concurrency whose step stays within {p.itl_target_ms} ms is {nums['pick']:,}"
        if nums["pick"]
        else f"no concurrency keeps the step within {p.itl_target_ms} ms"
    )
    return {
        "numbers": nums,
        "curve": curve_figure(p, c, nums),
        "config_error": config_error(p),
        "alt": {
            "curve": (
                f"Two line charts sharing a log-scale concurrency axis from 1 to {MAX_SEQS:,} "
                f"sequences on {p.gpu} with {p.model}. Top: total tokens per second rises from "
                f"{nums['one_total']:,.0f} at one sequence and flattens; {knee_txt}. Bottom: "
                f"tokens per second for each user fall from {nums['one_total']:,.0f} to "
                f"{nums['top_per_user']:,.1f}. With a {p.itl_target_ms} ms target, {pick_txt}."
            ),
        },
    }


def build_static(p: Params) -> dict:
    """The reads chart and the animation: they depend on GPU, model and context only (p.view)."""
    v = p.view
    c = compute(v)
    nums = numbers(v, c)
    return {
        "reads": reads_figure(v, c, nums),
        "anim": anim_figure(v, c),
        "alt": {
            "reads": (
                f"Log-log line chart of the bytes a decode step reads: the weights, flat at "
                f"{nums['weight_gb']:.1f} GB, and the KV cache of all sequences, rising in "
                f"proportion to their number and passing the weights near "
                f"{nums['crossover']:,.0f} sequences."
            ),
            "anim": (
                "Animation: the concurrency grows from 1 to 1,024 sequences; one dot rides the "
                "total-throughput curve, another the per-user curve, and three bars split the "
                "step time into linear layers, attention and the rest."
            ),
        },
    }
