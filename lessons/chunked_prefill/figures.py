"""Figures of lesson 3: the same workload served with chunked prefill and without it.

Running users stream; then one long prompt arrives. Two timed runs of vLLM's scheduler (sim)
serve that workload: one with chunked prefill (the learner's token budget) and one without it
(the whole prompt in one step, so vLLM requires a budget of at least max_model_len). `build`
runs both once and returns the two-lane animation, the GPU-use chart, the effects table and the
numbers the text quotes, all from the same two runs, so text, table and charts always agree.

Why two runs on one time axis: the lesson is about what a running user feels (the wait between
two of its tokens) and what the newcomer feels (its time to first token), and both are times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from lessons.anim import animate
from lessons.theme import color
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.hardware import get_gpu, peak_tflops
from sim.models import (
    get_model,
    kv_bytes_per_token,
    kv_pool,
    linear_shapes,
    weight_read_bytes,
)
from sim.run import Run
from sim.scheduler import run_steps
from sim.workload import Workload

USER_PROMPT = 512  # tokens of each running user's own prompt (their conversation so far)
LONG_OUTPUT = 16  # tokens the long prompt asks for: enough to see it start streaming
USERS_SHOWN = 5  # running users drawn as rows in each lane
LEAD_STEPS = 4  # decode steps shown before the long prompt arrives
TAIL_STEPS = 6  # decode steps kept after the later first token
FRAMES = 40  # animation frames, even in time over the window (Streamlit validates each)
TICK_BINS = 400  # token ticks closer than window/TICK_BINS (about 2 px) are drawn as one
MAX_STEP_BARS = 400  # beyond this, consecutive steps of one kind are drawn as one bar
MAX_TRIES = 4
LANES = ("whole", "chunked")
KIND_NAMES = ("decode-only step", "decode step plus a prompt chunk", "whole prompt in one step")
KIND_ROLES = ("decode", "prefill", "highlight")


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set."""

    gpu: str = "A100-80GB"
    model: str = "Llama-3.1-8B"
    tp: int = 1
    prompt_tokens: int = 8_000
    users: int = 48
    budget: int = 2_048
    max_num_seqs: int = 256


@dataclass
class Lane:
    """One lane: its scheduler settings, its run, its step times, and what the lesson reads."""

    name: str
    config: SchedulerConfig
    run: Run  # a step replay: the schedule, step by step
    step_ms: np.ndarray  # every step priced by the cost model
    start_s: np.ndarray  # step start times, 0 = the long prompt's arrival (start of its step)
    pool_blocks: int  # what vLLM's KV sizing gives this configuration
    pool_fits: bool  # the real pool holds the scenario (else the run was given enough blocks)
    stats: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------------------------


