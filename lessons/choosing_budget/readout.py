"""What the lesson "Choosing the budget" shows, by name: every number its text quotes, every
choice of paragraph, and what its charts draw, all filled by lesson.build() from sim runs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection


@dataclass(frozen=True, eq=False)
class Lane:
    """One budget's timed run, read from the long prompt's arrival on (times in ms from it)."""

    budget: int
    steps: int  # steps that carry a chunk of the prompt (the last one samples its first token)
    chunks: np.ndarray  # the prompt's tokens in each of those steps
    worst_ms: float  # the users' longest gap between two tokens while the prompt is read in
    ttft_ms: float  # the prompt's time to first token (sim.metrics)
    decode_ms: float  # the users' gap in the last step before the prompt arrived (decodes only)
    start_ms: np.ndarray  # every step from the arrival on: its start and end
    end_ms: np.ndarray
    tick_ms: np.ndarray  # when the users receive a token
    kv_tokens: int  # KV cache in use when the prompt's first token is out (blocks x block size)


@dataclass(frozen=True, eq=False)
class Readout(Selection):
    # the selection
    budget: int
    decodes: int
    prompt: int
    context: int  # tokens each user holds when the prompt arrives (about)
    user_prompt: int  # each user's own prompt; the rest of the context is streamed output
    budget_min: int
    budget_max: int
    budget_step: int
    overhead_ms: float  # the CPU's part of a step, hidden behind the GPU (async scheduling)
    # how the prompt gets in at the learner's budget
    has_room: bool  # the users leave part of the budget to the prompt
    simulated: bool  # ... and few enough steps to run them
    thin: bool  # room, but too many steps to simulate
    max_steps: int
    room: int
    steps: int
    chunk: int
    last_chunk: int
    full_chunks: int
    one_step: bool
    even_chunks: bool
    uneven_chunks: bool
    # its two costs
    worst_ms: float
    ttft_ms: float
    ttft_s: float
    decode_ms: float
    worst_ratio: float
    # the latency rule
    target_ms: int
    has_pick: bool
    trade_moves: bool  # both curves span more than TRADE_MOVES over the budgets drawn
    trade_flat: bool  # ... they do not, and even the smallest budget reads the prompt at once
    pick_top: bool  # the pick is the largest budget tried
    pick_trade: bool  # below it, and a smaller budget delays the prompt's first token
    pick_no_gain: bool  # below it, and a smaller one does not (the prompt fits either way)
    pick: int
    pick_worst_ms: float
    pick_ttft_s: float
    pick_steps: int
    smallest_budget: int
    smallest_worst_ms: float
    # vLLM's default
    default_budget: int
    is_default: bool
    opening_budget: int
    # what vLLM would say about the scene
    fits: bool
    weight_gb: float
    ridge: float  # tokens per step where the linear layers' arithmetic equals their weight read
    memory_gib: float
    kv_short: bool
    kv_need: int
    kv_have: int
    seqs_capped: bool
    max_seqs: int
    run_seqs: int  # the runs' max_num_seqs: every user and the prompt
    seqs_l4: int  # vLLM's serve default max_num_seqs on the L4 and on the H100 (for comparison)
    seqs_h100: int
    too_long: bool
    max_len: int
    # the animation
    anim_budget: int  # the frame it opens at
    anim_start: int
    anim_exact: bool  # that frame is the learner's budget
    frames: tuple[Lane, ...]
    window_ms: float
    # the trade chart: one point per budget run
    curve_budgets: np.ndarray
    curve_worst_ms: np.ndarray
    curve_ttft_s: np.ndarray
    curve_steps: np.ndarray
