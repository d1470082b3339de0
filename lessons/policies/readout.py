"""What the lesson "Who goes first" shows, by name: five policies' runs of one workload, side by
side, and the chosen policy's waiting queue over the run. All computed in lesson.py from sim."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Scheduled


@dataclass(frozen=True, eq=False)
class Queue:
    """The chosen policy's waiting queue at sampled steps: its first `shown` requests."""

    steps: np.ndarray  # 1-based step numbers of the frames
    time_s: np.ndarray  # their start times
    running: np.ndarray  # running requests after each frame's schedule
    waiting: np.ndarray  # waiting requests after it
    heads: tuple[np.ndarray, ...]  # per frame: request indices at the queue's head, in order
    names: tuple[str, ...]  # per request
    batch: np.ndarray  # per request: True for the batch class
    tenant: np.ndarray  # per request
    job_tokens: np.ndarray  # per request: prompt tokens + max_tokens
    arrival_s: np.ndarray  # per request


@dataclass(frozen=True, eq=False)
class Readout(Scheduled):
    # the run's setting
    prefix_caching: bool
    async_scheduling: bool  # vLLM's default scheduler (the runs' config)
    # the workload
    requests: int
    interactive: int
    batch: int
    tenants: int
    heavy: int  # requests of the heavy tenant (tenant A)
    heavy_share_pct: int  # the share the draw gave tenant A
    prefixes: int
    prefix_tokens: int
    load_pct: int
    overloaded: bool  # above 100% of capacity and a queue of QUEUE_BUILDS or more forms
    overload_short: bool  # above capacity, but the queue never reaches QUEUE_BUILDS
    below_capacity: bool  # at or below 100% and a queue forms
    never_queues: bool  # no request waits under any policy: the engine holds them all at once
    one_waits: bool  # at most one waits at a time under every policy: no order to choose
    short_of_full: bool  # above 100%, yet the stream ends before the engine is full
    capacity_running: int  # the most requests running at once in the capacity's burst
    arrival_span_s: float  # first arrival to last
    peak_running: int  # the most requests running at once (the first policy's run)
    capacity_req_per_s: float
    rate_per_s: float
    # the chosen policy
    policy: str  # as shown
    policy_key: str  # sim's name
    teaching: bool  # not one of vLLM's policies
    # per policy, in POLICIES order
    names: tuple[str, ...]
    int_ttft_p99_s: np.ndarray
    batch_ttft_p99_s: np.ndarray
    int_ttft_p50_s: np.ndarray
    max_wait_s: np.ndarray
    max_wait_job: np.ndarray  # job tokens of the request that waited longest
    max_wait_request: tuple[str, ...]
    max_wait_batch: np.ndarray  # bool: that request is a batch one
    int_preempted: np.ndarray  # preemptions of interactive requests
    batch_preempted: np.ndarray
    hit_pct: np.ndarray  # prefix-cache hits over prompt tokens
    heavy_ttft_p50_s: np.ndarray
    light_ttft_p50_s: np.ndarray  # the other tenants' requests together
    peak_waiting: np.ndarray
    drain_s: np.ndarray  # last finish minus last arrival
    peak_lo: int
    peak_hi: int
    drain_lo: float
    drain_hi: float
    peak_span: str  # "4–9" across the five, or "2" when they agree
    drain_span: str  # the same, in seconds
    # the text's comparisons (one field per number quoted)
    fcfs_int_p99_s: float
    prio_int_p99_s: float
    prio_batch_p99_s: float
    prio_helps: bool
    prio_int_preempted: int
    prio_batch_preempted: int
    fcfs_int_preempted: int
    fcfs_batch_preempted: int
    any_preempted: bool
    sjf_max_wait_s: float
    fcfs_max_wait_s: float
    sjf_max_wait_job: int
    sjf_max_wait_request: str
    median_job: int
    sjf_starves: bool
    sjf_int_p99_s: float
    sjf_batch_p99_s: float
    sjf_best_int: bool  # SJF's interactive TTFT p99 under 0.9x every other's, paid by batch
    fair_heavy_p50_s: float
    fair_light_p50_s: float
    fcfs_heavy_p50_s: float
    fcfs_light_p50_s: float
    fcfs_tenants_alike: bool  # under FCFS A's median is within a quarter (or 0.05 s) of the rest's
    fair_little: bool  # tenant A is the heaviest, and FAIR-SHARE barely holds it back
    fair_not_heaviest: bool  # tenant A is not the heaviest tenant in this draw
    fair_holds: bool
    prefix_hit_pct: float
    fcfs_hit_pct: float
    prefix_gain: bool
    prefix_off: bool  # prefix caching is off, so nothing hits under any order
    prefix_same: bool  # every policy finds the same share of prompt tokens in the cache
    prefix_little: bool  # on, but PREFIX-AWARE does not lead: few waiting to choose from
    prefix_no_choice: bool  # on, and never two waiting: there is nothing to reorder
    best_hit_pct: float
    best_hit_policy: str
    prefix_peak_waiting: int  # the most requests waiting at once under PREFIX-AWARE
    prefix_int_p50_s: float
    # FCFS with vLLM 0.34's cache-aware admission (lesson.Runs.cache_aware): not in POLICIES
    ca_window: int  # cache_aware_admission_window
    ca_threshold_pct: int  # cache_aware_admission_threshold, as a KV usage percentage
    ca_hit_pct: float
    ca_int_p50_s: float
    ca_int_p99_s: float
    ca_jumped: int  # requests scheduled before some earlier arrival (0 under FCFS)
    ca_passed_max: int  # the most later arrivals scheduled before any one request
    ca_acts: bool  # prefix caching on and the window changes some request's first step
    ca_idle: bool  # prefix caching on, and the window changes no request's first step
    fcfs_int_p50_s: float
    # the chosen policy's figures
    sel_int_p99_s: float
    queue_empty: bool  # nobody ever waits in its run: the queue animation is not drawn
    sel_batch_p99_s: float
    sel_max_wait_s: float
    sel_max_wait_request: str
    sel_hit_pct: float
    queue: Queue