def effective(p: Params) -> dict[str, int]:
    """The settings the runs use: the prompt and the users within what vLLM can serve.

    A prompt must be shorter than max_model_len and leave room for its LONG_OUTPUT tokens;
    without chunking it must also fit in one step beside the running users' decodes (else it
    would wait for them to finish: head-of-line blocking). At most max_num_seqs - 1 users run
    beside the newcomer, and at most half the budget, so that the prompt always gets at least
    half of each step (and a run stays small enough to simulate while the learner drags).
    """
    model = get_model(p.model)
    max_model_len = int(model.max_position_embeddings)
    seqs = min(p.max_num_seqs, p.budget)
    users = max(1, min(p.users, seqs - 1, p.budget // 2))
    whole_budget = max(p.budget, max_model_len)
    prompt = max(1, min(p.prompt_tokens, max_model_len - LONG_OUTPUT, whole_budget - users))
    return {
        "max_model_len": max_model_len,
        "max_num_seqs": seqs,
        "prompt": prompt,
        "users": users,
        "whole_budget": whole_budget,
    }


def _price(dep: Deployment, q, s, kv, pairs) -> np.ndarray:
    """Step times (ms) from the cost model, vectorized over steps."""
    arr = [np.atleast_1d(np.asarray(x, dtype=np.float64)) for x in (q, s, kv, pairs)]
    return np.asarray(
        step_costs(
            dep, query_tokens=arr[0], num_seqs=arr[1], kv_read_tokens=arr[2], attn_pairs=arr[3]
        ).step_ms,
        dtype=np.float64,
    )


def _scenario(dep: Deployment, e: dict, budget: int) -> tuple[int, float, int]:
    """(arrival step of the long prompt, cheapest decode step in ms, output tokens per user).

    The arrival step comes after both lanes have admitted every user (an upper bound: the
    prompts share each step with the decodes of users already admitted) plus LEAD_STEPS. The
    users' outputs must outlast the window: an upper bound of the later time to first token,
    in the cheapest decode steps. These bounds only shape the scenario; every number the lesson
    shows is read off the runs.
    """
    r, p0, prompt = e["users"], USER_PROMPT, e["prompt"]
    warm = max(math.ceil(r * p0 / max(b - r, 1)) + 1 for b in (budget, e["whole_budget"]))
    arrival_step = warm + LEAD_STEPS + 1
    decode = float(_price(dep, r, r, r * p0, r * (p0 + 1))[0])
    chunk = max(budget - r, 1)
    n_chunks = math.ceil(prompt / chunk)
    out = 64
    for _ in range(3):  # the users' context grows with their output: settle the bound
        ctx = r * (p0 + out) + prompt
        chunk_ms = float(_price(dep, budget, r + 1, ctx, chunk * prompt + r * (p0 + out))[0])
        whole_ms = float(_price(dep, prompt + r, r + 1, ctx, prompt * (prompt + 1) / 2 + ctx)[0])
        ttft = max(n_chunks * chunk_ms, whole_ms)
        out = arrival_step + math.ceil(ttft * 1.15 / decode) + 2 * TAIL_STEPS + 8
    return arrival_step, decode, out


def _blocks_needed(e: dict, out: int, block_size: int = 16) -> int:
    users = e["users"] * math.ceil((USER_PROMPT + out) / block_size)
    long = math.ceil((e["prompt"] + LONG_OUTPUT) / block_size)
    return users + long + 2


def _lane(
    name: str, p: Params, e: dict, dep: Deployment, wl: Workload, out: int, arrival_step: int
) -> Lane:
    """Replay one lane step by step, then price every step with one cost-model call.

    Every step of this scenario has work (the users stream throughout), so the clock is the
    running sum of step times, exactly as sim.timed would advance it; the long prompt arrives at
    the start of its step, so its time to first token counts from there.
    """
    chunked = name == "chunked"
    budget = p.budget if chunked else e["whole_budget"]
    pool = kv_pool(p.gpu, p.model, tp=p.tp, max_num_batched_tokens=budget)
    needed = _blocks_needed(e, out)
    fits = pool.fits and pool.num_gpu_blocks >= needed
    config = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=e["max_num_seqs"],
        max_model_len=e["max_model_len"],
        num_gpu_blocks=pool.num_gpu_blocks if fits else needed,
        enable_chunked_prefill=chunked,
    )
    run = run_steps(config, wl)
    ms = _price(
        dep, run.num_scheduled_tokens, run.num_scheduled_seqs, run.kv_read_tokens, run.attn_pairs
    )
    start = np.r_[0.0, np.cumsum(ms)[:-1]] / 1e3
    start = start - start[arrival_step - 1]
    return Lane(name, config, run, ms, start, pool.num_gpu_blocks, fits)


def token_times(lane: Lane) -> np.ndarray:
    """When each sampled token is out: the end of its step (s, 0 = the prompt's arrival)."""
    end = lane.start_s + lane.step_ms / 1e3
    return end[lane.run.token_step - 1]


def simulate(p: Params) -> dict:
    """Both lanes' runs and the window the figures show (times in s from the arrival)."""
    e = effective(p)
    dep = Deployment(p.gpu, p.model, tp=p.tp)
    arrival_step, decode_ms, out = _scenario(dep, e, p.budget)
    r = e["users"]
    for _ in range(MAX_TRIES):
        wl = Workload.build(
            [USER_PROMPT] * r + [e["prompt"]],
            [out] * r + [LONG_OUTPUT],
            arrival_step=[1] * r + [arrival_step],
        )
        lanes = {name: _lane(name, p, e, dep, wl, out, arrival_step) for name in LANES}
        first = {
            name: float(token_times(lane)[lane.run.token_req == r].min())
            for name, lane in lanes.items()
        }
        later = max(first.values())
        w0 = -LEAD_STEPS * decode_ms / 1e3
        w1 = later + max(TAIL_STEPS * decode_ms / 1e3, 0.08 * (later - w0))
        # Every user is streaming before the arrival and still streaming at the window's end.
        ok = all(
            int(lane.run.first_token_step[:r].max()) < arrival_step - LEAD_STEPS
            and float(token_times(lane)[lane.run.token_req < r].max()) >= w1
            for lane in lanes.values()
        )
        if ok:
            break
        out *= 2
        arrival_step += arrival_step
    else:  # pragma: no cover - the bounds above make this unreachable in the lesson's ranges
        raise RuntimeError("could not build a window where every user streams throughout")
    return {
        "effective": e,
        "deployment": dep,
        "arrival_step": arrival_step,
        "decode_floor_ms": decode_ms,
        "user_output": out,
        "window": (w0, w1),
        "lanes": lanes,
    }


# ---------------------------------------------------------------------------------------------
# What the lesson reads off a run
# ---------------------------------------------------------------------------------------------


def step_work(
    dep: Deployment,
    query_tokens: ArrayLike,
    num_seqs: ArrayLike,
    kv_read_tokens: ArrayLike,
    attn_pairs: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and DRAM bytes of each step on one GPU, from the model's shapes (sim.models).

    FLOPs: 2 per weight per token through the linear layers (MoE: the active experts), the LM
    head for one row per sequence, and 4 x head_dim per query-key pair and query head in
    attention. Bytes: the weights a step reads (sim.models.weight_read_bytes) plus the KV cache
    read and written. Activation traffic is left out (small next to these).
    """
    model = dep.model_spec
    q = np.asarray(query_tokens, dtype=np.float64)
    s = np.asarray(num_seqs, dtype=np.float64)
    kv = np.asarray(kv_read_tokens, dtype=np.float64)
    pairs = np.asarray(attn_pairs, dtype=np.float64)
    shapes = linear_shapes(model, dep.tp)
    attn_w = sum(shapes[k][0] * shapes[k][1] for k in ("qkv", "o"))
    mlp_w = sum(shapes[k][0] * shapes[k][1] for k in ("gate_up", "down"))
    per_token = 2.0 * model.num_layers * (attn_w + model.experts_per_token * mlp_w)
    vocab = -(-model.vocab_size // dep.tp)
    heads = model.num_attention_heads // dep.tp
    flops = (
        q * per_token
        + 2.0 * s * vocab * model.hidden_size
        + 4.0 * pairs * model.head_dim * heads * model.num_layers
    )
    if model.is_moe:
        uniq, inv = np.unique(q, return_inverse=True)
        w = np.array([weight_read_bytes(model, dep.dtype, dep.tp, int(max(t, 1))) for t in uniq])
        weights = w[inv]
    else:
        weights = np.full(q.shape, weight_read_bytes(model, dep.dtype, dep.tp, 1))
    kv_bytes = (kv + q) * kv_bytes_per_token(model, "bf16", dep.tp)
    return flops, weights + kv_bytes


def _gaps(req: np.ndarray, times: np.ndarray):
    """Every gap between consecutive tokens of one request: (request, gap in s, start, end).

    `times` must be in emission order (non-decreasing), so a stable sort by request keeps each
    request's tokens in time order.
    """
    order = np.argsort(req, kind="stable")
    req, times = req[order], times[order]
    same = req[1:] == req[:-1]
    return req[1:][same], np.diff(times)[same], times[:-1][same], times[1:][same]


def lane_stats(sim: dict, lane: Lane) -> dict:
    """The numbers of one lane: steps in the window, ticks, gaps, TTFT, GPU use."""
    run, dep, e = lane.run, sim["deployment"], sim["effective"]
    r = e["users"]
    w0, w1 = sim["window"]
    step_ms = lane.step_ms
    start = lane.start_s
    end = start + step_ms / 1e3
    fs = int(run.first_scheduled_step[r])  # 1-based steps
    ft = int(run.first_token_step[r])
    kind = np.zeros(run.num_steps, dtype=np.int64)
    kind[fs - 1 : ft] = 1 if lane.name == "chunked" else 2
    in_win = np.flatnonzero((end > w0) & (start < w1))
    # Only the tokens of the window's steps matter, and of the two steps before it: their gap
    # is the wait users already have when the window opens (the live counter starts there).
    tok_step = run.token_step - 1
    lo = np.searchsorted(tok_step, max(int(in_win[0]) - 2, 0), side="left")
    hi = np.searchsorted(tok_step, int(in_win[-1]), side="right")
    win_req = run.token_req[lo:hi]
    tok_t = token_times(lane)[lo:hi]
    users = win_req < r
    g_req, g, g_start, g_end = _gaps(win_req[users], tok_t[users])
    long_tokens = token_times(lane)[run.token_req == r]
    first_token = float(long_tokens.min())
    eps = 1e-9  # step boundaries come from sums of floats: allow a nanosecond
    after = g_end > eps
    while_prompt = after & (g_end <= first_token + eps)
    decode_steps = in_win[kind[in_win] == 0]
    prompt_steps = np.arange(fs - 1, ft)
    flops, nbytes = step_work(
        dep,
        run.num_scheduled_tokens,
        run.num_scheduled_seqs,
        run.kv_read_tokens,
        run.attn_pairs,
    )
    gpu = get_gpu(dep.gpu)
    peak_flops = peak_tflops(gpu, dep.dtype) * 1e12
    peak_bw = gpu.bw_tbps * 1e12
    sec = step_ms / 1e3

    def use(steps: np.ndarray) -> tuple[float, float]:
        if steps.size == 0:
            return float("nan"), float("nan")
        t = sec[steps].sum()
        return (
            float(flops[steps].sum() / t / peak_flops),
            float(nbytes[steps].sum() / t / peak_bw),
        )

    first_seqs = int(run.num_scheduled_seqs[fs - 1])
    first_chunk = int(run.num_scheduled_tokens[fs - 1]) - (first_seqs - 1)
    # The same first chunk in a step of its own (no decodes riding along), for comparison.
    chunk_alone_ms = float(_price(dep, first_chunk, 1, 0, first_chunk * (first_chunk + 1) / 2)[0])
    compute_prompt, bw_prompt = use(prompt_steps)
    compute_decode, bw_decode = use(decode_steps)
    return {
        "start": start,
        "end": end,
        "kind": kind,
        "in_window": in_win,
        "token_req": win_req[users],
        "token_s": tok_t[users],
        "long_token_s": long_tokens,
        "gap_req": g_req,
        "gap_s": g,
        "gap_start": g_start,
        "gap_end": g_end,
        "first_step": fs,
        "first_token_step": ft,
        "prompt_steps": ft - fs + 1,
        "first_chunk": first_chunk,
        "first_step_ms": float(step_ms[fs - 1]),
        "chunk_alone_ms": chunk_alone_ms,
        "prompt_step_ms_max": float(step_ms[fs - 1 : ft].max()),
        "prompt_step_ms_min": float(step_ms[fs - 1 : ft].min()),
        "prompt_tokens_in_step_max": int(run.num_scheduled_tokens[fs - 1 : ft].max()),
        "decode_ms": float(np.median(step_ms[decode_steps])) if decode_steps.size else 0.0,
        "ttft_ms": first_token * 1e3,
        "first_token_s": first_token,
        "worst_gap_ms": float(g[after].max() * 1e3) if after.any() else float("nan"),
        "mean_gap_prompt_ms": float(g[while_prompt].mean() * 1e3)
        if while_prompt.any()
        else float("nan"),
        "compute_prompt": compute_prompt,
        "bw_prompt": bw_prompt,
        "compute_decode": compute_decode,
        "bw_decode": bw_decode,
        "step_flops": flops,
        "step_bytes": nbytes,
        "peak_flops": peak_flops,
        "peak_bw": peak_bw,
        "preemptions": int(run.num_preemptions.sum()),
    }


def live_worst_gap(stats: dict, times_s: np.ndarray, since_s: float) -> np.ndarray:
    """At each time t: the longest wait between tokens any running user has had since `since_s`.

    Counts the finished gaps that ended in [since_s, t] and the waits still open at t (t minus
    the start of a gap that spans t), so the counter climbs while a long step is running.
    `times_s` must be increasing.
    """
    g, g_start, g_end = stats["gap_s"], stats["gap_start"], stats["gap_end"]
    keep = g_end >= since_s
    ends, vals = g_end[keep], g[keep]
    order = np.argsort(ends, kind="stable")
    ends = ends[order]
    done = np.zeros(times_s.shape)
    if vals.size:
        best = np.maximum.accumulate(vals[order])
        idx = np.searchsorted(ends, times_s, side="right") - 1
        done = np.where(idx >= 0, best[np.maximum(idx, 0)], 0.0)
    # Open waits: a gap [start, end) covers the frames in it; keep the earliest start per frame.
    lo = np.searchsorted(times_s, g_start, side="left")
    hi = np.searchsorted(times_s, g_end, side="left")
    counts = np.maximum(hi - lo, 0)
    earliest = np.full(times_s.shape, np.inf)
    if counts.sum():
        gap_of = np.repeat(np.arange(counts.size), counts)
        offsets = np.cumsum(counts) - counts
        frame = lo[gap_of] + np.arange(gap_of.size) - offsets[gap_of]
        np.minimum.at(earliest, frame, g_start[gap_of])
    open_wait = np.where(np.isfinite(earliest), times_s - earliest, 0.0)
    return np.maximum(done, np.where(times_s >= since_s, open_wait, 0.0))


def compute(p: Params) -> dict:
    """Both runs and every derived number."""
    sim = simulate(p)
    for lane in sim["lanes"].values():
        lane.stats = lane_stats(sim, lane)
    return sim


# ---------------------------------------------------------------------------------------------
# Numbers for the text and the table
# ---------------------------------------------------------------------------------------------


def numbers(p: Params, sim: dict) -> dict:
    """The values the lesson text quotes, all read off the two runs."""
    e = sim["effective"]
    w, c = sim["lanes"]["whole"].stats, sim["lanes"]["chunked"].stats
    gpu = get_gpu(p.gpu)
    return {
        "gpu_name": gpu.name,
        "model_name": p.model,
        "tp_phrase": "" if p.tp == 1 else f" on {p.tp} GPUs",
        "users": e["users"],
        "users_asked": p.users,
        "user_prompt": USER_PROMPT,
        "prompt": e["prompt"],
        "prompt_asked": p.prompt_tokens,
        "long_output": LONG_OUTPUT,
        "budget": p.budget,
        "max_num_seqs": e["max_num_seqs"],
        "max_model_len": e["max_model_len"],
        "whole_budget": e["whole_budget"],
        "chunk": c["first_chunk"],
        "chunk_steps": c["prompt_steps"],
        "decode_ms": c["decode_ms"],
        "whole_decode_ms": w["decode_ms"],
        "whole_step_ms": w["prompt_step_ms_max"],
        "whole_step_tokens": w["prompt_tokens_in_step_max"],
        "chunk_step_ms_max": c["prompt_step_ms_max"],
        "chunk_step_ms_min": c["prompt_step_ms_min"],
        "chunk_step_tokens": c["prompt_tokens_in_step_max"],
        "whole_worst_gap_ms": w["worst_gap_ms"],
        "chunked_worst_gap_ms": c["worst_gap_ms"],
        "gap_ratio": w["worst_gap_ms"] / c["worst_gap_ms"],
        "whole_ttft_ms": w["ttft_ms"],
        "chunked_ttft_ms": c["ttft_ms"],
        "ttft_diff_ms": c["ttft_ms"] - w["ttft_ms"],
        "ttft_change_pct": 100.0 * (c["ttft_ms"] - w["ttft_ms"]) / w["ttft_ms"],
        "whole_compute_prompt_pct": 100 * w["compute_prompt"],
        "whole_bw_prompt_pct": 100 * w["bw_prompt"],
        "whole_compute_decode_pct": 100 * w["compute_decode"],
        "whole_bw_decode_pct": 100 * w["bw_decode"],
        "chunked_compute_prompt_pct": 100 * c["compute_prompt"],
        "chunked_bw_prompt_pct": 100 * c["bw_prompt"],
        "chunked_compute_decode_pct": 100 * c["compute_decode"],
        "chunked_bw_decode_pct": 100 * c["bw_decode"],
        "whole_mean_gap_ms": w["mean_gap_prompt_ms"],
        "chunked_mean_gap_ms": c["mean_gap_prompt_ms"],
        "peak_tflops": c["peak_flops"] / 1e12,
        "peak_tbps": c["peak_bw"] / 1e12,
        "preemptions": w["preemptions"] + c["preemptions"],
        "users_clamped": e["users"] != p.users,
        "prompt_clamped": e["prompt"] != p.prompt_tokens,
        "whole_pool_fits": sim["lanes"]["whole"].pool_fits,
        "chunked_pool_fits": sim["lanes"]["chunked"].pool_fits,
        "whole_pool_tokens": sim["lanes"]["whole"].pool_blocks * 16,
        "chunked_pool_tokens": sim["lanes"]["chunked"].pool_blocks * 16,
        "needed_tokens": _blocks_needed(e, sim["user_output"]) * 16,
        "chunk_steps_phrase": f"{c['prompt_steps']} step" + ("s" if c["prompt_steps"] != 1 else ""),
        "ttft_gain_ms": w["ttft_ms"] - c["ttft_ms"],
        "first_step_ms": c["first_step_ms"],
        "chunk_alone_ms": c["chunk_alone_ms"],
        "ride_along_ms": c["first_step_ms"] - c["chunk_alone_ms"],
    }


def time_unit(span_s: float) -> tuple[str, float]:
    """The time axis unit for a window of `span_s` seconds: ms, or s beyond 5 s."""
    return ("s", 1.0) if span_s > 5.0 else ("ms", 1e3)


def _ms(v: float) -> str:
    return f"{v:,.0f} ms" if v >= 100 else f"{v:,.1f} ms"


def _pct(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.0f}%"


def effects_table(n: dict) -> pd.DataFrame:
    """The effects of chunking, one row per effect, one column per lane (from `numbers`)."""
    whole_col = "Whole prompt at once"
    chunk_col = f"Chunked, budget {n['budget']:,}"
    steps = "step" if n["chunk_steps"] == 1 else "steps"
    rows = [
        (
            "Step time while the prompt is processed",
            f"{_ms(n['whole_step_ms'])} (1 step of {n['whole_step_tokens']:,} tokens)",
            f"{_ms(n['chunk_step_ms_min'])} to {_ms(n['chunk_step_ms_max'])} "
            f"({n['chunk_steps']} {steps} of up to {n['chunk_step_tokens']:,} tokens)",
        ),
        (
            "Step time with decodes only",
            _ms(n["whole_decode_ms"]),
            _ms(n["decode_ms"]),
        ),
        (
            "Longest wait between tokens, running users",
            _ms(n["whole_worst_gap_ms"]),
            _ms(n["chunked_worst_gap_ms"]),
        ),
        (
            "Average wait between tokens until the prompt's first token",
            _ms(n["whole_mean_gap_ms"]),
            _ms(n["chunked_mean_gap_ms"]),
        ),
        (
            "Time to first token of the long prompt",
            _ms(n["whole_ttft_ms"]),
            _ms(n["chunked_ttft_ms"]),
        ),
        (
            "Compute use in the prompt's steps (of peak FLOP/s)",
            _pct(n["whole_compute_prompt_pct"]),
            _pct(n["chunked_compute_prompt_pct"]),
        ),
        (
            "Bandwidth use in the prompt's steps (of peak bytes/s)",
            _pct(n["whole_bw_prompt_pct"]),
            _pct(n["chunked_bw_prompt_pct"]),
        ),
        (
            "Compute / bandwidth use in decode-only steps",
            f"{_pct(n['whole_compute_decode_pct'])} / {_pct(n['whole_bw_decode_pct'])}",
            f"{_pct(n['chunked_compute_decode_pct'])} / {_pct(n['chunked_bw_decode_pct'])}",
        ),
    ]
    return pd.DataFrame(rows, columns=["Effect", whole_col, chunk_col]).set_index("Effect")


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------

_LANE_TITLE = {
    "whole": "Chunked prefill off: the whole prompt in one step (budget {whole_budget:,})",
    "chunked": "Chunked prefill on: budget {budget:,}, chunks of up to {chunk:,} tokens",
}


def _rgba(hex_color: str, alpha: float) -> str:
    """A theme colour ("#RRGGBB") with transparency, for fills."""
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _rows(lane_index: int) -> dict[str, float]:
    """y positions (reversed axis: smaller is higher) of one lane's rows."""
    top = lane_index * (USERS_SHOWN + 5)
    return {
        "title": top,
        "steps": top + 1,
        "user0": top + 2,
        "newcomer": top + 2.5 + USERS_SHOWN,
        "bottom": top + 3.1 + USERS_SHOWN,
    }


def _step_bars(stats: dict, to_ms, merge: bool) -> dict[int, tuple[list, list]]:
    """(base, width) of the step bars of each kind in the window; runs merged when `merge`."""
    idx = stats["in_window"]
    kinds = stats["kind"][idx]
    starts, ends = stats["start"][idx], stats["end"][idx]
    if merge and idx.size:
        cut = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]])
        last = np.r_[cut[1:], idx.size] - 1
        kinds, starts, ends = kinds[cut], starts[cut], ends[last]
    out: dict[int, tuple[list, list]] = {}
    for k in range(3):
        m = kinds == k
        out[k] = (to_ms(starts[m]).round(6).tolist(), (to_ms(ends[m]) - to_ms(starts[m])).tolist())
    return out


