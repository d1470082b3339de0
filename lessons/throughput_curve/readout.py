"""What the throughput-curve lesson shows, by name: every number its text quotes, every choice
between its paragraphs, and the curves its charts draw, all computed from sim in lesson.build()."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection, UsedLimits


@dataclass(frozen=True, eq=False)
class Curves:
    """Steady decode steps for N = 1..MAX_SEQS sequences (read-only arrays, shared by a cache):
    the step time, total and per-user tokens per second, and the step split into parts (ms)."""

    n: np.ndarray
    step_ms: np.ndarray
    total: np.ndarray
    per_user: np.ndarray
    parts_ms: dict[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class ClosedLoop:
    """Closed-loop runs, one per concurrency (`clients`): requests sent, output tokens/s, mean
    ITL and TTFT (ms), preemptions, and the decode-only step and total at the same concurrency,
    from `decode`: decode only at the closed loop's average context (prompt + half the answer)."""

    clients: np.ndarray
    requests: np.ndarray
    output_tps: np.ndarray
    itl_ms: np.ndarray
    ttft_ms: np.ndarray
    preemptions: np.ndarray
    decode_step_ms: np.ndarray
    decode_total: np.ndarray
    decode: Curves


@dataclass(frozen=True, eq=False)
class Readout(UsedLimits, Selection):
    # the selection (the limits as the engine uses them: vLLM's defaults or the learner's own)
    context: int
    target_ms: int
    max_seqs: int  # the largest concurrency the lesson prices
    # vLLM's checks
    config_error: str
    config_invalid: bool
    fits: bool
    stored_weight_gb: float
    memory_gib: float
    # one sequence, and all MAX_SEQS of them
    one_step_ms: float
    one_total: float
    top_step_ms: float
    top_total: float
    top_per_user: float
    weight_gb: float
    weight_read_ms: float
    weight_share: float
    # the knee (0 when the curve has none below MAX_SEQS)
    knee: int
    has_knee: bool
    knee_first: bool  # at one sequence: even a second one adds less than half again
    knee_later: bool
    knee_gain_pct: float
    knee_step_ms: float
    knee_total: float
    knee_per_user: float
    top_vs_knee: float
    speedup_1_to_knee: float
    # the ITL target's pick (0 when no concurrency meets it)
    pick: int
    has_pick: bool
    fast_enough: int
    pick_kv_bound: bool
    pick_latency_bound: bool
    pick_step_ms: float
    pick_total: float
    pick_per_user: float
    # why it bends
    kv_per_seq_mb: float
    kv_per_seq_gb: float
    crossover: float
    cache_outweighs_one: bool  # one sequence's cache already reads more than the weights
    # the KV cache and the limits
    pool_gib: float
    kv_cap: int
    kv_limits: bool  # the cache holds fewer than MAX_SEQS sequences
    knee_past_cache: bool  # the cache holds fewer sequences than the knee
    kv_holds_all: bool
    reach: int  # what this engine runs at most: max_num_seqs or the KV cache, whichever is less
    reach_step_ms: float
    reach_total: float
    reach_per_user: float
    can_serve: bool
    kv_stops: bool
    seqs_stop: bool
    # the animation: its concurrencies (up to what the engine reaches) and the frame it opens at
    anim_n: np.ndarray
    anim_start: int
    anim_open: int
    anim_last: int
    anim_at_pick: bool  # it opens at the star (else the engine stops short of it, or no pick)
    # the scheduling mode (every number is in it) and the other mode's single-sequence step
    async_on: bool
    overhead_ms: float
    one_step_other_ms: float
    # the closed loop: prompts keep arriving (has_closed: it could run with these settings)
    output_tokens: int
    cl_prompt: int
    prompt_cut: bool  # the context was cut so that prompt + output fit the model
    model_max_len: int
    mid_context: int  # what a sequence holds halfway through its answer
    has_closed: bool
    no_closed: bool
    cl_async: bool
    cl_sync: bool
    cl_rounds: int  # requests per client (closed_loop.ROUNDS), fewer where a run is slow
    cl_held: int  # what the engine holds at once: max_num_seqs or the KV cache at prompt + output
    cl_first: int
    cl_max: int
    cl_runs: int
    cl_requests_max: int
    cl_pick: int  # the largest concurrency run whose mean ITL meets the target (0: none)
    has_cl_pick: bool
    no_cl_pick: bool
    # the comparison with decode only, at the pick (cmp_pick), at what the engine holds if that is
    # less (cmp_capped), else at the largest concurrency run that the engine holds (cmp_other)
    cmp_n: int
    cmp_pick: bool
    cmp_capped: bool  # the pick is more than the engine holds: compared at what it holds
    cmp_other: bool
    cmp_requests: int
    cmp_itl_ms: float
    cmp_step_ms: float
    cmp_itl_ratio: float
    cmp_itl_extra_ms: float
    cmp_tput: float
    cmp_decode_total: float
    cmp_tput_share: float
    cmp_ttft_ms: float
    cmp_mixed_share: float
    cmp_mixed_ms: float
    cmp_pure_ms: float
    cmp_itl_other_ms: float  # the same run in the other scheduling mode
    cmp_over_target: bool  # the decode-only picture meets the target there, the closed loop not
    cmp_within_target: bool  # the closed loop meets the target, its steps with a chunk too
    cmp_mean_within: bool  # its mean meets the target, its steps with a chunk do not
    cmp_surge_felt: bool  # the prompts lengthen the mean time between tokens (SURGE_FELT)
    cmp_surge_small: bool  # ... they barely do
    # vLLM's serve default max_num_seqs on the L4 and on the H100 (for comparison)
    seqs_l4: int
    seqs_h100: int
    # where the total drops as a sequence is added: a new row of GEMM tiles (lesson.dip_fields)
    dips: np.ndarray  # every such N
    has_dip: bool
    tile_m: int  # the GEMM tile's rows (tokens) on this GPU
    dip_n: int  # the largest relative drop the engine reaches (anywhere, if it reaches none)
    dip_before_n: int
    dip_jump_ms: float  # the step's growth from dip_before_n to dip_n
    dip_before_total: float
    dip_after_total: float
    best_n: int  # the concurrency up to the pick with the largest total
    best_total: float
    pick_past_dip: bool  # a smaller concurrency than the pick makes more in total
    # what the charts draw
    curves: Curves
    loop: ClosedLoop
