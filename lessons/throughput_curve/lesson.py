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

The curves depend on GPU, model, weights, TP and context only, so they are cached on those
(`decode_curves`); the rest of a Readout is a few array look-ups.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lessons.kit import limits, shared
from lessons.kit.controls import Integer, Steps, control
from lessons.kit.selection import selection, used_limits
from lessons.throughput_curve.readout import Curves, Readout
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs, weight_read_ms
from sim.errors import SimInputError
from sim.hardware import get_gpu
from sim.kv import cdiv
from sim.models import get_model, kv_bytes_per_token, kv_pool, weight_bytes, weight_read_bytes
from sim.scenarios import decode_sweep
from sim.timed import config_for

PREFIX = "tput"
MAX_SEQS = 1_024
KNEE_GAIN = 1.5
ANIM_POINTS = 31  # the animation's concurrencies: this many on a log scale, plus the opening one
CONCURRENCY = np.arange(1, MAX_SEQS + 1, dtype=np.int64)
CONTEXTS = (16, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
PARTS = ("linear_ms", "attention_ms", "other_ms")


@dataclass(frozen=True)
class Params(limits.Limits, shared.Deployment):
    """Everything the lesson's controls set."""

    max_num_batched_tokens: int = limits.max_num_batched_tokens(8_192)
    max_num_seqs: int = limits.max_num_seqs(1_024)
    context: int = control(
        2_048, Steps("Context each sequence holds (tokens)", options=CONTEXTS, main=True)
    )
    itl_target_ms: int = control(
        20, Integer("Inter-token latency target (ms)", key="itl", lo=5, hi=200, main=True)
    )


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    a.flags.writeable = False
    return a


@lru_cache(maxsize=64)
def decode_curves(gpu: str, model: str, tp: int, dtype: str, context: int) -> Curves:
    """Steady decode steps of 1..MAX_SEQS sequences of `context` tokens, priced in one call."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    costs = step_costs(dep, **decode_sweep(CONCURRENCY, context))
    step = _frozen(costs.step_ms)
    n = CONCURRENCY.astype(np.float64)
    return Curves(
        n=CONCURRENCY,
        step_ms=step,
        total=_frozen(n / step * 1e3),
        per_user=_frozen(1e3 / step),
        parts_ms={
            "linear_ms": _frozen(costs.linear_ms),
            "attention_ms": _frozen(costs.attention_ms),
            "other_ms": _frozen(costs.lm_head_ms + costs.comm_ms + costs.overhead_ms),
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


def build(p: Params) -> Readout:
    """Every number and curve of the lesson for one selection."""
    dtype = p.dtype if get_gpu(p.gpu).has_fp8 else "bf16"  # as the page shows it
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=dtype)
    c = decode_curves(p.gpu, p.model, p.tp, dtype, p.context)
    budget, seqs = limits.effective(
        p.gpu, p.vllm_defaults, p.max_num_batched_tokens, p.max_num_seqs
    )
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
        pool_gib=pool.kv_pool_gib,
        kv_cap=kv_cap,
        kv_limits=pool.fits and kv_cap < MAX_SEQS,
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
        curves=c,
    )
