"""Lesson "What to watch": its controls (Params), six dashboards, and build(p) -> Readout.

A dashboard is one timed run read the way vLLM's metrics read it. Each of the first five shows
one problem sign; the sixth is healthy. Every dashboard runs on the learner's deployment with
vLLM's async scheduling (ASYNC_SCHEDULING: steps are timed as `step_time` prices them), with
max_num_seqs capped at MAX_NUM_SEQS (below vLLM's serve default, `serve_seqs`) and a budget
the ITL target allows (the largest whose worst step meets the target: a full batch decoding
next to a chunk that ends the longest prompt; from the cost model). Its run holds WAVES full
batches, and its load is a share of the capacity the same requests give when all are queued at
once (sim.overload). Each has a fix, run the same way:

- overload: chat at 150% of capacity; the fix is a second replica (each sees half the stream);
- cache: long answers in a cache squeezed to SQUEEZE full sequences per seat cap; the fix doubles
  it (a higher gpu_memory_utilization, or a second GPU);
- budget: a tenth of the prompts are long, with a budget of BIG_BUDGET tokens; the fix is the
  budget the ITL target allows;
- routing: twelve system prompts in a cache that holds about half of them, on one of two
  replicas that take the stream's requests in turn (round robin); the fix routes each system
  prompt to one replica;
- benchmark: a benchmark with uniform prompts at 70% of its capacity; the fix is the same rate
  with a long tail of prompts (the same median), which is what users send;
- healthy: chat at 60% of capacity; nothing to fix.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lessons.kit import shared
from lessons.kit.anim import time_grid
from lessons.kit.controls import Choice, Steps, Toggle, control
from lessons.kit.selection import selection
from lessons.kit.sizing import last_begun, sized
from lessons.watch.readout import Dash, Readout, Signs
from sim.cost import Deployment
from sim.generators import WorkloadSpec
from sim.hardware import default_batch_limits
from sim.metrics import kv_usage, summarize
from sim.models import kv_pool
from sim.overload import poisson_at
from sim.run import Run
from sim.timed import config_for, run_timed, timer_for
from sim.workload import Workload

PREFIX = "wch"
OWN_VALUES = ("frame-", "predict-revealed", "preset-")
PRESETS = ("overload", "cache", "budget", "routing", "benchmark", "healthy")
# each dashboard with a problem -> the quiz question that asks what its panels say
DIAGNOSIS = {key: f"diagnose_{i}" for i, key in enumerate(PRESETS[:-1], start=1)}
TARGETS_MS = (25, 50, 100, 200, 400)
TTFT_TARGET_S = 2.0
SEED = 11
MAX_MODEL_LEN = 16_384
MAX_NUM_SEQS = 128
ASYNC_SCHEDULING = True  # vLLM's default in deployments: a step's CPU work hides behind the GPU
BIG_BUDGET = 16_384
MIN_BUDGET = 256  # the budget grid's step and floor
WAVES = 6
MIN_REQUESTS, MAX_REQUESTS = 300, 1_200
FALLBACK_BLOCKS = 1_970
PREFIX_TOKENS = 2_048
SYSTEM_PROMPTS = 12
WAITING_BAND = MAX_NUM_SEQS // 20  # "waiting near zero": at most this many
KV_BAND_PCT = 90
PINNED_PCT = 95
CHAT_SYSTEM_PROMPT = 1_024  # tokens of the chat service's one system prompt
PROMPT_MEDIAN, ANSWER_MEDIAN = 800, 120  # the chat requests' lognormal medians
LONG_ANSWER = 600  # the writing assistant's median answer
LONG_PROMPT, LONG_SHARE = 12_000, 0.1  # the pasted documents: median tokens, share of requests
POINTS = 60  # dashboard points (and frames) at most, at round times (kit time_grid)
CONTEXT = 2_000  # tokens each decoding request attends to, for the budget's step
# the lesson's fixed numbers, as the text quotes them
FIXED = {
    "chat_system_prompt": CHAT_SYSTEM_PROMPT,
    "prompt_median": PROMPT_MEDIAN,
    "long_answer": LONG_ANSWER,
    "long_prompt": LONG_PROMPT,
    "long_share_pct": round(LONG_SHARE * 100),
    "system_prompts": SYSTEM_PROMPTS,
    "system_prompt_tokens": PREFIX_TOKENS,
    "kv_band_pct": KV_BAND_PCT,
}


def preset_name(key: str) -> str:
    """A dashboard as the lesson shows it (and a link carries it)."""
    return {"healthy": "Healthy"}.get(key, f"Dashboard {PRESETS.index(key) + 1}")


@dataclass(frozen=True)
class Params(shared.Deployment):
    """Everything the lesson's controls set."""

    preset: str = control(
        "overload",
        Choice("Dashboard", options=PRESETS, format=preset_name, main=True),
    )
    fixed: bool = control(
        False,
        Toggle("Apply the fix", key="fix", main=True, help="Runs the same requests with the fix."),
    )
    itl_target_ms: int = control(
        100, Steps("ITL target (ms)", key="itl", options=TARGETS_MS, main=True)
    )


