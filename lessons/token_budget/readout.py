"""What the lesson "One token budget" shows, by name: every number its text quotes, every choice
of paragraph (bool fields) and what its charts draw, all filled by lesson.build() from sim."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection, UsedLimits
from lessons.kit.timeline import BudgetFill
from sim.run import Run


@dataclass(frozen=True, eq=False)
class Readout(UsedLimits, Selection):
    # the selection, and the limits the run used
    decodes: int
    running: int  # running requests the scenario holds (below max_num_seqs and the budget)
    prompt: int
    cached_pct: int
    cached: int  # tokens of the prompt an earlier conversation carried
    block_size: int
    max_model_len: int
    pool_blocks: int  # KV blocks a request can hold (the pool without vLLM's null block)
    # why it cannot run (one of them), or runs
    bad_limits: bool
    no_weights: bool
    too_long: bool
    no_room: bool
    runs: bool
    capped: bool
    cached_some: bool
    cached_none: bool
    # the replay (zeros when it does not run)
    arrival: int
    running_at_arrival: int
    left_after_decodes: int
    hit_tokens: int
    needed: int
    first_chunk_step: int
    first_chunk: int
    last_chunk: int
    num_chunks: int
    chunk_list: str  # "2,040, 2,040 and 16"
    first_token_step: int
    first_token_ordinal: int  # the step, counted from the arrival, that samples its first token
    first_decode_step: int
    decode_ordinal: int  # the step, counted from the arrival, of the prompt's first decode
    decode_ordinal_text: str  # "4th"
    ttft_ms: float
    decode_step_ms: float
    # the cast: the GPU the lesson opens on and why (its default budget), against the course's
    cast_gpu: str
    cast_budget: int
    course_gpu: str
    course_budget: int
    # speculative decoding: the budget rule with k draft tokens (arithmetic, not a replay)
    k: int
    spec_max_k: int
    spec_decode: int
    spec_chunk: int
    spec_steps: int
    plain_chunk: int
    plain_steps: int
    spec_k0: bool
    spec_same_steps: bool
    spec_more_steps: bool
    spec_no_shrink: bool  # k > 0 and the prompt's chunk keeps its size (it fits what is left)
    decoding_at_arrival: bool  # the replay runs and requests decode when the prompt arrives
    idle_at_arrival: bool  # ... and none does
    many_chunks: bool  # the prompt is read in several chunks
    one_chunk: bool  # ... in one step
    spec_decode_list: str
    spec_chunk_list: str
    # vLLM's defaults by GPU: three tiers (below 70 GiB or an A100, from 70 GiB, from 160 GiB)
    tier_small_budget: int
    tier_small_seqs: int
    tier_small_gpus: str
    tier_mid_budget: int
    tier_mid_seqs: int
    tier_mid_gpus: str
    tier_large_budget: int
    tier_large_seqs: int
    tier_large_gpus: str
    defaults_list: str  # "A10G 22 GiB: 2,048; ..." for the alt text
    # what the charts draw
    run: Run | None
    fill: BudgetFill | None
    long: int  # the long prompt's request index in the run
    spec_ks: np.ndarray
    spec_decodes: np.ndarray
    spec_chunks: np.ndarray
    spec_steps_all: np.ndarray
    defaults_keys: tuple[str, ...]
    defaults_memory_gib: tuple[float, ...]
    defaults_budgets: tuple[int, ...]
    defaults_seqs: tuple[int, ...]
