"""What the lesson "Too many requests" shows, by name: a load sweep with and without vLLM's
`max_num_queued_tokens`, the waiting queue over one run at the chosen load, and the signals an
autoscaler could watch. All computed in lesson.py from sim."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Scheduled


@dataclass(frozen=True, eq=False)
class Queue:
    """The waiting queue at the chosen load on one time grid, under three setups."""

    time_s: np.ndarray
    fcfs: np.ndarray  # FCFS, no limit
    sjf: np.ndarray  # SJF, no limit
    limited: np.ndarray  # FCFS with the rule's max_num_queued_tokens
    arrived: np.ndarray  # requests arrived by then (the same requests in all three)


@dataclass(frozen=True, eq=False)
class Signals:
    """What an autoscaler could watch over one run, per time bin (sim.overload.signals)."""

    time_s: np.ndarray
    busy_pct: np.ndarray
    compute_pct: np.ndarray
    kv_pct: np.ndarray
    waiting: np.ndarray


@dataclass(frozen=True)
class Served:
    """One way of meeting overload: what it turns away and how the rest fare."""

    away_pct: float  # refused or timed out
    p99_s: float  # TTFT p99 of the requests served
    goodput: float  # requests per second meeting the TTFT target


@dataclass(frozen=True)
class Gateway:
    """No protection, vLLM's token limit, and the gateway's two designs, at one load."""

    pct: int  # the load, % of capacity
    in_flight: int  # the gateway's bound on requests in flight (429 beyond)
    open: Served
    vllm: Served
    bound: Served
    timeout: Served


@dataclass(frozen=True, eq=False)
class Readout(Scheduled):
    # the setting
    serve_seqs_l4: int  # `vllm serve`'s default max_num_seqs on the L4 and the H100 (the run
    serve_seqs_h100: int  # caps it at lesson.MAX_NUM_SEQS)
    requests: int
    full_batch: int  # most requests running at once when all are queued (the probe burst)
    batches: float  # requests / full_batch
    mean_prompt: int
    prompt_median: int
    answer_median: int
    trim_pct: int  # the share of finishes left out at each end of the capacity run
    num_loads: int
    capacity_req_per_s: float
    load_pct: int
    rate_per_s: float
    overloaded: bool
    ttft_target_s: float
    # the sweep, per load in `loads`
    loads: np.ndarray
    ttft_p50_s: np.ndarray
    ttft_p99_s: np.ndarray
    queue_p99_s: np.ndarray
    goodput: np.ndarray  # requests per second meeting the TTFT target
    peak_waiting: np.ndarray
    lim_ttft_p99_s: np.ndarray
    lim_goodput: np.ndarray
    lim_refused_pct: np.ndarray
    sjf_ttft_p50_s: np.ndarray  # SJF without a limit
    sjf_ttft_p99_s: np.ndarray
    peak_ttft_p99_s: np.ndarray  # FCFS, the limit sized by the peak prefill speed
    peak_goodput: np.ndarray
    healthy_ttft_p99_s: float  # FCFS p99 at HEALTHY_PCT, 100% and the highest load
    cap_ttft_p99_s: float
    top_ttft_p99_s: float
    top_pct: int
    # the sizing rule
    drain_tokens_per_s: float  # capacity x mean prompt: what the engine drains at saturation
    peak_tokens_per_s: float  # a step that is all prefill
    limit_tokens: int  # target x drain rate
    peak_limit_tokens: int  # target x peak prefill speed
    # at the chosen load
    sel_ttft_p50_s: float
    sel_ttft_p99_s: float
    sel_sjf_ttft_p50_s: float
    sel_sjf_ttft_p99_s: float
    sel_lim_ttft_p99_s: float
    sel_peak_lim_ttft_p99_s: float
    sel_refused_pct: float
    sel_peak_refused_pct: float
    sel_goodput: float
    sel_lim_goodput: float
    sel_peak_waiting: int
    sel_sjf_peak_waiting: int
    sel_lim_peak_waiting: int
    limit_holds: bool  # the limited p99 is within twice the target
    limit_holds_above: bool  # ... at every load above capacity
    limit_binds: bool  # the limit refused something
    limit_sheds: bool  # ... at or above capacity: it sheds the surplus
    limit_trims: bool  # ... below capacity: only the bunches of a random stream
    limit_gains: bool  # more goodput with the limit
    peak_overshoots: bool  # the peak-sized limit lets p99 run past twice the target
    # the two limits against twice the target, at the chosen load (exactly one of the four is True)
    peak_alone_overshoots: bool
    peak_target_times: float  # the peak-sized limit's p99 over the target
    both_overshoot: bool
    neither_overshoots: bool
    sized_no_better: bool  # the sized limit past twice the target and not below the other
    # signals: at the chosen load and at the healthy load HEALTHY_PCT
    healthy_pct: int
    sel_busy_pct: float
    sel_compute_pct: float
    sel_kv_pct: float
    healthy_busy_pct: float
    healthy_compute_pct: float
    healthy_kv_pct: float
    healthy_peak_waiting: int
    queue: Queue
    signals: Signals
    # at the gateway (a teaching model, not vLLM): four designs at gateway.pct % of capacity
    gateway: Gateway
    gw_timeout_wins: bool  # the queue timeout gives the most goodput of the four
