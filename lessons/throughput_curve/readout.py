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
    # the KV cache and the limits
    pool_gib: float
    kv_cap: int
    kv_limits: bool  # the cache holds fewer than MAX_SEQS sequences
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
    # what the charts draw
    curves: Curves