def _ticks(stats: dict, shown: np.ndarray, w0: float, w1: float, row0: float):
    """Token ticks of the shown users in the window, one per pixel-sized bin at most."""
    req, t = stats["token_req"], stats["token_s"]
    m = np.isin(req, shown) & (t >= w0) & (t <= w1)
    req, t = req[m], t[m]
    row = row0 + np.searchsorted(shown, req)
    bins = np.floor((t - w0) / (w1 - w0) * TICK_BINS).astype(np.int64)
    _, keep = np.unique(row * (TICK_BINS + 1) + bins, return_index=True)
    return t[keep], row[keep].astype(float), int(m.sum()), int(keep.size)


def lanes_figure(p: Params, sim: dict, n: dict) -> tuple[dict, dict]:
    """The two-lane animation and facts about it (for the caption and alt text)."""
    r = sim["effective"]["users"]
    w0, w1 = sim["window"]

    unit, scale = time_unit(w1 - w0)

    def to_ms(t):  # to the axis unit: ms, or s for long windows
        return np.asarray(t, dtype=np.float64) * scale

    x0, x1 = float(to_ms(w0)), float(to_ms(w1))
    shown = np.unique(np.linspace(0, r - 1, min(USERS_SHOWN, r)).round().astype(np.int64))
    merged = any(lane.stats["in_window"].size > MAX_STEP_BARS for lane in sim["lanes"].values())
    bars = {k: ([], [], []) for k in range(3)}  # base, width, y
    tick_x, tick_y, wait_x, wait_y, first_x, first_y = [], [], [], [], [], []
    first_text, first_pos = [], []
    thinned = False
    annotations = []
    ticks_y, ticks_text = [], []
    for li, name in enumerate(LANES):
        st = sim["lanes"][name].stats
        rows = _rows(li)
        for k, (base, width) in _step_bars(st, to_ms, merged).items():
            bars[k][0].extend(base)
            bars[k][1].extend(width)
            bars[k][2].extend([rows["steps"]] * len(base))
        tx, ty, total, kept = _ticks(st, shown, w0, w1, rows["user0"])
        thinned |= kept < total
        tick_x.extend(to_ms(tx).round(3).tolist())
        tick_y.extend(ty.tolist())
        first_ms = float(to_ms(st["first_token_s"]))
        wait_x.extend([0.0, first_ms, None])
        wait_y.extend([rows["newcomer"]] * 2 + [None])
        first_x.append(round(first_ms, 3))
        first_y.append(rows["newcomer"])
        first_text.append(f"first token after {_ms(st['ttft_ms'])}")
        first_pos.append("top left" if first_ms > (x0 + x1) / 2 else "top right")
        annotations.append(
            {
                "text": "<b>" + _LANE_TITLE[name].format(**n) + "</b>",
                "x": 0,
                "xref": "paper",
                "xanchor": "left",
                "y": rows["title"],
                "yref": "y",
                "showarrow": False,
                "font": {"size": 13},
            }
        )
        ticks_y.extend([rows["steps"], *range(rows["user0"], rows["user0"] + len(shown))])
        ticks_text.extend(["steps", *[f"user {int(u) + 1}" for u in shown]])
        ticks_y.append(rows["newcomer"])
        ticks_text.append(f"new {n['prompt']:,}-token prompt")
    data: list[dict] = []
    for k in range(3):
        base, width, y = (np.asarray(v, dtype=np.float64) for v in bars[k])
        # Each step is a filled rectangle; NaN separates them. (Plotly bar traces with a `base`
        # vanish while a figure animates, so the strips are drawn as polygons instead.)
        x0s, x1s = base, base + width
        xs = np.stack([x0s, x1s, x1s, x0s, x0s, np.full_like(x0s, np.nan)], axis=1).ravel()
        lo, hi = y - 0.35, y + 0.35
        ys = np.stack([lo, lo, hi, hi, lo, np.full_like(lo, np.nan)], axis=1).ravel()
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": KIND_NAMES[k],
                "x": xs.round(3),
                "y": ys,
                "fill": "toself",
                "fillcolor": _rgba(color(KIND_ROLES[k]), 0.35 if k == 0 else 0.9),
                "line": {"width": 0.5, "color": "white"},
                "hoveron": "fills",
                "hoverinfo": "name",
                "showlegend": True,
            }
        )
    # Each tick is a short vertical segment; NaN separates them, so the browser draws one path.
    tx = np.asarray(tick_x, dtype=np.float64)
    ty = np.asarray(tick_y, dtype=np.float64)
    gap = np.full_like(tx, np.nan)
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "token delivered to a running user",
            "x": np.stack([tx, tx, gap], axis=1).ravel(),
            "y": np.stack([ty - 0.3, ty + 0.3, gap], axis=1).ravel(),
            "line": {"color": color("decode"), "width": 1.5},
            "hoverinfo": "skip",
        }
    )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "new prompt waiting for its first token",
            "x": wait_x,
            "y": wait_y,
            "line": {"color": color("prefill"), "width": 2, "dash": "dot"},
            "hoverinfo": "skip",
        }
    )
    data.append(
        {
            "type": "scatter",
            "mode": "markers+text",
            "name": "first token of the new prompt",
            "x": first_x,
            "y": first_y,
            "text": first_text,
            "textposition": first_pos,
            "marker": {"symbol": "star", "size": 11, "color": color("prefill")},
            "hovertemplate": "token at %{x:,.3f} " + unit + "<extra>new prompt</extra>",
        }
    )
    bottom = _rows(1)["bottom"]
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "the prompt arrives",
            "x": [0.0, 0.0],
            "y": [-0.6, bottom],
            "line": {"color": color("neutral"), "width": 1, "dash": "dash"},
            "hoverinfo": "skip",
        }
    )
    static = len(data)

    frame_t = np.linspace(w0, w1, FRAMES)
    # Counted from two decode steps before the window, so the first frame already shows the
    # steady wait of users who are streaming (one decode step), not a fraction of it.
    since = w0 - 2 * sim["decode_floor_ms"] / 1e3
    live = {name: live_worst_gap(sim["lanes"][name].stats, frame_t, since) * 1e3 for name in LANES}

    titles = [_rows(li)["title"] for li in range(len(LANES))]
    top = -0.6

    def curtain_x(i: int) -> list[float]:
        now = float(to_ms(frame_t[i]))
        edge = x1 + 1e-9
        return [now, edge, edge, edge, edge, now, now]

    def counter_text(i: int) -> list[str]:
        labels = [f"<b>longest wait between tokens: {live[name][i]:,.1f} ms</b>" for name in LANES]
        return ["", "", *labels, "", "", ""]

    # One trace moves: a curtain that hides what has not happened yet (its left edge is "now"),
    # with each lane's live counter written on points along its right edge. Frames carry only
    # x and text: Streamlit validates every frame of a figure dict, so frames are kept light.
    moving = [
        {
            "type": "scatter",
            "mode": "lines+text",
            "x": curtain_x(0),
            "y": [top, top, titles[0], titles[1], bottom, bottom, top],
            "text": counter_text(0),
            "textposition": "middle left",
            "textfont": {"size": 13, "color": color("highlight")},
            "fill": "toself",
            "fillcolor": "rgba(255,255,255,0.85)",
            "line": {"width": 1, "color": color("neutral")},
            "hoverinfo": "skip",
            "showlegend": False,
        },
    ]
    frames = [
        {"data": [{"x": curtain_x(i), "text": counter_text(i)}], "traces": [static]}
        for i in range(FRAMES)
    ]
    layout = {
        "title": {
            "text": "The same users, the same long prompt: two schedules",
            "yref": "container",
            "y": 0.985,
            "yanchor": "top",
        },
        "height": 690,
        "xaxis": {
            "title": {"text": f"time since the long prompt arrived ({unit})"},
            "range": [x0, x1],
            "zeroline": False,
        },
        "yaxis": {
            "title": {"text": "rows of each lane"},
            "range": [bottom + 0.3, -0.8],
            "tickmode": "array",
            "tickvals": ticks_y,
            "ticktext": ticks_text,
            "showgrid": False,
            "zeroline": False,
        },
        "annotations": annotations,
        "legend": {"orientation": "h", "y": 1.01, "yanchor": "bottom", "x": 0},
        "margin": {"t": 130, "l": 10},
    }
    figure = {"data": data + moving, "layout": layout}
    digits = 0 if unit == "ms" else 1
    labels = [f"{float(to_ms(t)):,.{digits}f} {unit}" for t in frame_t]
    fig = animate(figure, frames, labels, prefix="time since arrival: ")
    facts = {"merged": merged, "thinned": thinned, "shown": len(shown), "frames": FRAMES}
    return fig, facts


