"""Figures of lesson 4, "Choosing the budget": the step time and the first-token time it buys.

A long prompt arrives while `decodes` users are streaming. vLLM serves the running users first
(one token each) and gives the prompt whatever is left of the token budget, so each step carries
`decodes` decode tokens plus a chunk of `budget - decodes` prompt tokens, until the prompt is in
(SCHEDULER.md a3-a4; the recording tests/data/exercise.json shows it: 4,096 - 128 = 3,968). The
lesson prices those steps with the cost model for every budget from 256 to 32,768 at once: one
vectorized `sim.cost.step_costs` call over all the prefill steps of all the budgets. From that
come the longest step the running users sit through (their worst inter-token latency), the time
to the prompt's first token, the largest budget that meets an ITL target, and an animation that
walks through the budgets. tests/test_lesson_choosing_budget.py checks the chunk sequence against
the scheduler itself (`sim.scheduler.run_steps`).

`build(params)` returns the figure dicts and the numbers the text quotes, from the same arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from lessons.anim import animate
from lessons.theme import color
from sim.cost import Deployment, step_costs
from sim.hardware import default_batch_limits, get_gpu

BUDGET_MIN = 256
BUDGET_MAX = 32_768
BUDGET_STEP = 256
BUDGETS = np.arange(BUDGET_MIN, BUDGET_MAX + 1, BUDGET_STEP, dtype=np.int64)
ANIM_BUDGETS = (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 32768)
ANIM_START = 4_096  # the animation opens on the worked example's budget, whatever the slider says
CONTEXT = 1_024  # tokens each running user already holds when the long prompt arrives
MAX_LANE_STEPS = 160  # steps drawn per animation frame (the window is cut there)
POW2_TICKS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set."""

    gpu: str = "H100-SXM"
    model: str = "Llama-3.1-8B"
    budget: int = 4_096
    decodes: int = 128
    prompt: int = 20_000
    itl_target_ms: int = 50

    @property
    def scene(self) -> Params:
        """The settings the step times depend on (not the budget marker, not the ITL target)."""
        return replace(self, budget=Params.budget, itl_target_ms=Params.itl_target_ms)