@dataclass(frozen=True)
class Setup:
    """One dashboard's run: its config, its requests and their arrival rate."""

    config: object
    workload: Workload
    rate_per_s: float
    capacity_req_per_s: float


def _spec(n: int, **extra) -> WorkloadSpec:
    lengths = {
        "prompt": f"lognormal:{PROMPT_MEDIAN}:0.8",
        "output": f"lognormal:{ANSWER_MEDIAN}:0.5",
        **extra,
    }
    return WorkloadSpec("poisson", n, 1.0, seed=SEED, prompt_max=MAX_MODEL_LEN - 1, **lengths)


def budget_for(dep: Deployment, target_ms: float) -> int:
    """The largest budget (multiple of 256, at least 256) whose worst step meets the target: a
    full batch decoding at CONTEXT tokens of context, and the rest of the budget one prompt chunk
    that ends a prompt of MAX_MODEL_LEN tokens, so it attends to everything before it."""
    grid = np.arange(MIN_BUDGET, BIG_BUDGET + 1, MIN_BUDGET)
    chunk = grid - MAX_NUM_SEQS
    before = MAX_MODEL_LEN - chunk  # the prompt's tokens already in the cache
    decode_ctx = MAX_NUM_SEQS * CONTEXT
    pairs = chunk * before + chunk * (chunk + 1) // 2 + MAX_NUM_SEQS * (CONTEXT + 1)
    seqs = np.full(grid.shape, MAX_NUM_SEQS + 1)
    ms = step_time(dep)(grid, seqs, decode_ctx + before, pairs)
    ok = grid[ms <= target_ms]
    return int(ok.max()) if ok.size else MIN_BUDGET


def step_time(dep: Deployment):
    """The step time (ms) of the lesson's engine: the cost model with async scheduling
    (sim.timed.timer_for)."""
    return timer_for(dep, async_scheduling=ASYNC_SCHEDULING)


def _config(dep: Deployment, fits: bool, budget: int, **extra):
    return config_for(
        dep,
        max_model_len=MAX_MODEL_LEN,
        max_num_seqs=MAX_NUM_SEQS,
        max_num_batched_tokens=budget,
        num_gpu_blocks=None if fits else FALLBACK_BLOCKS,
        enable_prefix_caching=True,
        async_scheduling=ASYNC_SCHEDULING,
        **extra,
    )


@lru_cache(maxsize=64)
def _sized(config, dep: Deployment, **lengths) -> tuple[WorkloadSpec, float]:
    """The recipe sized to WAVES full batches, and the capacity of its requests (cached: a
    dashboard and its fix size the same requests on the same engine, then run them apart)."""
    spec, _, capacity = sized(
        config, lambda n: _spec(n, **lengths), dep, waves=WAVES, lo=MIN_REQUESTS, hi=MAX_REQUESTS
    )
    return spec, capacity


def _at(spec: WorkloadSpec, rate: float) -> Workload:
    return poisson_at(spec, rate, max_model_len=MAX_MODEL_LEN)


def _replica(config, stream: Workload, rate: float, mine: np.ndarray, cap: float) -> Setup:
    """One of two replicas behind a load balancer: the requests of `stream` (arriving at
    `rate`) that `mine` sends to it, at its share of the rate."""
    share = np.count_nonzero(mine) / stream.num_requests
    return Setup(config, stream.take(np.flatnonzero(mine)), rate * share, cap)


def engine_budget(dep: Deployment, target_ms: float, preset: str, fixed: bool) -> int:
    """The budget one dashboard's engine runs with: the one that meets the target
    (`budget_for`), but BIG_BUDGET for Dashboard 3 before its fix, whatever the target. Runs are
    keyed by it, so targets that give the same budget share their runs."""
    return BIG_BUDGET if preset == "budget" and not fixed else budget_for(dep, target_ms)


