"""Lesson "The sequence budget and the throughput curve": its controls (Params) and build(p).

With N sequences decoding together, vLLM's scheduler gives each running request one token per
step (SCHEDULER.md a3), so a steady step holds N query tokens from N sequences, each reading its
context of KV cache (`sim.scenarios.decode_sweep`). One vectorized `sim.cost.step_costs` call
prices that step for every N from 1 to 1,024: total decode throughput is N tokens per step time,
and each user gets one token per step. From those arrays come the knee (defined below), the
largest concurrency that meets an ITL target, the bytes each step reads (weights against KV
cache, which is why the curve bends) and the animation's frames. The KV-cache limit comes from
the SchedulerConfig vLLM would run (`sim.timed.config_for`: its pool and its block size).

The knee: the smallest N at which doubling the concurrency to 2N raises total throughput by less
than half (KNEE_GAIN = 1.5). Prompt prefill is left out: these are decode steps only.

Every step time is in the scheduling mode the toggle sets (async by default, as vLLM runs in
real deployments): the cost model's step through `sim.timed.timer_for`, which hides the CPU's
part of a step behind the GPU's with async scheduling. Beside the decode-only picture,
closed_loop.py runs the curve as a benchmark measures it (prompts arriving all the time), with
the same limits and mode.

The curves depend on GPU, model, weights, TP, context and mode only, so they are cached on those
(`decode_curves`); the closed-loop runs are cached one by one (closed_loop.point).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lessons.kit import limits, shared
from lessons.kit.controls import Integer, Steps, Toggle, control
from lessons.kit.selection import selection, used_limits
from lessons.throughput_curve import closed_loop
from lessons.throughput_curve.readout import ClosedLoop, Curves, Readout
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment, factors_for, step_costs, weight_read_ms
from sim.errors import SimInputError
from sim.hardware import default_batch_limits, get_gpu
from sim.kv import cdiv
from sim.models import get_model, kv_bytes_per_token, kv_pool, weight_bytes, weight_read_bytes
from sim.scenarios import decode_sweep
from sim.timed import config_for, timer_for

PREFIX = "tput"
MAX_SEQS = 1_024
KNEE_GAIN = 1.5
SURGE_FELT = 1.1  # the closed loop's mean time between tokens this much above a decode step
ANIM_POINTS = 31  # the animation's concurrencies: this many on a log scale, plus the opening one
CONCURRENCY = np.arange(1, MAX_SEQS + 1, dtype=np.int64)
CONTEXTS = (16, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
PARTS = ("linear_ms", "attention_ms", "other_ms")
OUTPUTS = (16, 32, 64, 128, 256, 512, 1024, 2048)
ASYNC = Toggle(
    "Async scheduling",
    key="async",
    help="vLLM's AsyncScheduler, the default of real deployments: the CPU schedules the next "
    "step while the GPU runs this one. Off: each step also waits for the CPU.",
)


@dataclass(frozen=True)
class Params(limits.Limits, shared.Deployment):
    """Everything the lesson's controls set."""

    max_num_batched_tokens: int = limits.max_num_batched_tokens(8_192)
    max_num_seqs: int = limits.max_num_seqs(1_024)
    context: int = control(
        2_048,
        Steps(
            "Context each sequence holds (tokens)",
            options=CONTEXTS,
            main=True,
            help="Decode only: the tokens each sequence holds. Closed loop: each prompt's length.",
        ),
    )
    output_tokens: int = control(
        256, Steps("Output tokens per request (closed loop)", key="output", options=OUTPUTS)
    )
    itl_target_ms: int = control(
        20, Integer("Inter-token latency target (ms)", key="itl", lo=5, hi=200, main=True)
    )
    async_scheduling: bool = control(True, ASYNC)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    a.flags.writeable = False
    return a