def _compress(x_end: np.ndarray, y: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge runs of steps whose values stay within `tol` of the run's first value.

    Each step i covers (x_end[i-1], x_end[i]]; a merged run keeps its first value and the end
    of its last step, so the step line is drawn the same to within `tol`.
    """
    if y.size == 0:
        return x_end, y
    ends, values = [], []
    start = 0
    for i in range(1, y.size + 1):
        if i == y.size or abs(y[i] - y[start]) > tol:
            ends.append(x_end[i - 1])
            values.append(y[start])
            start = i
    return np.asarray(ends), np.asarray(values)


def use_figure(p: Params, sim: dict) -> dict:
    """Per-step compute use and bandwidth use (share of the GPU's peaks) over the window."""
    w0, w1 = sim["window"]
    unit, scale = time_unit(w1 - w0)
    lane_color = {"whole": color("highlight"), "chunked": color("decode")}
    lane_name = {"whole": "whole prompt at once", "chunked": "chunked prefill"}
    data = []
    for name in LANES:
        st = sim["lanes"][name].stats
        idx = st["in_window"]
        sec = (st["end"][idx] - st["start"][idx]).clip(min=1e-12)
        comp = 100 * st["step_flops"][idx] / sec / st["peak_flops"]
        bw = 100 * st["step_bytes"][idx] / sec / st["peak_bw"]
        x0 = st["start"][idx[:1]] * scale
        x_end = st["end"][idx] * scale
        for axis, values, label in (("", comp, "compute"), ("2", bw, "bandwidth")):
            xe, ye = _compress(x_end, values, 0.25)
            xs = np.r_[x0, xe]
            ys = np.r_[ye[:1], ye]
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "line": {"shape": "vh", "color": lane_color[name], "width": 2},
                    "name": lane_name[name],
                    "legendgroup": name,
                    "showlegend": axis == "",
                    "x": xs.round(6).tolist(),
                    "y": ys.round(2).tolist(),
                    "xaxis": "x" + axis,
                    "yaxis": "y" + axis,
                    "hovertemplate": "%{y:.0f}% of peak "
                    + label
                    + "<extra>"
                    + lane_name[name]
                    + "</extra>",
                }
            )
    x_range = [w0 * scale, w1 * scale]
    top = max(100.0, 1.05 * max(max(t["y"]) for t in data))
    layout = {
        "title": {"text": "How much of the GPU each step uses"},
        "height": 520,
        "xaxis": {
            "domain": [0, 1],
            "anchor": "y",
            "range": x_range,
            "matches": "x2",
            "title": {"text": f"time since arrival ({unit})", "standoff": 2},
        },
        "yaxis": {"domain": [0.6, 1], "range": [0, top], "title": {"text": "compute (% of peak)"}},
        "xaxis2": {
            "domain": [0, 1],
            "anchor": "y2",
            "range": x_range,
            "title": {"text": f"time since the long prompt arrived ({unit})"},
        },
        "yaxis2": {
            "domain": [0, 0.4],
            "range": [0, top],
            "title": {"text": "bandwidth (% of peak)"},
        },
        "legend": {"orientation": "h", "y": 1.12, "x": 0},
        "margin": {"t": 80},
    }
    return {"data": data, "layout": layout}