def prefill_batches(budgets: np.ndarray, decodes: int, prompt: int, context: int) -> dict:
    """The steps that bring in a `prompt`-token request while `decodes` users decode, per budget.

    Running requests go first, one token each; the prompt takes the rest of the budget. Returns
    flat per-step arrays (`owner` = index into `budgets`, `k` = 0-based step of that budget's
    prefill) with the inputs of `step_costs`: query tokens, sequences, KV tokens read, attention
    pairs, as the scheduler counts them (sim/scheduler.py: context = tokens computed before).
    Budgets that leave no room for the prompt (budget <= decodes) get no steps.
    """
    budgets = np.asarray(budgets, dtype=np.int64)
    room = budgets - decodes
    ok = room > 0
    n_steps = np.where(ok, -(-prompt // np.maximum(room, 1)), 0)
    owner = np.repeat(np.arange(budgets.size), n_steps)
    starts = np.cumsum(n_steps) - n_steps
    k = np.arange(owner.size) - starts[owner]
    done = k * room[owner]
    chunk = np.minimum(room[owner], prompt - done)
    ctx = context + k  # each running user gains one token per step
    return {
        "owner": owner,
        "k": k,
        "chunk": chunk,
        "n_steps": n_steps,
        "room": room,
        "query_tokens": decodes + chunk,
        "num_seqs": np.full(owner.size, decodes + 1, dtype=np.int64),
        "kv_read_tokens": decodes * ctx + done,
        "attn_pairs": decodes * (ctx + 1) + chunk * done + chunk * (chunk + 1) // 2,
    }


def compute(p: Params) -> dict:
    """Every budget's prefill priced in one cost-model call, plus a decode-only step.

    Cached on the scene (GPU, model, decodes, prompt): moving the budget or the ITL target
    reuses the same arrays, which callers must treat as read-only.
    """
    if p.budget not in BUDGETS:
        raise ValueError(f"budget {p.budget} is not a multiple of {BUDGET_STEP} in range")
    return _compute_scene(p.scene)


@lru_cache(maxsize=64)
def _compute_scene(p: Params) -> dict:
    dep = Deployment(gpu=p.gpu, model=p.model)
    grid = np.union1d(BUDGETS, np.asarray(ANIM_BUDGETS, dtype=np.int64))
    b = prefill_batches(grid, p.decodes, p.prompt, CONTEXT)
    n = int(b["owner"].size)
    # Row n: one step with only the running users decoding (their usual inter-token latency).
    costs = step_costs(
        dep,
        query_tokens=np.append(b["query_tokens"], p.decodes),
        num_seqs=np.append(b["num_seqs"], p.decodes),
        kv_read_tokens=np.append(b["kv_read_tokens"], p.decodes * CONTEXT),
        attn_pairs=np.append(b["attn_pairs"], p.decodes * (CONTEXT + 1)),
    )
    ms = np.asarray(costs.step_ms, dtype=np.float64)
    step_ms, decode_ms = ms[:n], float(ms[n])
    ok = b["n_steps"] > 0
    ttft = np.full(grid.size, np.nan)
    worst = np.full(grid.size, np.nan)
    ttft[ok] = np.bincount(b["owner"], weights=step_ms, minlength=grid.size)[ok]
    worst_all = np.full(grid.size, -np.inf)
    np.maximum.at(worst_all, b["owner"], step_ms)
    worst[ok] = worst_all[ok]
    return {
        "deployment": dep,
        "grid": grid,
        "batches": b,
        "step_ms": step_ms,
        "decode_ms": decode_ms,
        "ttft_ms": ttft,
        "worst_ms": worst,
        "ok": ok,
    }


def _at(c: dict, budget: int) -> int:
    return int(np.searchsorted(c["grid"], budget))


def pick_budget(c: dict, target_ms: float) -> int | None:
    """The largest budget (multiple of 256) whose longest prefill step meets `target_ms`."""
    on_grid = np.isin(c["grid"], BUDGETS)
    meets = on_grid & c["ok"] & (c["worst_ms"] <= target_ms)
    if not meets.any():
        return None
    return int(c["grid"][meets].max())


def numbers(p: Params, c: dict) -> dict:
    """The values the lesson text quotes, all taken from `c`."""
    i = _at(c, p.budget)
    b = c["batches"]
    ok = bool(c["ok"][i])
    mine = b["owner"] == i
    chunks = b["chunk"][mine]
    pick = pick_budget(c, p.itl_target_ms)
    j = _at(c, pick) if pick is not None else None
    default = default_batch_limits(p.gpu, usage="server")["max_num_batched_tokens"]
    smallest = int(np.flatnonzero(c["ok"] & np.isin(c["grid"], BUDGETS))[0])
    return {
        "gpu": p.gpu,
        "gpu_name": get_gpu(p.gpu).name,
        "model": p.model,
        "budget": p.budget,
        "decodes": p.decodes,
        "prompt": p.prompt,
        "context": CONTEXT,
        "fits_prompt": ok,
        "room": int(b["room"][i]),
        "chunk": int(chunks[0]) if ok else 0,
        "last_chunk": int(chunks[-1]) if ok else 0,
        "full_chunks": int((chunks == chunks[0]).sum()) if ok else 0,
        "steps": int(b["n_steps"][i]),
        "worst_ms": float(c["worst_ms"][i]) if ok else float("nan"),
        "ttft_ms": float(c["ttft_ms"][i]) if ok else float("nan"),
        "ttft_s": float(c["ttft_ms"][i]) / 1e3 if ok else float("nan"),
        "decode_ms": c["decode_ms"],
        "worst_ratio": float(c["worst_ms"][i]) / c["decode_ms"] if ok else float("nan"),
        "target_ms": p.itl_target_ms,
        "pick": pick,
        "pick_worst_ms": float(c["worst_ms"][j]) if j is not None else float("nan"),
        "pick_ttft_s": float(c["ttft_ms"][j]) / 1e3 if j is not None else float("nan"),
        "pick_steps": int(b["n_steps"][j]) if j is not None else 0,
        "smallest_budget": int(c["grid"][smallest]),
        "smallest_worst_ms": float(c["worst_ms"][smallest]),
        "default_budget": default,
        "is_default": p.budget == default,
    }


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
) -> list[dict]:
    """A vertical line at budget `x` through both panels, labelled in the upper one: to the left
    or right of the line, at `height` (0 = bottom, 1 = top of the upper panel)."""
    out = []
    for axis, (lo, hi) in zip(("y", "y2"), ranges, strict=True):
        at = lo + height * (hi - lo)
        out.append(
            {
                "type": "scatter",
                "mode": "lines+text" if axis == "y" else "lines",
                "x": [x, x, x],
                "y": [10**lo, 10**at, 10**hi],
                "yaxis": axis,
                "text": ["", label, ""] if axis == "y" else None,
                "textposition": "bottom left" if left else "bottom right",
                "textfont": {"color": color(role)},
                "line": {"color": color(role), "width": 2, "dash": dash},
                "hoverinfo": "skip",
                "showlegend": False,
            }
        )
    return out


def trade_figure(p: Params, c: dict, n: dict) -> dict:
    """Top: the longest step while the prompt is chunked in; bottom: the prompt's first token."""
    grid, ok = c["grid"], c["ok"] & np.isin(c["grid"], BUDGETS)
    xs = grid[ok].astype(np.float64)
    worst = c["worst_ms"][ok]
    ttft_s = c["ttft_ms"][ok] / 1e3
    pick = n["pick"]
    ranges = [
        _range(np.append(worst, [c["decode_ms"], p.itl_target_ms])),
        _range(ttft_s),
    ]
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "longest step while the prompt comes in",
            "x": xs,
            "y": worst,
            "line": {"color": color("prefill"), "width": 3},
            "hovertemplate": "budget %{x:,}: %{y:.1f} ms<extra>longest step</extra>",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"a step of decodes only: {c['decode_ms']:.1f} ms",
            "x": [float(xs[0]), float(xs[-1])],
            "y": [c["decode_ms"]] * 2,
            "line": {"color": color("decode"), "width": 2, "dash": "dot"},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"ITL target: {p.itl_target_ms} ms",
            "x": [float(xs[0]), float(xs[-1])],
            "y": [p.itl_target_ms] * 2,
            "line": {"color": color("neutral"), "width": 2, "dash": "dash"},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "time to the long prompt's first token",
            "x": xs,
            "y": ttft_s,
            "yaxis": "y2",
            "line": {"color": color("kv"), "width": 3},
            "customdata": c["batches"]["n_steps"][ok],
            "hovertemplate": "budget %{x:,}: %{y:.2f} s in %{customdata} steps<extra>TTFT</extra>",
        },
    ]
    if pick is not None:
        star = {
            "type": "scatter",
            "mode": "markers",
            "name": f"largest budget within the target: {pick:,}",
            "x": [pick],
            "y": [n["pick_worst_ms"]],
            "marker": {"size": 14, "color": color("highlight"), "symbol": "star"},
            "hovertemplate": "budget %{x:,}: %{y:.3g}<extra>largest within the target</extra>",
        }
        data += [star, {**star, "y": [n["pick_ttft_s"]], "yaxis": "y2", "showlegend": False}]
    # Labels near the right edge go left of their line, and the default's points away from the
    # learner's budget and sits lower, so the two stay apart however close the budgets are.
    if n["fits_prompt"]:
        label = f" your budget: {p.budget:,} "
        data += _vline(p.budget, label, "primary", "solid", ranges, left=p.budget > 8_192)
    default = n["default_budget"]
    if default != p.budget:
        label = f" vLLM default on {p.gpu}: {default:,} "
        left = default > 8_192 or default < p.budget
        data += _vline(default, label, "neutral", "dot", ranges, left=left, height=0.75)
    layout = {
        "title": {
            "text": f"The budget's trade on {p.gpu}, {p.model}: {p.decodes:,} users streaming"
        },
        "xaxis": {
            "type": "log",
            "anchor": "y2",
            "tickvals": POW2_TICKS,
            "ticktext": [f"{v:,}" for v in POW2_TICKS],
            "range": [float(np.log10(BUDGET_MIN / 1.1)), float(np.log10(BUDGET_MAX * 1.1))],
            "title": {"text": "token budget, max_num_batched_tokens (tokens, log scale)"},
        },
        "yaxis": {
            "type": "log",
            "domain": [0.56, 1.0],
            "anchor": "x",
            "range": ranges[0],
            "tickvals": log_ticks(*ranges[0]),
            "title": {"text": "step time (ms, log)"},
        },
        "yaxis2": {
            "type": "log",
            "domain": [0.0, 0.44],
            "anchor": "x",
            "range": ranges[1],
            "tickvals": log_ticks(*ranges[1]),
            "title": {"text": "first token after (s, log)"},
        },
        "legend": {"orientation": "h", "y": -0.16},
        "height": 640,
        "margin": {"t": 60, "b": 40},
    }
    return {"data": data, "layout": layout}


