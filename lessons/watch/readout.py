"""What the lesson "What to watch" shows, by name: one dashboard (a run read as vLLM's metrics
read it), the same requests with the fix, and the signs each shows. Computed in lesson.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection


@dataclass(frozen=True, eq=False)
class Dash:
    """One run's metrics on a time grid: gauges as scraped at each point, step time and
    preemptions over the interval up to it."""

    time_s: np.ndarray
    running: np.ndarray  # vllm:num_requests_running
    waiting: np.ndarray  # vllm:num_requests_waiting
    kv_pct: np.ndarray  # vllm:kv_cache_usage_perc, the highest in the interval (%)
    step_ms: np.ndarray  # the longest step in the interval (0 if none)
    preemptions: np.ndarray  # vllm:num_preemptions, cumulative


@dataclass(frozen=True, eq=False)
class Signs:
    """One run's readings and the problem signs they show (the lesson's bands)."""

    ttft_p50_s: float
    ttft_p99_s: float
    itl_p50_ms: float
    itl_p99_ms: float
    hit_pct: float  # vllm:prefix_cache_hits / vllm:prefix_cache_queries
    shared_pct: float  # share of prompt tokens that are a shared system prompt
    preemptions: int
    recomputed: int  # prompt tokens computed again after preemptions
    waiting_end: int  # waiting when the last request arrives
    peak_waiting: int
    kv95_pct: float  # share of steps with the cache 95% full or more
    step_p50_ms: float
    step_max_ms: float
    waiting_grows: bool
    kv_pinned: bool
    step_spikes: bool
    low_hits: bool
    any_sign: bool
    in_bands: bool  # every reading inside its band in 99% of the steps, no preemptions, and
    # the TTFT and ITL p99 within their targets


@dataclass(frozen=True, eq=False)
class Readout(Selection):
    preset: str  # as shown
    preset_key: str
    fixed: bool
    itl_target_ms: int
    ttft_target_s: float
    waiting_band: int
    budget: int
    fix_budget: int  # the budget the ITL target allows
    big_budget: int
    min_budget: int
    max_num_seqs: int
    serve_seqs_l4: int  # vLLM's serve default for max_num_seqs on the L4 (sim.hardware)
    serve_seqs_h100: int  # ... and on the H100
    num_gpu_blocks: int
    usable_blocks: int  # the blocks that hold tokens: all but the null block
    fix_blocks: int
    requests: int
    rate_per_s: float
    capacity_req_per_s: float
    load_pct: float
    weights_fit: bool
    target_reachable: bool  # a decode-only full batch meets the ITL target
    # the dashboard shown (the fix's if `fixed`) and the two runs' readings
    dash: Dash
    now_in_bands: bool
    budget_differs: bool  # the target asks for a smaller budget, and (Dashboard 3) the large
    # one breaks it: its ITL p99 is above the target
    budget_fixes: bool  # ... and Dashboard 3's fix meets the target (longest step, ITL p99)
    budget_short: bool  # ... and it does not (then the target is out of reach); both False
    # on the other dashboards, which do not run Dashboard 3
    healthy_ok: bool  # the healthy dashboard's fix run (the same run) is in every band
    ask_problem: bool  # the diagnosis question is asked (a dashboard with a problem, fix off)
    ask_healthy: bool  # ... of the healthy dashboard, which has no cure
    overload_only: bool  # Dashboard 1 before its fix: the queue is the only reading out of band
    overload_other_signs: bool  # ... preemptions or the ITL p99 too (a slow GPU)
    overload_fix_short: bool  # ... and with the fix the TTFT or ITL p99 still misses its target
    routing_full: bool  # Dashboard 4 before its fix also preempts (a cache that runs full)
    budget_pool_preempts: bool  # Dashboard 3's large budget left a smaller pool, which preempted
    long_ttft_before_s: float  # Dashboard 3's long documents: median TTFT before the fix
    long_ttft_after_s: float  # ... and with it
    budget_ttft_small: bool  # Dashboard 3's fix meets the target and raises the TTFT p99 by
    # at most a quarter
    budget_ttft_big: bool  # ... and by more
    budget_short_ttft_up: bool  # no budget meets the ITL target, and the small one raises TTFT
    budget_short_ttft_down: bool  # ... and it does not
    # the dashboards' recipes, as the text names them
    chat_system_prompt: int
    prompt_median: int
    long_answer: int
    long_prompt: int
    long_share_pct: int
    system_prompts: int
    system_prompt_tokens: int
    kv_band_pct: int
    now: Signs  # the run shown: the fix's if `fixed`
    problem: Signs
    fix: Signs
    p_load_pct: float  # the load before the fix
    benchmark_overloaded: bool  # the benchmark preset's fix (real traffic) shows the queue grow
    tail_hidden: bool  # the benchmark meets the TTFT target, the long tail is 3x or worse