def build(p: Params) -> dict:
    """Every figure, table and number of the lesson, from one pair of runs."""
    sim = compute(p)
    n = numbers(p, sim)
    lanes, facts = lanes_figure(p, sim, n)
    n = {**n, **facts}
    return {
        "numbers": n,
        "lanes": lanes,
        "use": use_figure(p, sim),
        "table": effects_table(n),
        "alt": {
            "lanes": (
                f"Animation with two lanes over time. Top lane, chunked prefill off: "
                f"{n['users']} users receive a token every {n['whole_decode_ms']:.1f} ms until "
                f"the {n['prompt']:,}-token prompt runs in one step of {n['whole_step_ms']:,.0f} "
                f"ms, during which no user receives a token; the longest wait between tokens "
                f"reaches {n['whole_worst_gap_ms']:,.0f} ms and the prompt's first token comes "
                f"after {n['whole_ttft_ms']:,.0f} ms. Bottom lane, chunked prefill with budget "
                f"{n['budget']:,}: the prompt runs in {n['chunk_steps']} chunk steps of at most "
                f"{n['chunk_step_ms_max']:,.0f} ms, users keep receiving a token after each, the "
                f"longest wait is {n['chunked_worst_gap_ms']:,.0f} ms, and the first token comes "
                f"after {n['chunked_ttft_ms']:,.0f} ms."
            ),
            "use": (
                "Two step charts over the same time window: compute use and bandwidth use as "
                "a share of the GPU's peaks, per step, for both lanes. Without chunking, the "
                f"prompt's step uses {n['whole_compute_prompt_pct']:.0f}% of peak compute and "
                f"{n['whole_bw_prompt_pct']:.0f}% of peak bandwidth, while decode-only steps use "
                f"{n['whole_compute_decode_pct']:.0f}% and {n['whole_bw_decode_pct']:.0f}%. With "
                f"chunking, the chunk steps use {n['chunked_compute_prompt_pct']:.0f}% and "
                f"{n['chunked_bw_prompt_pct']:.0f}%."
            ),
        },
    }
