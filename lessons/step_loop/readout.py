"""What the step-loop lesson shows, by name: the replay's numbers (`Readout`), what each frame
draws (`Replay`, arrays over steps) and the story of one step (`StepReadout`), all computed from
one timed run of sim in lesson.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection, UsedLimits

Names = tuple[int, ...]  # request indices, in vLLM's order
PerStep = tuple[Names, ...]  # one tuple of request indices per step


@dataclass(frozen=True, eq=False)
class Replay:
    """Per step (row k is step k + 1) and per request (column): what the frames draw."""

    names: tuple[str, ...]
    outputs: tuple[int, ...]  # the answer length of each request
    tokens: np.ndarray  # (steps, requests): tokens each request put into the batch
    kinds: np.ndarray  # (steps, requests): DECODE, PROMPT or RECOMPUTE (lessons.kit.timeline); -1
    used: np.ndarray  # (steps,): tokens in the batch
    seqs: np.ndarray  # (steps,): requests in the batch
    held: np.ndarray  # (steps, requests): KV blocks held right after schedule()
    streamed: np.ndarray  # (steps, requests): output tokens after the step
    blocks_used: np.ndarray  # (steps,): blocks in use during the pass
    blocks_after: np.ndarray  # (steps,): blocks in use at the end of the turn (its finishes freed)
    step_ms: np.ndarray  # (steps,): the cost model's price of each step
    clock_ms: np.ndarray  # (steps,): the clock at the end of each step (the timed run's)
    waiting: PerStep  # the waiting queue after schedule()
    running: PerStep  # the running list after schedule(), without the finishes seen this turn
    done: PerStep  # every request seen to finish by the end of the turn
    arrived: PerStep
    admitted: PerStep  # new or resumed, in running-list order
    preempted: PerStep
    continuing: PerStep  # already running, still reading (or recomputing) their prompt
    sampled: PerStep
    finished: PerStep  # seen to finish this turn (async: sampled its last token a step ago)


@dataclass(frozen=True, eq=False)
class Readout(UsedLimits, Selection):
    # the selection and the limits the run used
    asked_seqs: int  # max_num_seqs as set (the run uses at most the budget)
    vllm_budget: int  # vLLM's defaults for this GPU (what the lesson's own limits stand beside)
    vllm_seqs: int
    budget_below_default: bool  # the run's budget is below vLLM's default for this GPU
    limits_refused: bool  # budget below max_num_seqs: vLLM refuses, the run lowers max_num_seqs
    # the KV pool
    blocks: int
    block_size: int
    usable: int
    pool_tokens: int
    real_pool: int
    real_tokens: int  # the tokens its usable blocks hold
    max_model_len: int
    len_blocks: int  # the blocks one max_model_len request needs (vLLM's start-up check)
    pool_tiny: bool  # vLLM's real cache is larger than the replay's: the replay is the squeeze
    pool_real_smaller: bool  # ... smaller, but vLLM would start
    pool_real_refused: bool  # ... too small for one max_model_len request: vLLM would not start
    fits: bool
    weight_gb: float
    memory_gib: float
    # the scenario
    requests: int
    last_arrival: int
    long_name: str
    long_prompt: int
    # the run
    num_steps: int
    total_ms: float
    min_ms: float
    max_ms: float
    max_step: int
    preemptions: int
    preempted: bool
    not_preempted_free: bool  # nothing preempted, and the long document is not held back
    held_back: bool  # nothing preempted because the long document waits for blocks (HELD_STEPS)
    long_start: int  # the step the long document is first scheduled
    preempted_once: bool
    preempted_many: bool
    first_preempt_step: int
    victim: str
    # the first victim's recomputation: here (prefix caching off) and with prefix caching on
    victim_tokens: int  # its prompt and answer so far: what it computes again on return
    resume_step: int
    hit_blocks: int  # with prefix caching on: its full blocks still cached when it returns
    hit_tokens: int
    cached_left: int  # with prefix caching on: what it computes again
    cache_compare: bool  # one preemption, the same in both runs (the numbers above compare)
    # the scheduling mode, and the same settings under both modes (lesson.compare_modes)
    async_scheduling: bool  # this replay runs vLLM's AsyncScheduler (else the synchronous one)
    overhead_ms: float  # the CPU's part of a step, hidden behind the GPU under async
    modes_part: bool  # some step admits other requests in the two runs
    split_step: int  # the first such step
    split_names: str  # who gets in there with the synchronous scheduler
    split_async_step: int  # when the async run admits the first of them
    split_freed: bool  # a request finished in the step before (its blocks and seat come later)
    split_unexplained: bool  # the runs part, and nobody finished in the step before
    split_freer: str
    split_freer_step: int
    sync_preemptions: int
    async_preemptions: int
    same_preemptions_dry: bool  # both preempt, as often, the first time in the same step
    same_preemptions_none: bool  # neither preempts
    preemptions_differ: bool
    sync_steps: int
    async_steps: int
    sync_ms: float
    async_ms: float
    # the animation: which steps it draws (all of them, or an even sample)
    frame_steps: np.ndarray  # 1-based step numbers
    frames: int
    sampled: bool
    replay: Replay


@dataclass(frozen=True)
class StepReadout:
    """One step of the replay, told in the order of the loop. Names are joined for reading
    ("R1, R2 and R3"); each group of bools below has exactly one True (or none, see blocked)."""

    step: int
    num_steps: int
    # 1. the lists
    arrived_names: str
    already_running: str
    arrivals_and_running: bool
    arrivals_none_running: bool
    running_no_arrivals: bool
    nobody_no_arrivals: bool
    # 2. choose the work: the running requests
    decode_names: str
    chunk_names: str
    serve_decode_and_chunk: bool
    serve_decode: bool
    serve_chunk: bool
    serve_skipped_only: bool  # async: the only running requests have their last token in flight
    serve_none: bool
    skipped_too: bool  # async: beside those served, some have their last token in flight
    skipped_names: str
    prev_step: int
    next_step: int
    # 2. choose the work: the waiting queue
    preempted: bool
    preempted_names: str
    admitted_new: bool
    new_names: str
    new_sizes: str
    admitted_again: bool
    again_names: str
    again_sizes: str
    waiting_names: str
    max_num_seqs: int
    blocked_budget: bool  # the blocked_* bools are all False in a step with a preemption
    blocked_seqs: bool
    blocked_blocks: bool
    blocked_none: bool
    # 3-4. the batch and the pass (async: a step that schedules nothing only processes an output)
    output_only: bool
    tokens: int
    seqs: int
    budget: int
    step_ms: float
    clock_ms: float
    # 5. sample and stream
    sampled_names: str
    mid_names: str
    sampled_and_mid: bool
    sampled_only: bool
    mid_only: bool
    sampled_none: bool
    # 6. KV blocks
    blocks_used: int
    usable: int
    finished: bool  # some request is seen to finish in this turn
    freed_now: bool  # synchronous: it sampled its last token in this step
    freed_late: bool  # async: it sampled its last token in the step before
    finished_names: str
    blocks_after: int
    last_in_flight: bool  # async: some request sampled its last token, not seen until next turn
    ending_names: str