def _lane_frame(c: dict, i: int, window_ms: float, decodes: int) -> tuple[list[dict], str]:
    """One budget's first `window_ms` after the prompt arrives: its steps and the token ticks."""
    b = c["batches"]
    mine = np.flatnonzero(b["owner"] == i)
    durations = c["step_ms"][mine]
    # After the prefill, the running users go back to decode-only steps.
    extra = max(int(np.ceil((window_ms - durations.sum()) / c["decode_ms"])), 0)
    all_ms = np.concatenate([durations, np.full(extra, c["decode_ms"])])
    ends = np.cumsum(all_ms)
    starts = ends - all_ms
    keep = starts < window_ms
    keep[MAX_LANE_STEPS:] = False
    starts, ends = starts[keep], np.minimum(ends[keep], window_ms)
    n_prefill = int(min(mine.size, keep.sum()))
    # Each prefill step is a rectangle: 5 corners and a NaN to lift the pen (one trace for all).
    s0, e0 = starts[:n_prefill], ends[:n_prefill]
    nan = np.full(n_prefill, np.nan)
    xs = np.stack([s0, e0, e0, s0, s0, nan], axis=1).reshape(-1)
    ys = np.tile([0.15, 0.15, 0.85, 0.85, 0.15, np.nan], n_prefill)
    ticks = ends[ends < window_ms]
    done = mine.size <= keep.sum() and float(c["ttft_ms"][i]) <= window_ms
    first = np.array([float(c["ttft_ms"][i])] if done else [])
    traces = [
        {
            "type": "scatter",
            "mode": "lines",
            "fill": "toself",
            "name": "prefill step (decodes + a prompt chunk)",
            "x": xs,
            "y": ys,
            "fillcolor": color("prefill"),
            "line": {"color": "white", "width": 1},
            "hoverinfo": "skip",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": f"a token for each of the {decodes:,} running users",
            "x": ticks,
            "y": np.full(ticks.size, 1.5),
            "marker": {
                "symbol": "line-ns",
                "size": 22,
                "line": {"width": 2, "color": color("decode")},
            },
            "hovertemplate": "%{x:,.0f} ms<extra>tokens delivered</extra>",
        },
        {
            "type": "scatter",
            "mode": "markers",
            "name": "the long prompt's first token",
            "x": first,
            "y": np.full(first.size, 0.5),
            "marker": {"symbol": "star", "size": 18, "color": color("highlight")},
            "hovertemplate": "first token at %{x:,.0f} ms<extra></extra>",
        },
    ]
    budget = int(c["grid"][i])
    worst = float(c["worst_ms"][i])
    ttft = float(c["ttft_ms"][i])
    count = int(b["n_steps"][i])
    title = (
        f"Budget {budget:,}: {count:,} step{'s' if count > 1 else ''}, users wait up to "
        f"{worst:,.0f} ms, first token at {ttft / 1e3:.2f} s"
    )
    return traces, title