@lru_cache(maxsize=64)
def decode_curves(
    gpu: str, model: str, tp: int, dtype: str, context: int, async_scheduling: bool = False
) -> Curves:
    """Steady decode steps of 1..MAX_SEQS sequences of `context` tokens, priced in one call, in
    the scheduling mode given (the timed runs' timer: async hides the CPU's part of a step)."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    sweep = decode_sweep(CONCURRENCY, context)
    costs = step_costs(dep, **sweep)
    step = _frozen(timer_for(dep, async_scheduling=async_scheduling)(**sweep))
    n = CONCURRENCY.astype(np.float64)
    return Curves(
        n=CONCURRENCY,
        step_ms=step,
        total=_frozen(n / step * 1e3),
        per_user=_frozen(1e3 / step),
        parts_ms={
            "linear_ms": _frozen(costs.linear_ms),
            "attention_ms": _frozen(costs.attention_ms),
            "other_ms": _frozen(step - costs.linear_ms - costs.attention_ms),
        },
    )


def kv_capacity(dep: Deployment, context: int, budget: int) -> int:
    """How many sequences of `context` tokens the KV pool holds: the pool of the SchedulerConfig
    vLLM would run with this budget, in its own block size (0 if the weights leave no room)."""
    try:
        config = config_for(dep, max_num_batched_tokens=budget, max_num_seqs=1)
    except SimInputError:
        return 0
    return config.kv_blocks_usable // cdiv(context, config.block_size)


def refusal(budget: int, seqs: int, context: int) -> str:
    """vLLM's own words if it would refuse these limits (max_num_seqs above the budget), or ""."""
    try:
        SchedulerConfig(
            max_num_batched_tokens=budget,
            max_num_seqs=seqs,
            max_model_len=context + 1,
            num_gpu_blocks=2,
        )
    except SimInputError as err:
        return str(err)
    return ""


