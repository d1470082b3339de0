"""What a run derives from its workload alone: arrival order, arrival keys and the policy.

A sweep shares one `Prepared` among its runs (sim/sweep.py). Timed runs order arrivals by
seconds, step replays by step number, a closed loop by list order (its later arrival times are
made by the run).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import SimInputError
from sim.policy import Policy, make_policy
from sim.workload import Workload


@dataclass(frozen=True, eq=False)
class Prepared:
    """What a run derives from its workload alone (shared by the runs of a sweep)."""

    arrival_order: np.ndarray  # request indices in arrival order (list order within a tie)
    arrival_sorted: np.ndarray  # their arrival keys (seconds or steps)
    policy: Policy


def prepare(workload: Workload, policy: str, timed: bool) -> Prepared:
    """Arrival order and the policy's keys for `workload` (see Prepared)."""
    n = workload.num_requests
    if workload.concurrency is not None:
        if not timed:
            raise SimInputError(
                "a concurrency (closed-loop) workload needs a timed run: its requests arrive "
                "when earlier ones finish, in seconds, which a step replay does not have"
            )
        # the first `concurrency` at 0 s; the others get their times during the run
        arrival_key = np.full(n, np.inf)
        arrival_key[: workload.concurrency] = 0.0
        arrival_time = np.arange(n) * 1e-6  # they arrive in list order
    elif timed:
        if workload.arrival_s is None:
            raise SimInputError("a timed run needs arrival_s (seconds) in the workload")
        arrival_key = np.asarray(workload.arrival_s, dtype=np.float64)
        # The policies read arrival_time only to order requests. vLLM stamps each request with
        # its own time.time() in the order it receives them, so requests that arrive "at the same
        # time" (a burst, a trace's equal times) still have distinct, list-ordered times: their
        # rank in (arrival_s, list order). Exact ties would make vLLM's PRIORITY victim rule pick
        # among equals by running order, which can preempt two chunked prefills in turn forever.
        arrival_time = np.empty(n, dtype=np.float64)
        arrival_time[np.argsort(arrival_key, kind="stable")] = np.arange(n)
    else:
        if workload.arrival_step is None:
            raise SimInputError("a step replay needs arrival_step in the workload")
        arrival_key = np.asarray(workload.arrival_step, dtype=np.int64)
        # The recordings' arrival_time: arrival_step + i * 1e-6 (SCHEDULER f6).
        arrival_time = arrival_key.astype(np.float64) + np.arange(n) * 1e-6
    order = np.argsort(arrival_key, kind="stable")
    pol = make_policy(
        policy,
        priority=workload.priority,
        arrival_time=arrival_time,
        request_ids=workload.request_ids,
        job_tokens=workload.prompt_tokens + workload.output_tokens,
        tenant=workload.tenant,
    )
    return Prepared(order, arrival_key[order], pol)