def lower_controls(figure: dict, y: float = -0.3, bottom: int = 170) -> None:
    """Move the animation's buttons and step slider below the x-axis title (no overlap)."""
    layout = figure["layout"]
    for menu in layout["updatemenus"]:
        menu["y"] = y
    layout["sliders"][0]["y"] = y
    layout["margin"]["b"] = max(layout["margin"].get("b", 0), bottom)


def log_ticks(lo_log: float, hi_log: float) -> list[float]:
    """1-2-5 tick values between two log10 bounds, so a log axis reads 10, 20, 50, 100, ..."""
    out = []
    for e in range(int(np.floor(lo_log)) - 1, int(np.ceil(hi_log)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0**e
            if 10**lo_log <= v <= 10**hi_log:
                out.append(v)
    return out


def anim_figure(p: Params, c: dict) -> dict:
    """Walk through the budgets: each frame shows the first moments after the prompt arrives.

    It depends on the scene only (not on the budget slider), so moving the budget leaves the
    animation as it is; it opens on ANIM_START (or the first budget with room for the prompt).
    """
    budgets = [b for b in ANIM_BUDGETS if b > p.decodes]
    idx = [_at(c, b) for b in budgets]
    start = budgets.index(ANIM_START) if ANIM_START in budgets else 0
    ref = float(c["ttft_ms"][idx[start]])
    window = float(min(np.nanmax(c["ttft_ms"][idx]), 2.5 * ref)) * 1.02
    frames, labels, styled = [], [], []
    for budget, i in zip(budgets, idx, strict=True):
        traces, title = _lane_frame(c, i, window, p.decodes)
        styled.append(traces)
        # A frame carries only what changes (the points and the title); styles stay put.
        frames.append(
            {
                "data": [{"type": "scatter", "x": t["x"], "y": t["y"]} for t in traces],
                "traces": [0, 1, 2],
                "layout": {"title": {"text": title}},
            }
        )
        labels.append(f"{budget:,}")
    figure = {
        "data": styled[start],
        "layout": {
            "title": frames[start]["layout"]["title"],
            "xaxis": {
                "range": [0, window],
                "title": {"text": "time since the long prompt arrived (ms)"},
            },
            "yaxis": {
                "range": [0, 2],
                "tickvals": [0.5, 1.5],
                "ticktext": ["long prompt", "running users"],
                "title": {"text": "who gets served"},
            },
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom"},
            "height": 460,
            "margin": {"t": 110},
        },
    }
    figure = animate(figure, frames, labels, prefix="token budget: ")
    lower_controls(figure)
    figure["layout"]["sliders"][0]["active"] = start
    return figure


def build(p: Params) -> dict:
    """The numbers and the trade chart (they follow every control); see also build_anim."""
    c = compute(p)
    n = numbers(p, c)
    pick_txt = (
        f"the largest budget within {p.itl_target_ms} ms is {n['pick']:,}"
        if n["pick"] is not None
        else f"no budget keeps the steps within {p.itl_target_ms} ms"
    )
    mine = (
        f"At your budget of {p.budget:,} the longest step takes {n['worst_ms']:,.0f} ms and the "
        f"first token comes after {n['ttft_s']:.2f} s."
        if n["fits_prompt"]
        else f"Your budget of {p.budget:,} leaves no room for the prompt."
    )
    return {
        "numbers": n,
        "trade": trade_figure(p, c, n),
        "alt": {
            "trade": (
                f"Two line charts sharing a log-scale budget axis from {BUDGET_MIN:,} to "
                f"{BUDGET_MAX:,} tokens. Top: the longest step while a {p.prompt:,}-token prompt "
                f"is chunked in beside {p.decodes:,} streaming users rises with the budget; "
                f"{pick_txt}. Bottom: the time to that prompt's first token falls as the budget "
                f"grows. {mine}"
            ),
        },
    }


def build_anim(p: Params) -> dict:
    """The animation and its alt text; it depends on the scene only (p.scene)."""
    scene = p.scene
    return {
        "anim": anim_figure(scene, compute(scene)),
        "alt": (
            "Animation, one frame per budget: a time line of the steps after the long "
            "prompt arrives, with a tick each time the running users receive a token and a "
            "star at the prompt's first token. Small budgets give dense ticks and a late "
            "star; large budgets give sparse ticks and an early star."
        ),
    }
