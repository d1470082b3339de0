"""Overload: the capacity of a deployment, latency against offered load, and sizing a queue limit.

- `capacity_req_per_s`: the requests per second the engine finishes when it never waits for
  work: the same requests all queued at 0 s (a burst), finished requests over the makespan.
  Offered load above it makes the queue grow without bound, whatever the policy. With `trim`
  the first and last `trim` of the finishes are left out (the fill and the drain, when fewer
  requests run than the batch holds), which measures the steady rate of a full engine.
- `signals`: what an autoscaler could watch over one run, in time bins: the share of time the
  GPU runs a step (what nvidia-smi calls utilisation), the share its arithmetic units are busy
  (the roofline's compute time over wall time), KV cache usage, and the waiting queue.
- `full_batch`: how many of those requests a full engine runs at once (so that a run can be
  sized to hold several full batches).
- `load_sweep`: one timed run per arrival rate of one workload recipe (the same requests,
  lengths and seed, with Poisson arrivals at each rate); a row per rate with TTFT, queue time,
  goodput, refusals and the peak and final waiting queue.
  `sweep_row` is one such row from a run made elsewhere (a lesson that keeps its runs).
- `queued_tokens_limit`: the rule of thumb for vLLM's `max_num_queued_tokens`: a prompt let in
  behind L queued prompt tokens waits about L / prefill throughput, so L = TTFT target x prefill
  throughput keeps that wait near the target. Which throughput matters: the rate at which the
  engine drains queued prompts under this load (`sustained_prefill_tokens_per_s`: capacity x
  mean prompt), not the speed of a step that is all prefill (`prefill_tokens_per_s`), which a
  KV- or decode-bound engine never sustains (limits sized by it let TTFT run far past target).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.generators import WorkloadSpec
from sim.groups import finite_percentile, queue_time_s
from sim.metrics import summarize
from sim.run import Run
from sim.timed import run_timed
from sim.workload import Workload


def _unprotected(config: SchedulerConfig) -> SchedulerConfig:
    """The config without admission limits or a gateway timeout: every request runs."""
    return dataclasses.replace(
        config, max_num_queued_reqs=None, max_num_queued_tokens=None, gateway_timeout_s=None
    )


def capacity_req_per_s(
    config: SchedulerConfig, workload: Workload, dep: Any, *, trim: float = 0.0
) -> float:
    """Finished requests per second with every request of `workload` queued at 0 s: all of
    them over the makespan, or with `trim` those between the trim and 1 - trim quantiles of
    the finish times over the time between those two finishes."""
    if not 0.0 <= trim < 0.5:
        raise SimInputError(f"trim must be in [0, 0.5), got {trim}")
    return capacity_of(burst_run(config, workload, dep), trim)


def burst_run(config: SchedulerConfig, workload: Workload, dep: Any) -> Run:
    """The run of `workload` with every request queued at 0 s and no admission limit."""
    burst = dataclasses.replace(workload, arrival_s=np.zeros(workload.num_requests))
    return run_timed(_unprotected(config), burst, dep)


def capacity_of(run: Run, trim: float = 0.0) -> float:
    """`capacity_req_per_s` of a `burst_run`."""
    end = run.step_start_s[-1] + run.step_ms[-1] / 1e3
    n = run.workload.num_requests
    lo, hi = int(trim * (n - 1)), int(round((1 - trim) * (n - 1)))
    if trim == 0.0 or hi <= lo:
        return float(n / end)
    finish = np.sort(run.finish_s)
    span = finish[hi] - finish[lo]
    return float((hi - lo) / span) if span > 0 else float(n / end)


def full_batch(config: SchedulerConfig, workload: Workload, dep: Any) -> int:
    """The most requests of `workload` that run at once when all are queued at 0 s: how many a
    full engine holds (the budget, max_num_seqs or the KV cache, whichever binds first)."""
    return int(np.max(burst_run(config, workload, dep).num_running))


def prefill_tokens_per_s(config: SchedulerConfig, dep: Any) -> float:
    """Prompt tokens per second of steps that are all prefill: one new prompt filling the budget."""
    from sim.cost import step_ms

    q = config.max_num_batched_tokens
    one = np.array([1])
    ms = step_ms(dep, np.array([q]), one, np.array([0]), np.array([q * (q + 1) // 2]))
    return q / float(ms[0]) * 1e3


def sustained_prefill_tokens_per_s(config: SchedulerConfig, workload: Workload, dep: Any) -> float:
    """Prompt tokens per second the engine drains at saturation: capacity x mean prompt."""
    return capacity_req_per_s(config, workload, dep) * float(workload.prompt_tokens.mean())


def queued_tokens_limit(ttft_target_ms: float, prefill_tokens_per_s: float) -> int:
    """`max_num_queued_tokens` about TTFT target x prefill throughput (tokens)."""
    if not (ttft_target_ms > 0 and prefill_tokens_per_s > 0):
        raise SimInputError("the TTFT target and the prefill throughput must be positive")
    return int(round(prefill_tokens_per_s * ttft_target_ms / 1e3))  # as the text rounds the rate


def signals(run: Run, dep: Any, bins: int = 60) -> pd.DataFrame:
    """Per time bin of a timed run (equal bins from 0 s to its end): `time_s` (the bin's
    start), `busy_pct` (time a step runs), `compute_pct` (roofline compute time of its steps),
    both over the bin's length, `kv_pct` (KV usage, mean over the bin's steps weighted by their
    time), and `waiting` (the longest queue after any of the bin's steps, so that the line
    reaches the run's peak; an idle bin carries the queue after the last step before it)."""
    from sim.cost import step_costs
    from sim.metrics import kv_usage

    if not run.timed or run.num_steps == 0:
        raise SimInputError("signals need a timed run with at least one step")
    start = np.asarray(run.step_start_s, dtype=np.float64)
    ms = np.asarray(run.step_ms, dtype=np.float64)
    end = float(start[-1] + ms[-1] / 1e3)
    width = end / bins
    costs = step_costs(
        dep,
        query_tokens=run.num_scheduled_tokens,
        num_seqs=run.num_scheduled_seqs,
        kv_read_tokens=run.kv_read_tokens,
        attn_pairs=run.attn_pairs,
    )
    compute = np.minimum(costs.compute_ms, ms)
    k = np.minimum((start / width).astype(np.int64), bins - 1)
    busy = np.bincount(k, ms, bins)
    kv = np.bincount(k, ms * kv_usage(run.kv_blocks_used, run.kv_blocks_usable), bins)
    waiting = _peaks(k, np.asarray(run.num_waiting), bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        kv_pct = np.where(busy > 0, kv / busy * 100, np.nan)
    return pd.DataFrame(
        {
            "time_s": np.arange(bins) * width,
            "busy_pct": np.minimum(busy / (width * 1e3) * 100, 100.0),
            "compute_pct": np.minimum(np.bincount(k, compute, bins) / (width * 1e3) * 100, 100.0),
            "kv_pct": kv_pct,
            "waiting": waiting,
        }
    )


def _peaks(k: np.ndarray, waiting: np.ndarray, n: int) -> np.ndarray:
    """Per interval 0..n-1: the most requests waiting after a step in it (`k`: each step's
    interval); an interval without a step carries the queue after the last step
    before it, and 0 before the first."""
    inside = k < n
    steps = np.flatnonzero(inside)
    peak = np.full(n, -1, dtype=np.int64)
    np.maximum.at(peak, k[inside], waiting[inside])
    last = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last, k[inside], steps)
    last = np.maximum.accumulate(last)
    carried = np.where(last >= 0, waiting[np.maximum(last, 0)], 0)
    return np.where(peak >= 0, peak, carried)


def waiting_peaks(run: Run, times: np.ndarray) -> np.ndarray:
    """At each of the ascending `times`: the longest waiting queue after a step that began since
    the time before it (up to and including this one), or the queue carried from the last step
    before when none did. A queue sampled this way keeps the run's peak, however coarse."""
    start = np.asarray(run.step_start_s, dtype=np.float64)
    k = np.searchsorted(np.asarray(times, dtype=np.float64), start, side="left")
    return _peaks(k, np.asarray(run.num_waiting), len(times))


def waiting_over_time(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(step start times in s, waiting requests after that step's schedule): the queue."""
    return np.asarray(run.step_start_s, dtype=np.float64), np.asarray(run.num_waiting)


def poisson_at(spec: WorkloadSpec, rate: float, *, max_model_len: int | None = None) -> Workload:
    """The recipe's requests (same lengths, classes, tenants and seed) arriving at Poisson
    `rate` per second: the same random gaps, scaled, so rates compare like for like."""
    recipe = dataclasses.replace(spec, arrival="poisson", rate_per_s=float(rate), clients=None)
    return recipe.build(max_model_len=max_model_len)


def load_sweep(
    config: SchedulerConfig,
    dep: Any,
    spec: WorkloadSpec,
    rates: Sequence[float],
    *,
    ttft_slo_ms: float | None = None,
    itl_slo_ms: float | None = None,
) -> pd.DataFrame:
    """One row per arrival rate: the recipe `spec` (its lengths and seed) at Poisson `rate`."""
    if not rates:
        raise SimInputError("a load sweep needs at least one rate")
    rows = []
    for rate in rates:
        wl = poisson_at(spec, rate, max_model_len=config.max_model_len)
        run = run_timed(config, wl, dep)
        rows.append(sweep_row(run, rate, ttft_slo_ms=ttft_slo_ms, itl_slo_ms=itl_slo_ms))
    return pd.DataFrame(rows)


def sweep_row(
    run: Run, rate: float, *, ttft_slo_ms: float | None = None, itl_slo_ms: float | None = None
) -> dict[str, Any]:
    """One load sweep row from the timed run at `rate` requests per second."""
    out = summarize(run, ttft_slo_ms=ttft_slo_ms, itl_slo_ms=itl_slo_ms)
    wait = queue_time_s(run)
    return {
        "rate_per_s": float(rate),
        "ttft_ms_p50": out["ttft_ms"]["p50"],
        "ttft_ms_p99": out["ttft_ms"]["p99"],
        "queue_s_p50": finite_percentile(wait, 50),
        "queue_s_p99": finite_percentile(wait, 99),
        "goodput_req_per_s": out.get("goodput_req_per_s"),
        "refused": out["rejected_requests"]["total"],
        "peak_waiting": int(np.max(run.num_waiting)) if run.num_steps else 0,
        "makespan_s": out["makespan_s"],
    }