@lru_cache(maxsize=64)
def setup(key: tuple, budget: int, preset: str, fixed: bool) -> Setup:
    """The config, requests and rate of one dashboard, with or without its fix, on an engine
    with `budget` tokens per step (`engine_budget`)."""
    dep = Deployment(*key[:2], tp=key[2], dtype=key[3])
    fits = kv_pool(key[0], key[1], tp=key[2], dtype=key[3]).fits
    base = _config(dep, fits, budget)
    if preset == "overload":
        spec, cap = _sized(base, dep, prefix_tokens=CHAT_SYSTEM_PROMPT)
        stream = _at(spec, cap * 1.5)
        if not fixed:
            return Setup(base, stream, cap * 1.5, cap)
        # a second replica: this one gets every other request
        return _replica(base, stream, cap * 1.5, np.arange(stream.num_requests) % 2 == 0, cap)
    if preset == "healthy":
        spec, cap = _sized(base, dep, prefix_tokens=CHAT_SYSTEM_PROMPT)
        return Setup(base, _at(spec, cap * 0.6), cap * 0.6, cap)
    if preset == "cache":
        lengths = {"output": f"lognormal:{LONG_ANSWER}:0.4"}
        seq_blocks = int(np.ceil((PROMPT_MEDIAN + LONG_ANSWER) / base.block_size))
        # a quarter of the seats' worth, and at most half the real pool (the fix doubles it)
        blocks = min(MAX_NUM_SEQS // 4 * seq_blocks, base.num_gpu_blocks // 2)
        squeezed = dataclasses.replace(base, num_gpu_blocks=blocks)
        spec, cap = _sized(squeezed, dep, **lengths)
        twice = 2 * (blocks - 1) + 1  # twice the usable blocks, and the null block
        config = dataclasses.replace(squeezed, num_gpu_blocks=twice) if fixed else squeezed
        return Setup(config, _at(spec, cap), cap, cap)
    if preset == "budget":
        lengths = {
            "interactive": 1 - LONG_SHARE,
            "batch_prompt": f"lognormal:{LONG_PROMPT}:0.2",
            "batch_output": "fixed:40",
        }
        big = _config(dep, fits, BIG_BUDGET)  # its own pool, as vLLM sizes it (engine_budget)
        spec, cap = _sized(big, dep, **lengths)  # the same requests and rate, fixed or not
        return Setup(base if fixed else big, _at(spec, cap * 0.6), cap * 0.6, cap)
    if preset == "routing":
        lengths = {"prefix_tokens": PREFIX_TOKENS, "prefixes": SYSTEM_PROMPTS}
        half = SYSTEM_PROMPTS // 2 * PREFIX_TOKENS // base.block_size
        seq_blocks = int(np.ceil((PROMPT_MEDIAN + ANSWER_MEDIAN) / base.block_size))
        blocks = half + MAX_NUM_SEQS // 8 * seq_blocks
        small = dataclasses.replace(base, num_gpu_blocks=blocks)
        spec, cap = _sized(small, dep, **lengths)
        # two replicas share a stream twice as long, each at 80% of its capacity
        stream = _at(dataclasses.replace(spec, n=2 * spec.n), 2 * cap * 0.8)
        mine = (
            stream.prefix_id < SYSTEM_PROMPTS // 2
            if fixed
            else np.arange(stream.num_requests) % 2 == 0
        )
        return _replica(small, stream, 2 * cap * 0.8, mine, cap)
    if preset == "benchmark":
        spec, cap = _sized(base, dep, prompt=f"fixed:{PROMPT_MEDIAN}")
        rate = cap * 0.7
        if fixed:
            spec = _spec(spec.n, prompt=f"longtail:{PROMPT_MEDIAN}:1.2")
        return Setup(base, _at(spec, rate), rate, cap)
    raise KeyError(preset)


@lru_cache(maxsize=64)
def run_for(key: tuple, budget: int, preset: str, fixed: bool) -> Run:
    """The timed run of one dashboard (`setup`)."""
    s = setup(key, budget, preset, fixed)
    dep = Deployment(*key[:2], tp=key[2], dtype=key[3])
    return run_timed(s.config, s.workload, dep)


def serve_seqs(gpu: str) -> int:
    """vLLM's default max_num_seqs for `vllm serve` on a GPU (the runs cap it at MAX_NUM_SEQS)."""
    return default_batch_limits(gpu, "server", max_model_len=MAX_MODEL_LEN)["max_num_seqs"]


def _key(p: Params) -> tuple:
    return (p.gpu, p.model, p.tp, p.dtype)


def long_ttft_p50_s(run: Run) -> float:
    """The median time to first token of the long documents (Dashboard 3's batch class)."""
    wl = run.workload
    long = wl.priority > wl.priority.min()
    return float(np.median((run.first_token_s - run.arrival_s)[long])) if long.any() else 0.0


def signs(run: Run, target_ms: float) -> Signs:
    """A run's readings and which problem signs they show."""
    out = summarize(run)
    wl = run.workload
    kv = kv_usage(run.kv_blocks_used, run.kv_blocks_usable) * 100
    starts = np.asarray(run.step_start_s)
    at = np.searchsorted(starts, np.quantile(run.arrival_s, [0.25, 0.75, 1.0])) - 1
    quarter, three, end = (int(run.num_waiting[max(k, 0)]) for k in at)
    hit = run.prefix_cache.hit_rate_pct  # vLLM's counters (victims' hits kept apart)
    shared = float(np.where(wl.prefix_id >= 0, wl.prefix_tokens, 0).sum() / wl.prompt_tokens.sum())
    step_max = float(run.step_ms.max())
    grows = end > 4 * WAITING_BAND and three > quarter
    pinned = float(np.mean(kv >= PINNED_PCT) * 100)
    is_pinned = pinned >= 20 and run.total_preemptions > 0
    spikes = step_max > 2 * target_ms
    low = shared * 100 >= 30 and hit < 0.75 * shared * 100
    return Signs(
        ttft_p50_s=out["ttft_ms"]["p50"] / 1e3,
        ttft_p99_s=out["ttft_ms"]["p99"] / 1e3,
        itl_p50_ms=out["itl_ms"]["p50"],
        itl_p99_ms=out["itl_ms"]["p99"],
        hit_pct=hit,
        shared_pct=shared * 100,
        preemptions=run.total_preemptions,
        recomputed=int(run.num_recomputed_tokens.sum()),
        waiting_end=end,
        peak_waiting=int(run.num_waiting.max()),
        kv95_pct=pinned,
        step_p50_ms=float(np.median(run.step_ms)),
        step_max_ms=step_max,
        waiting_grows=bool(grows),
        kv_pinned=bool(is_pinned),
        step_spikes=bool(spikes),
        low_hits=bool(low),
        any_sign=bool(grows or is_pinned or spikes or low),
        in_bands=bool(  # in 99% of the steps, and the two latency targets at the p99
            np.quantile(run.num_waiting, 0.99) <= WAITING_BAND
            and np.quantile(kv, 0.99) < KV_BAND_PCT
            and np.quantile(run.step_ms, 0.99) <= target_ms
            and run.total_preemptions == 0
            and out["ttft_ms"]["p99"] <= TTFT_TARGET_S * 1e3
            and out["itl_ms"]["p99"] <= target_ms
        ),
    )


def dash(run: Run) -> Dash:
    """The run on POINTS times: gauges after the last step begun by each, and over each
    interval the fullest cache, the longest step and the preemptions so far."""
    starts = np.asarray(run.step_start_s)
    end = float(starts[-1] + run.step_ms[-1] / 1e3)
    grid = time_grid(end, POINTS)
    k = last_begun(run, grid)
    cut = np.concatenate(([0], k + 1))
    kv = kv_usage(run.kv_blocks_used, run.kv_blocks_usable) * 100
    per = np.repeat(np.arange(grid.shape[0]), np.diff(cut))  # each step's interval
    kv_max = np.zeros(grid.shape[0])
    np.maximum.at(kv_max, per, kv[: cut[-1]])
    step_max = np.zeros(grid.shape[0])
    np.maximum.at(step_max, per, np.asarray(run.step_ms)[: cut[-1]])
    return Dash(
        time_s=grid,
        running=np.asarray(run.num_running)[k],
        waiting=np.asarray(run.num_waiting)[k],
        kv_pct=kv_max,
        step_ms=step_max,
        preemptions=np.cumsum(np.asarray(run.num_preempted))[k],
    )


def build(p: Params) -> Readout:
    """The dashboard of one setting, its fix, and what the text compares."""
    key = _key(p)
    dep = Deployment(*key[:2], tp=key[2], dtype=key[3])
    both = [(engine_budget(dep, p.itl_target_ms, p.preset, f), f) for f in (False, True)]
    problem_setup, fix_setup = (setup(key, b, p.preset, f) for b, f in both)
    runs = [run_for(key, b, p.preset, f) for b, f in both]
    bad, good = (signs(r, p.itl_target_ms) for r in runs)
    fix_budget = budget_for(dep, p.itl_target_ms)
    decode_ms = step_time(dep)([MAX_NUM_SEQS], [MAX_NUM_SEQS], [MAX_NUM_SEQS * CONTEXT], None)[0]
    meets = False  # Dashboard 3's fix meets the target (only its page says so)
    broken = False  # ... and its large budget breaks the ITL target at all
    if p.preset == "budget":
        meets = max(good.step_max_ms, good.itl_p99_ms) <= p.itl_target_ms
        broken = bad.itl_p99_ms > p.itl_target_ms
    differs = fix_budget < BIG_BUDGET and (broken or p.preset != "budget")
    small = good.ttft_p99_s <= 1.25 * bad.ttft_p99_s  # the fix's TTFT price
    # Dashboard 3 whose large budget meets the target has nothing to fix: the run stays
    fix_on = p.fixed and (differs or p.preset != "budget")
    shown = fix_setup if fix_on else problem_setup
    now = good if fix_on else bad
    overload = p.preset == "overload"
    other = bad.preemptions > 0 or bad.itl_p99_ms > p.itl_target_ms
    short = good.ttft_p99_s > TTFT_TARGET_S or good.itl_p99_ms > p.itl_target_ms
    no_budget_meets = bool(p.preset == "budget" and differs and not meets)  # even the smallest
    return Readout(
        **selection(p, dtype=p.dtype),
        preset=preset_name(p.preset),
        preset_key=p.preset,
        fixed=p.fixed,
        itl_target_ms=p.itl_target_ms,
        ttft_target_s=TTFT_TARGET_S,
        waiting_band=WAITING_BAND,
        budget=shown.config.max_num_batched_tokens,
        fix_budget=fix_budget,
        big_budget=BIG_BUDGET,
        min_budget=MIN_BUDGET,
        max_num_seqs=MAX_NUM_SEQS,
        serve_seqs_l4=serve_seqs("L4"),
        serve_seqs_h100=serve_seqs("H100-SXM"),
        num_gpu_blocks=problem_setup.config.num_gpu_blocks,
        usable_blocks=problem_setup.config.kv_blocks_usable,
        fix_blocks=fix_setup.config.kv_blocks_usable,
        requests=shown.workload.num_requests,
        rate_per_s=shown.rate_per_s,
        capacity_req_per_s=shown.capacity_req_per_s,
        load_pct=shown.rate_per_s / shown.capacity_req_per_s * 100,
        p_load_pct=problem_setup.rate_per_s / problem_setup.capacity_req_per_s * 100,
        weights_fit=kv_pool(p.gpu, p.model, tp=p.tp, dtype=p.dtype).fits,
        target_reachable=bool(decode_ms <= p.itl_target_ms),
        dash=dash(runs[int(fix_on)]),
        now_in_bands=now.in_bands,
        budget_differs=bool(differs),
        budget_fixes=bool(differs and meets),
        budget_short=no_budget_meets,
        healthy_ok=good.in_bands,
        ask_problem=not p.fixed and p.preset != "healthy",
        ask_healthy=not p.fixed and p.preset == "healthy",
        overload_only=overload and not other,
        overload_other_signs=overload and other,
        overload_fix_short=overload and short,
        routing_full=p.preset == "routing" and good.preemptions < bad.preemptions,
        budget_pool_preempts=bool(
            p.preset == "budget"
            and differs
            and problem_setup.config.kv_blocks_usable < fix_setup.config.kv_blocks_usable
            and good.preemptions < bad.preemptions
        ),
        long_ttft_before_s=long_ttft_p50_s(runs[0]),
        long_ttft_after_s=long_ttft_p50_s(runs[1]),
        budget_ttft_small=bool(differs and meets and small),
        budget_ttft_big=bool(differs and meets and not small),
        budget_short_ttft_up=no_budget_meets and good.ttft_p99_s > bad.ttft_p99_s,
        budget_short_ttft_down=no_budget_meets and good.ttft_p99_s <= bad.ttft_p99_s,
        **FIXED,
        now=now,
        problem=bad,
        fix=good,
        benchmark_overloaded=bool(p.fixed and p.preset == "benchmark" and good.waiting_grows),
        tail_hidden=bool(bad.ttft_p99_s <= TTFT_TARGET_S and good.ttft_p99_s > 3 * bad.ttft_p99_s),
    )
