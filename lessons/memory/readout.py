"""What the memory lesson shows, by name: the run's numbers (`Readout`) and the readouts of one
step (`StepReadout`), all computed from simulated runs in lesson.py, trace.py and runs.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lessons.kit.selection import Selection, UsedLimits


@dataclass(frozen=True, eq=False)
class Readout(UsedLimits, Selection):
    # the selection and the limits the run used
    asked_seqs: int
    limits_refused: bool
    # the pool
    utilization: int  # gpu_memory_utilization, %
    catalog_blocks: int  # what vLLM would give the cache on this GPU (null block included)
    weights_fit: bool
    pool_raised: bool  # the pool asked for cannot hold the longest request: the run uses more
    catalog_usable: int  # ... without the null block
    len_refused: bool  # vLLM would not start: one max_model_len request needs more blocks
    len_blocks: int  # the blocks one request of max_model_len needs
    len_pool_usable: int  # the usable blocks of the pool vLLM is asked for (its start-up check)
    len_pool_tokens: int  # ... and the tokens they hold
    no_fit_memory: bool  # the weights do not fit and the pool comes from memory: none at all
    util_helps: bool  # ... and the highest gpu_memory_utilization would leave room
    no_fit_blocks: bool  # the weights do not fit, and the pool is set by hand all the same
    pool_vllm: bool  # the run's pool is the one vLLM would give (from memory, weights fit)
    pool_by_hand: bool  # the run's pool is the learner's block count
    pool_floor: bool  # the run's pool is the fewest blocks the workload can run in
    wanted_blocks: int
    num_gpu_blocks: int  # the pool the run uses, null block included
    usable: int
    block_size: int
    pool_tokens: int
    # paging against a static reservation (lesson.paging)
    static_seqs: int  # sequences that fit if each reserves max_model_len
    paged_seqs: int  # sequences of the average length that fit in blocks
    mean_seq_tokens: int
    # the workload
    requests: int
    batch: int
    interactive: int
    refused: int
    any_refused: bool
    policy: str
    rate: float  # interactive arrivals per second
    rate_changes_nothing: bool  # every interactive request queued behind another (FCFS): a
    # faster stream leaves the decisions as they are (lesson.arrivals_queue_behind)
    rate_same_below_top: bool  # ... at a rate below the slider's top
    rate_same_at_top: bool  # ... at its top: no faster rate to try
    prefix_caching: bool
    async_scheduling: bool
    watermark: float
    max_model_len: int
    longest_seq_tokens: int  # the longest request, prompt and answer together
    len_changes_nothing: (
        bool  # every request is shorter than max_model_len: the run is the same at any such limit
    )
    # the run
    num_steps: int
    total_ms: float
    peak_usage_pct: float
    peak_step: int
    peak_slack_slots: int
    peak_tokens: int
    peak_requests: int
    frame_count: int
    sampled: bool
    # its preemptions (trace.Victims.summary)
    preemptions: int
    preempted: bool
    not_preempted: bool
    first_preempt_step: int
    first_victim: str
    first_victim_batch: bool
    lost_tokens: int
    hit_tokens_back: int
    recomputed_tokens: int
    recomputed_share_pct: float
    lost_steps_max: int
    lost_s_max: float
    victims_delayed_first_token: int
    # the grid
    grid_columns: int
    grid_blocks: int
    grid_cut: bool
    frames: Any  # trace.Frames
    victims: Any  # trace.Victims


@dataclass(frozen=True)
class StepReadout:
    """One step of the run: vLLM's readouts and what happened to the pool."""

    step: int
    num_steps: int
    running: int
    waiting: int
    usage_pct: float
    preemptions: int  # vllm:num_preemptions so far
    hit_rate_pct: float
    looked_up: bool  # a new request has looked up the prefix cache by now
    preempted_hit_pct: float  # of the preempted requests' lookups: tokens found again
    victims_looked_up: bool
    preempted_now: bool
    preempted_names: str
    freed_blocks: int
    lost_now: int
    queue_head: str
    resumed_now: bool
    resumed_names: str
    recompute_now: int
    hits_now: int
    finished_now: bool
    finished_names: str
    clock_ms: float
    tables: tuple  # (name, computed tokens, blocks, block ids) per request holding blocks (or
    # () when asked without them: lesson.at_step(tables=False))


@dataclass(frozen=True, eq=False)
class Comparison:
    """The same workload run again with one thing changed (runs.compare), for the sections on
    the victim, the price of a preemption, the fixes and async scheduling."""

    fcfs_interactive_preempted: int
    fcfs_batch_preempted: int
    priority_interactive_preempted: int
    priority_batch_preempted: int
    fcfs_interactive_ttft_p99_s: float
    priority_interactive_ttft_p99_s: float
    fcfs_batch_e2e_p99_s: float
    priority_batch_e2e_p99_s: float
    priority_spares_interactive: bool
    victims_none: bool  # neither policy preempts anything: the victim rule never comes into play
    victims_no_spare: bool  # someone is preempted, and PRIORITY does not spare interactive ones
    recompute_on: int
    recompute_off: int
    cache_saves: int
    cache_saves_some: bool
    cache_same_some: bool  # the run with caching recomputes, and no less than the one without
    cache_none_twice: bool  # neither run computes a token twice
    sync_preemptions: int
    async_preemptions: int
    sync_first_preempt: int
    async_first_preempt: int
    modes_differ: bool  # the two modes preempt differently, from different first steps
    modes_moved_same_count: bool  # ... as often, but from different first steps
    modes_only_async: bool  # only the async run preempts
    modes_only_sync: bool  # only the synchronous run preempts
    modes_differ_count: bool  # ... from the same first step, a different number of times
    modes_same_some: bool  # the two modes preempt alike, at least once
    modes_none: bool  # neither mode preempts
    class_rows: tuple
    fixes: tuple
    fixes_none: bool  # no what-if preempts: the fixes chart draws the TTFT p99 alone
    fixes_memory_left_out: bool
    pool_more_preempts: bool  # a larger pool preempts more often, running more requests at once
    as_set_preemptions: int
    as_set_running: int  # the most requests running at once, as set
    pool_more_max: int  # the most preemptions of such a larger pool (as_set's if none)
    pool_more_running: int  # ... and the most requests it runs at once


@dataclass(frozen=True)
class Refusal:
    """When every request's prompt is max_model_len tokens or more: nothing reaches the
    scheduler, so there is no run to draw."""

    requests: int
    shortest_prompt: int
    max_model_len: int