def knee_of(total: np.ndarray) -> int:
    """The smallest N whose doubling to 2N adds less than half again to the total (0: none)."""
    half = np.arange(1, total.size // 2 + 1)
    gain = total[2 * half - 1] / total[half - 1]
    below = np.flatnonzero(gain < KNEE_GAIN)
    return int(half[below[0]]) if below.size else 0


def _largest(ok: np.ndarray) -> int:
    """The largest N (1-based) where `ok` holds, 0 if nowhere."""
    hits = np.flatnonzero(ok)
    return int(hits[-1]) + 1 if hits.size else 0


def anim_concurrencies(last: int, opening: int) -> np.ndarray:
    """The animation's concurrencies: from 1 to `last` on a log scale, plus `opening`."""
    grid = np.unique(np.geomspace(1, last, ANIM_POINTS).round().astype(np.int64))
    return np.union1d(grid, [opening])


def dip_fields(c: Curves, reach: int, pick: int, tile_m: int) -> dict:
    """Where the total drops as a sequence is added (a new row of GEMM tiles in the cost model,
    sim.cost.gemm_kernel_ms): every such N, the largest relative drop this engine reaches (the
    largest anywhere if it reaches none), and whether a smaller concurrency than the pick makes
    more in total."""
    t = c.total
    dips = np.flatnonzero(t[1:] < t[:-1]) + 2  # N whose total is below N - 1's
    reached = dips[dips <= reach]
    shown = reached if reached.size else dips
    has = shown.size > 0
    n = int(shown[np.argmax(t[shown - 2] / t[shown - 1])]) if has else 0
    best = int(np.argmax(t[:pick])) + 1 if pick > 0 else 0
    nan = float("nan")
    return {
        "dips": dips,
        "has_dip": has,
        "tile_m": tile_m,
        "dip_n": n,
        "dip_before_n": n - 1 if has else 0,
        "dip_jump_ms": float(c.step_ms[n - 1] - c.step_ms[n - 2]) if has else nan,
        "dip_before_total": float(t[n - 2]) if has else nan,
        "dip_after_total": float(t[n - 1]) if has else nan,
        "best_n": best,
        "best_total": float(t[best - 1]) if best else nan,
        "pick_past_dip": bool(0 < best < pick and t[best - 1] > t[pick - 1]),
    }


def _loop(points: list[closed_loop.Point], c: Curves) -> ClosedLoop:
    """The runs as arrays for the chart, with the decode-only step and total beside them (`c`:
    decode only at the closed loop's average context)."""
    k = np.array([q.clients for q in points], dtype=np.int64)

    def field(name: str, dtype: type = np.float64) -> np.ndarray:
        return np.array([getattr(q, name) for q in points], dtype=dtype)

    return ClosedLoop(
        clients=k,
        requests=field("requests", np.int64),
        output_tps=field("output_tps"),
        itl_ms=field("itl_ms"),
        ttft_ms=field("ttft_ms"),
        preemptions=field("preemptions", np.int64),
        decode_step_ms=c.step_ms[k - 1] if k.size else np.empty(0),
        decode_total=c.total[k - 1] if k.size else np.empty(0),
        decode=c,
    )


def closed_fields(
    p: Params, dep: Deployment, budget: int, seqs: int, reach: int, pick: int, fast_enough: int
) -> dict:
    """The closed loop's Readout fields (closed_loop.py): its runs, the comparison with the
    decode-only picture at the pick (or, if the engine cannot hold the pick, at the largest
    concurrency run that it holds at once) and the same run in the other scheduling mode. Decode
    only is compared at the same average context: the prompt and half the answer. `fast_enough`:
    the largest concurrency whose decode-only step meets the target (the promise prompts break)."""
    prompt = closed_loop.prompt_tokens(p.model, p.context, p.output_tokens)
    out = p.output_tokens
    mid = prompt + out // 2
    c = decode_curves(dep.gpu, dep.model, dep.tp, dep.dtype, mid, p.async_scheduling)
    held = min(seqs, kv_capacity(dep, prompt + out, budget)) if reach > 0 else 0
    runnable = held > 0 and not refusal(budget, seqs, p.context)
    clients = closed_loop.clients_for(held, pick, prompt, out, budget) if runnable else ()
    args = (dep, budget, seqs, prompt, out)
    points = closed_loop.sweep(*args, p.async_scheduling, clients, held)
    loop = _loop(points, c)
    within_held = [q for q in points if q.clients <= max(held, 1)]
    at_pick = [q for q in points if q.clients == min(pick, held)]  # the star, or what fits
    cmp = (at_pick or within_held or points or [None])[-1]
    nan = float("nan")
    other = nan
    if cmp is not None:
        other = closed_loop.point(*args, not p.async_scheduling, cmp.clients, cmp.requests).itl_ms
    within = loop.clients[loop.itl_ms <= p.itl_target_ms]
    cl_pick = int(within.max()) if within.size else 0
    cmp_n = cmp.clients if cmp else 0
    step = float(c.step_ms[cmp_n - 1]) if cmp else nan
    total = float(c.total[cmp_n - 1]) if cmp else nan
    itl = cmp.itl_ms if cmp else nan
    has = cmp is not None
    mixed_ms = cmp.mixed_ms if cmp else nan
    return {
        "output_tokens": p.output_tokens,
        "cl_prompt": prompt,
        "prompt_cut": prompt < p.context,
        "model_max_len": get_model(p.model).max_position_embeddings,
        "mid_context": mid,
        "has_closed": has,
        "no_closed": not has,
        "cl_async": has and p.async_scheduling,
        "cl_sync": has and not p.async_scheduling,
        "cl_rounds": closed_loop.ROUNDS,
        "cl_held": held,
        "cl_first": int(loop.clients[0]) if has else 0,
        "cl_max": int(loop.clients[-1]) if has else 0,
        "cl_runs": len(points),
        "cl_requests_max": int(loop.requests.max()) if has else 0,
        "cl_pick": cl_pick,
        "has_cl_pick": has and cl_pick > 0,
        "no_cl_pick": has and cl_pick == 0,
        "cmp_n": cmp_n,
        "cmp_pick": has and cmp_n == pick,
        "cmp_capped": has and 0 < held == cmp_n < pick,
        "cmp_other": has and cmp_n != pick and not 0 < held == cmp_n < pick,
        "cmp_requests": cmp.requests if cmp else 0,
        "cmp_itl_ms": itl,
        "cmp_step_ms": step,
        "cmp_itl_ratio": itl / step,
        "cmp_itl_extra_ms": itl - step,
        "cmp_tput": cmp.output_tps if cmp else nan,
        "cmp_decode_total": total,
        "cmp_tput_share": (cmp.output_tps if cmp else nan) / total,
        "cmp_ttft_ms": cmp.ttft_ms if cmp else nan,
        "cmp_mixed_share": cmp.mixed_share if cmp else nan,
        "cmp_mixed_ms": cmp.mixed_ms if cmp else nan,
        "cmp_pure_ms": cmp.pure_ms if cmp else nan,
        "cmp_itl_other_ms": other,
        "cmp_over_target": has and cmp_n <= fast_enough and itl > p.itl_target_ms,
        "cmp_within_target": has and itl <= p.itl_target_ms and mixed_ms <= p.itl_target_ms,
        "cmp_mean_within": has and itl <= p.itl_target_ms and mixed_ms > p.itl_target_ms,
        "cmp_surge_felt": has and itl >= SURGE_FELT * step,
        "cmp_surge_small": has and itl < SURGE_FELT * step,
        "loop": loop,
    }


def build(p: Params) -> Readout:
    """Every number and curve of the lesson for one selection."""
    dtype = p.dtype if get_gpu(p.gpu).has_fp8 else "bf16"  # as the page shows it
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=dtype)
    c = decode_curves(p.gpu, p.model, p.tp, dtype, p.context, p.async_scheduling)
    other = decode_curves(p.gpu, p.model, p.tp, dtype, p.context, not p.async_scheduling)
    budget, seqs = limits.effective_for(p)
    model = get_model(p.model)
    pool = kv_pool(p.gpu, p.model, tp=p.tp, dtype=dtype, max_num_batched_tokens=budget)
    kv_cap = kv_capacity(dep, p.context, budget) if pool.fits else 0
    n = c.n
    fast_enough = _largest(c.step_ms <= p.itl_target_ms)
    pick = _largest((c.step_ms <= p.itl_target_ms) & (n <= kv_cap))
    knee = knee_of(c.total)
    reach = min(seqs, kv_cap, MAX_SEQS)

    def at(k: int, series: np.ndarray) -> float:
        return float(series[k - 1]) if k >= 1 else float("nan")

    weight_gb = weight_read_bytes(model, dtype, p.tp) / 1e9
    kv_per_seq_gb = p.context * kv_bytes_per_token(model, "bf16", p.tp) / 1e9
    one_step = at(1, c.step_ms)
    wrm = weight_read_ms(dep)
    # The animation runs over what this engine reaches and opens at the latency target's pick.
    anim_last = max(reach, 1)
    anim_open = min(pick, anim_last) if pick else 1
    anim_n = anim_concurrencies(anim_last, anim_open)
    error = refusal(budget, seqs, p.context)
    return Readout(
        **selection(p, dtype=dtype),
        context=p.context,
        target_ms=p.itl_target_ms,
        **used_limits(p, budget, seqs),
        max_seqs=MAX_SEQS,
        config_error=error,
        config_invalid=bool(error),
        fits=pool.fits,
        stored_weight_gb=weight_bytes(model, dtype, p.tp) / 1e9,
        memory_gib=get_gpu(p.gpu).memory_gib,
        one_step_ms=one_step,
        one_total=at(1, c.total),
        top_step_ms=at(MAX_SEQS, c.step_ms),
        top_total=at(MAX_SEQS, c.total),
        top_per_user=at(MAX_SEQS, c.per_user),
        weight_gb=weight_gb,
        weight_read_ms=wrm,
        weight_share=min(wrm / one_step, 1.0),
        knee=knee,
        has_knee=knee > 0,
        knee_first=knee == 1,
        knee_later=knee > 1,
        knee_gain_pct=(KNEE_GAIN - 1) * 100,
        knee_step_ms=at(knee, c.step_ms),
        knee_total=at(knee, c.total),
        knee_per_user=at(knee, c.per_user),
        top_vs_knee=at(MAX_SEQS, c.total) / at(knee, c.total),
        speedup_1_to_knee=at(knee, c.total) / at(1, c.total),
        pick=pick,
        has_pick=pick > 0,
        fast_enough=fast_enough,
        pick_kv_bound=pick > 0 and fast_enough > pick,
        pick_latency_bound=pick > 0 and fast_enough == pick,
        pick_step_ms=at(pick, c.step_ms),
        pick_total=at(pick, c.total),
        pick_per_user=at(pick, c.per_user),
        kv_per_seq_mb=kv_per_seq_gb * 1e3,
        kv_per_seq_gb=kv_per_seq_gb,
        crossover=weight_gb / kv_per_seq_gb,
        cache_outweighs_one=kv_per_seq_gb >= weight_gb,
        pool_gib=pool.kv_pool_gib,
        kv_cap=kv_cap,
        kv_limits=pool.fits and kv_cap < MAX_SEQS,
        knee_past_cache=pool.fits and knee > 0 and kv_cap < knee,
        kv_holds_all=pool.fits and kv_cap >= MAX_SEQS,
        reach=reach,
        reach_step_ms=at(reach, c.step_ms),
        reach_total=at(reach, c.total),
        reach_per_user=at(reach, c.per_user),
        can_serve=reach > 0,
        kv_stops=0 < reach < seqs,
        seqs_stop=reach > 0 and reach == seqs,
        anim_n=anim_n,
        anim_start=int(np.flatnonzero(anim_n == anim_open)[0]),
        anim_open=anim_open,
        anim_last=anim_last,
        anim_at_pick=0 < pick <= anim_last,
        async_on=p.async_scheduling,
        overhead_ms=OVERHEAD_MS,
        one_step_other_ms=at(1, other.step_ms),
        curves=c,
        seqs_l4=default_batch_limits("L4", usage="server")["max_num_seqs"],
        seqs_h100=default_batch_limits("H100-SXM", usage="server")["max_num_seqs"],
        **dip_fields(c, reach, pick, factors_for(get_gpu(p.gpu)).tile_m),
        **closed_fields(p, dep, budget, seqs, reach, pick, fast_enough),
    )
