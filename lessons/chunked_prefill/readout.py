"""What the chunked-prefill lesson shows, by name: every number its text, table and metrics quote,
every choice between paragraphs (bool fields), and the arrays its two charts draw, all read off
the two timed runs in lesson.build()."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection, UsedLimits

DECODE, CHUNK, WHOLE = 0, 1, 2  # kinds of step: decodes only, decodes + a chunk, the whole prompt


@dataclass(frozen=True, eq=False)
class LaneView:
    """What the charts draw of one lane. Times in seconds from the long prompt's arrival."""

    bar_start_s: tuple[np.ndarray, ...]  # per kind of step (DECODE, CHUNK, WHOLE): step starts
    bar_end_s: tuple[np.ndarray, ...]  # ... and ends (neighbours of one kind merged if `merged`)
    tick_s: np.ndarray  # tokens delivered to the users shown, at most one per pixel-sized bin
    tick_row: np.ndarray  # which of Readout.users_shown received each tick
    first_token_s: float  # the long prompt's first token
    live_gap_ms: np.ndarray  # per animation frame: the longest wait between tokens so far
    compute_x_s: np.ndarray  # the compute-use step line: edges (first start, then step ends)
    compute_pct: np.ndarray  # ... and the value from each edge on (% of peak FLOP/s)
    bandwidth_x_s: np.ndarray
    bandwidth_pct: np.ndarray  # % of peak bytes/s


@dataclass(frozen=True, eq=False)
class Readout(UsedLimits, Selection):
    # the selection
    single_gpu: bool
    # the cast: the GPU and prompt the lesson opens on, against the course's GPU, with vLLM's
    # default budget on each (the cast line says why this lesson differs)
    cast_gpu: str
    cast_budget: int
    cast_prompt: int
    course_gpu: str
    course_budget: int
    # the scenario the runs use (and what was asked, when a limit cut it)
    users: int
    users_asked: int
    users_clamped: bool
    user_prompt: int
    prompt: int
    prompt_asked: int
    prompt_clamped: bool
    long_output: int
    overhead_ms: float  # the CPU's part of every step (synchronous: on top of the GPU's)
    seqs_asked: int
    seqs_clamped: bool
    max_model_len: int
    whole_budget: int
    # memory: vLLM's KV pool for each lane against what the scenario needs
    needed_tokens: int
    whole_pool_tokens: int
    chunked_pool_tokens: int
    memory_short: bool  # either lane's pool is too small (the runs get enough blocks anyway)
    whole_lane_short: bool  # the pool exists but holds too few tokens
    whole_no_weights: bool  # the weights and the test batch leave no pool at all
    chunked_lane_short: bool
    chunked_no_weights: bool
    # the prompt's steps
    chunk: int  # the first chunk (what the budget leaves beside the decodes)
    chunk_steps: int
    one_chunk: bool
    chunk_step_tokens: int
    chunk_step_ms_min: float
    chunk_step_ms_max: float
    whole_step_tokens: int
    whole_step_ms: float
    decode_ms: float  # median decode-only step in the window, chunked lane
    whole_decode_ms: float  # the same in the lane without chunking
    first_step_ms: float  # the first chunk step
    chunk_alone_ms: float  # the same chunk in a step of its own
    ride_along_ms: float
    # what the streaming users and the newcomer feel
    whole_worst_gap_ms: float
    chunked_worst_gap_ms: float
    gap_ratio: float
    gap_shorter: bool  # chunked: the longest wait is GAP_SHORTER times shorter or more
    gap_barely: bool  # chunked: it is shorter by less (the first chunk is nearly the prompt)
    room: int  # budget the decodes leave for a prompt in a step
    whole_mean_gap_ms: float  # mean wait between tokens until the prompt's first token
    chunked_mean_gap_ms: float
    whole_ttft_ms: float
    chunked_ttft_ms: float
    ttft_diff_ms: float
    ttft_change_pct: float
    ttft_gain_ms: float
    ttft_longer: bool  # several chunk steps, and the first token comes no sooner than in one
    ttft_shorter: bool  # several chunk steps, and the first token comes sooner
    # where the extra time to first token goes (costs.extra_parts): the parts add up to it
    extra_steps: int  # chunk steps beyond the one step of the lane without chunking
    extra_fixed_ms: float  # a step's fixed overhead (and TP all-reduce), paid per extra step
    extra_decode_ms: float  # the users' decode tokens through the linear layers in every step
    extra_gemm_ms: float  # the same tokens in smaller matrix products
    gemm_loss_pct: float  # ... as a share of their time in one step
    extra_attention_ms: float  # the users' KV and the earlier chunks' KV, read again
    extra_lm_head_ms: float  # the output layer (one row per request) again in every step
    user_kv_reread: int  # KV tokens of the users read again across the chunk steps
    chunk_kv_reread: int  # KV tokens of earlier chunks that later chunks read
    ridge: float  # tokens per step where the linear layers' arithmetic equals their weight read
    ridge_ratio: float  # the largest chunk step's tokens / ridge
    weight_read_ms: float  # one read of the weights (sim.cost.weight_read_ms)
    longer_past_ridge: bool  # ttft_longer, with chunk steps past the ridge
    longer_below_ridge: bool  # ttft_longer, with chunk steps below it
    preemptions: int
    # GPU use (share of the datasheet peaks) in the prompt's steps and the decode-only steps
    whole_compute_prompt_pct: float
    whole_bw_prompt_pct: float
    whole_compute_decode_pct: float
    whole_bw_decode_pct: float
    chunked_compute_prompt_pct: float
    chunked_bw_prompt_pct: float
    chunked_compute_decode_pct: float
    chunked_bw_decode_pct: float
    prompt_memory_bound: bool  # the one-step prompt uses more of the bandwidth than of compute
    peak_tflops: float
    peak_tbps: float
    # what the charts draw
    window_s: tuple[float, float]
    time_unit: str  # "ms", or "s" for long windows
    time_scale: float  # seconds -> the axis unit
    frame_s: np.ndarray  # the animation's frames: "now" at each
    start_frame: int  # the frame the animation opens at
    users_shown: tuple[int, ...]
    thinned: bool  # ticks closer than a pixel drawn as one
    merged: bool  # neighbouring steps of one kind drawn as one bar
    whole: LaneView
    chunked: LaneView
