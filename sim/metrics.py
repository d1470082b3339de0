"""Metrics of a run: what a learner reads off a benchmark (TTFT, ITL, E2E, throughput, goodput).

The core is pure functions on arrays (`token_times_s`, `request_latencies`, `inter_token_gaps`,
`percentiles`, `good_requests`, ...), testable on hand-made arrays. Thin wrappers take a `Run`
(sim/run.py) and give per-request arrays (`request_metrics`), a per-request DataFrame
(`request_table`), a per-step DataFrame for charts (`time_series`) and a JSON-ready summary
(`summarize`).

Definitions (vLLM's benchmark names):
- A token's time is the end of the step that sampled it: step_start_s + step_ms / 1000.
- A request's arrival is the run's `arrival_s` (the workload's, or for a closed loop the times
  the run sent the requests at, sim/closed_loop.py).
- TTFT = first token time - arrival_s; ITL = every gap between consecutive tokens of one request;
  TPOT = a request's mean ITL (its (E2E - TTFT) / (output tokens - 1)); E2E = last token time -
  arrival_s. A request with one output token has no ITL and no TPOT.
- Makespan = first arrival to last token. output_tokens_per_s = sampled tokens / makespan;
  total_tokens_per_s = (prompt_tokens of finished requests + sampled tokens) / makespan, as
  vLLM's benchmark counts it; scheduled_tokens_per_s = all tokens the steps computed
  (num_scheduled_tokens: includes recomputation after preemption, excludes prefix-cache hits).
- Goodput (DistServe, and vLLM's `--goodput`): finished requests per second of makespan whose
  TTFT <= ttft_slo_ms and whose TPOT (mean ITL) <= itl_slo_ms; an SLO left out is not checked,
  a request without ITL meets the ITL SLO.
- KV usage = kv_blocks_used / kv_blocks_usable per step; its peak and its mean over steps.

Step replays (run.timed is False, step_ms is NaN) have no seconds: their latencies are counted
in steps instead (a token's "time" is its step number and a request arriving in step k arrives
at k - 1, so a request prefilled and sampled in its arrival step has ttft_steps = 1). Summary
keys in seconds or ms are then None, keys in steps are set (and the reverse for timed runs);
asking for goodput of a step replay raises `SimInputError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sim.admission import rejected_counts
from sim.errors import SimInputError
from sim.run import Run

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}


# ---------------------------------------------------------------------------------------------
# Pure functions on arrays
# ---------------------------------------------------------------------------------------------


def token_times_s(
    token_step: np.ndarray, step_start_s: np.ndarray, step_ms: np.ndarray
) -> np.ndarray:
    """Time of each sampled token: the end of its (1-based) step, in seconds."""
    steps = np.asarray(token_step, dtype=np.int64)
    start = np.asarray(step_start_s, dtype=np.float64)
    if start.shape != np.shape(step_ms):
        raise SimInputError("step_start_s and step_ms must have the same length")
    if steps.size and (steps.min() < 1 or steps.max() > start.size):
        raise SimInputError(f"token steps must lie in 1..{start.size}")
    # one gather from the steps' end times (index 0 unused: steps are 1-based)
    ends = np.empty(start.size + 1)
    ends[0] = np.nan
    np.add(start, np.asarray(step_ms, dtype=np.float64) / 1000.0, out=ends[1:])
    return ends[steps]


def _by_request(token_req: np.ndarray, token_time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tokens sorted by (request, time), stably: the request and time arrays in that order."""
    req = np.asarray(token_req, dtype=np.int64).reshape(-1)
    time = np.asarray(token_time, dtype=np.float64).reshape(-1)
    if req.shape != time.shape:
        raise SimInputError("token_req and token times must have the same length")
    if req.size < 2:
        return req, time
    rises = time[1:] >= time[:-1]  # False on NaN: the general sort below
    if not rises.all():
        order = np.lexsort((time, req))
        return req[order], time[order]
    if (req[1:] >= req[:-1]).all():
        return req, time  # already in (request, time) order
    # Time order already: a stable sort by request alone is the same permutation. A radix sort
    # when the indices fit 16 bits; else one sort of (request, position) packed in an int64
    # (unique keys, so any sort is stable, and NumPy's SIMD sort is several times faster than
    # a stable argsort of the requests).
    if req.min() >= 0 and req.max() < 1 << 16:
        order = np.argsort(req.astype(np.uint16), kind="stable")
        return req[order], time[order]
    bits = int(req.size).bit_length()
    if req.min() < 0 or int(req.max()) >= 1 << (62 - bits):
        order = np.argsort(req, kind="stable")
        return req[order], time[order]
    keys = req << bits
    keys |= np.arange(req.size, dtype=np.int64)
    keys.sort()
    return keys >> bits, time[keys & ((1 << bits) - 1)]


def _by_request_of_run(run: Run, token_time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_by_request` of a run's tokens without a sort, in time O(tokens).

    A request samples at most one token per step, and once it has its first token it usually
    samples one in every step until it ends. For such a request, token i (in time order) is its
    token of step first + i, so its place among the sorted tokens is known at once: its
    request's first slot plus (step - first). Requests with a gap (a step without a token, as
    after a preemption) are sorted apart, and a placement that is not a permutation falls back
    to `_by_request`. The result is `_by_request`'s, element for element (a 100,000-request
    trace has 28 million tokens, which a sort took 4 s to order). Indices are int32 where they
    fit: on this machine a new array of 28 million int64 costs 0.4 s in page faults alone."""
    req = np.asarray(run.token_req).reshape(-1)
    time = np.asarray(token_time, dtype=np.float64).reshape(-1)
    step = np.asarray(run.token_step).reshape(-1)
    first = np.asarray(run.first_token_step)
    n = req.size
    if (
        n < 2
        or n >= 1 << 31
        or step.shape != req.shape
        or req.min() < 0
        or int(req.max()) >= first.size
        or not (time[1:] >= time[:-1]).all()
    ):
        return _by_request(req, time)
    count = np.bincount(req, minlength=first.size).astype(np.int32)
    start = (np.cumsum(count, dtype=np.int64) - count).astype(np.int32)
    rel = first.astype(np.int32)[req]
    np.subtract(step, rel, out=rel, casting="unsafe")  # step - first, in place
    pos = count[req]
    gap = np.zeros(count.size, dtype=bool)
    gap[req[(rel < 0) | (rel >= pos)]] = True
    pos = start[req]
    pos += rel  # the token's slot among the sorted tokens
    values = time
    if gap.any():
        apart = gap[req]
        keep = ~apart
        sub_req, sub_time = _by_request(req[apart], time[apart])  # few tokens: sort them
        lens = count[gap]
        base = np.repeat(start[gap] - (np.cumsum(lens) - lens), lens)
        pos = np.concatenate((pos[keep], base + np.arange(sub_req.size, dtype=np.int32)))
        values = np.concatenate((time[keep], sub_time))
    seen = np.zeros(n, dtype=bool)
    seen[pos] = True
    if not seen.all():  # not a permutation: two tokens of one request in a step, say
        return _by_request(req, time)
    out_time = np.empty(n)
    out_time[pos] = values
    out_req = np.repeat(np.arange(count.size, dtype=np.int64), count)
    return out_req, out_time


def inter_token_gaps(
    token_req: np.ndarray, token_time: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every gap between consecutive tokens of the same request: (request index, gap).

    Gaps are in the unit of `token_time`, grouped by request and in time order within one.
    """
    req, time = _by_request(token_req, token_time)
    same = req[1:] == req[:-1]
    return req[1:][same], np.diff(time)[same]


def request_latencies(
    token_req: np.ndarray, token_time: np.ndarray, arrival: np.ndarray
) -> dict[str, np.ndarray]:
    """Per request (index = request): first and last token time, tokens, TTFT, E2E, TPOT, max ITL.

    All in the unit of `token_time` and `arrival`; NaN where a request has no token (TTFT,
    E2E) or fewer than two (TPOT, max ITL).
    """
    req, time = _by_request(token_req, token_time)
    return _latencies(req, time, arrival)[0]


def _latencies(
    req: np.ndarray, time: np.ndarray, arrival: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """`request_latencies` of tokens already in (request, time) order, and their
    `inter_token_gaps` (request, gap)."""
    arrival = np.asarray(arrival, dtype=np.float64).reshape(-1)
    n = arrival.size
    if req.size and (req.min() < 0 or req.max() >= n):
        raise SimInputError(f"token_req must hold request indices in 0..{n - 1}")
    count = np.bincount(req, minlength=n)
    first = np.full(n, np.nan)
    last = np.full(n, np.nan)
    max_itl = np.full(n, np.nan)
    # sorted by request: each request's tokens are one run, in ascending request order
    has = np.flatnonzero(count)
    ends = np.cumsum(count[has]) - 1
    starts = ends - count[has] + 1
    first[has] = time[starts]
    last[has] = time[ends]
    # the gaps: every difference but those across two requests' runs
    keep = np.ones(max(req.size - 1, 0), dtype=bool)
    keep[starts[1:] - 1] = False
    gap = np.diff(time)[keep]
    several = count > 1
    gap_req = np.repeat(np.flatnonzero(several), count[several] - 1)
    if gap.size:
        per = count[several] - 1
        max_itl[several] = np.maximum.reduceat(gap, np.cumsum(per) - per)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(count > 1, (last - first) / (count - 1), np.nan)
    lat = {
        "first_token": first,
        "last_token": last,
        "num_tokens": count,
        "ttft": first - arrival,
        "e2e": last - arrival,
        "tpot": tpot,
        "max_itl": max_itl,
    }
    return lat, gap_req, gap


def percentiles(values: np.ndarray) -> dict[str, float | None]:
    """p50, p90, p99 (np.percentile, linear), max and mean of the finite values; None when
    empty. (Benchmark reports such as `vllm bench serve` lead with the mean.)"""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return {key: None for key in (*PERCENTILES, "max", "mean")}
    qs = np.percentile(arr, list(PERCENTILES.values()))
    out: dict[str, float | None] = {k: float(q) for k, q in zip(PERCENTILES, qs, strict=True)}
    out["max"] = float(arr.max())
    out["mean"] = float(arr.mean())
    return out


def good_requests(
    finished: np.ndarray,
    ttft_ms: np.ndarray,
    tpot_ms: np.ndarray,
    *,
    ttft_slo_ms: float | None = None,
    itl_slo_ms: float | None = None,
) -> np.ndarray:
    """Mask of finished requests meeting the SLOs given (TTFT, and TPOT = mean ITL).

    A request without ITL (one output token) meets the ITL SLO; an SLO of None is not checked.
    """
    for name, slo in (("ttft_slo_ms", ttft_slo_ms), ("itl_slo_ms", itl_slo_ms)):
        if slo is not None and not (np.isfinite(slo) and slo > 0):
            raise SimInputError(f"{name}={slo} must be a number > 0")
    good = np.asarray(finished, dtype=bool).copy()
    ttft = np.asarray(ttft_ms, dtype=np.float64)
    tpot = np.asarray(tpot_ms, dtype=np.float64)
    if ttft_slo_ms is not None:
        good &= ttft <= ttft_slo_ms
    if itl_slo_ms is not None:
        good &= np.isnan(tpot) | (tpot <= itl_slo_ms)
    return good


def kv_usage(kv_blocks_used: np.ndarray, kv_blocks_usable: int) -> np.ndarray:
    """Fraction of the usable KV blocks (pool minus the null block) in use, per step."""
    if kv_blocks_usable < 1:
        raise SimInputError(f"kv_blocks_usable={kv_blocks_usable} must be at least 1")
    return np.asarray(kv_blocks_used, dtype=np.float64) / float(kv_blocks_usable)


# ---------------------------------------------------------------------------------------------
# Wrappers on a Run
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RequestMetrics:
    """Per-request latencies of a run (arrays indexed by request) and every ITL.

    Timed runs fill the `_ms`/`_s` fields (NaN in the step fields); step replays fill the
    `_steps` fields (NaN in the time fields). `itl_req[i]` is the request of gap `itl[i]`,
    in ms for timed runs, in steps for step replays.
    """

    timed: bool
    finished: np.ndarray
    num_tokens: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    max_itl_ms: np.ndarray
    e2e_s: np.ndarray
    ttft_steps: np.ndarray
    tpot_steps: np.ndarray
    e2e_steps: np.ndarray
    itl_req: np.ndarray
    itl: np.ndarray


def _token_clock(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(token times, arrivals) in seconds for timed runs, in steps for step replays."""
    wl = run.workload
    if run.timed:  # the run's arrivals: a closed loop's are realized during the run
        arrival = np.asarray(run.arrival_s, dtype=np.float64)
        return token_times_s(run.token_step, run.step_start_s, run.step_ms), arrival
    if wl.arrival_step is None:
        raise SimInputError("a step replay needs a workload with arrival_step")
    return np.asarray(run.token_step, dtype=np.float64), wl.arrival_step.astype(np.float64) - 1


def request_metrics(run: Run) -> RequestMetrics:
    """TTFT, TPOT, max ITL, E2E per request and every ITL, from a run's sampled tokens."""
    return _request_metrics(run, *_token_clock(run))


@dataclass(frozen=True, eq=False)
class Measured:
    """A run's token times, arrivals and request metrics, computed once for a page that shows
    both `summarize` and `request_table` of one run (each would compute them again)."""

    times: np.ndarray
    arrival: np.ndarray
    metrics: RequestMetrics


def measure(run: Run) -> Measured:
    times, arrival = _token_clock(run)
    return Measured(times, arrival, _request_metrics(run, times, arrival))


def _request_metrics(run: Run, times: np.ndarray, arrival: np.ndarray) -> RequestMetrics:
    """`request_metrics` with the token times and arrivals (`_token_clock`) already computed."""
    lat, gap_req, gap = _latencies(*_by_request_of_run(run, times), arrival)
    finished = np.asarray(run.finish_step) >= 1
    nan = np.full(arrival.size, np.nan)
    if run.timed:
        return RequestMetrics(
            True,
            finished,
            lat["num_tokens"],
            lat["ttft"] * 1000.0,
            lat["tpot"] * 1000.0,
            lat["max_itl"] * 1000.0,
            lat["e2e"],
            nan,
            nan,
            nan,
            gap_req,
            gap * 1000.0,
        )
    return RequestMetrics(
        False,
        finished,
        lat["num_tokens"],
        nan,
        nan,
        nan,
        nan,
        lat["ttft"],
        lat["tpot"],
        lat["e2e"],
        gap_req,
        gap,
    )


def request_table(run: Run, measured: Measured | None = None) -> pd.DataFrame:
    """One row per request (in the workload's list order) for the tables a page shows.

    Timed runs: arrival_s, ttft_ms, tpot_ms, max_itl_ms, e2e_s; step replays: arrival_step,
    ttft_steps, tpot_steps, e2e_steps. Always: request_id, prompt_tokens, output_tokens (asked),
    num_output_tokens (sampled), priority, tenant, first_scheduled_step, first_token_step,
    finish_step, num_preemptions, num_recomputed_tokens.
    """
    wl = run.workload
    m = (measured or measure(run)).metrics
    table: dict[str, Any] = {
        "request_id": list(wl.request_ids),
        "prompt_tokens": wl.prompt_tokens,
        "output_tokens": wl.output_tokens,
        "num_output_tokens": np.asarray(run.num_output_tokens),
        "priority": wl.priority,
        "tenant": wl.tenant,
    }
    if m.timed:
        table |= {
            "arrival_s": np.asarray(run.arrival_s, dtype=np.float64),
            "ttft_ms": m.ttft_ms,
            "tpot_ms": m.tpot_ms,
            "max_itl_ms": m.max_itl_ms,
            "e2e_s": m.e2e_s,
        }
    else:
        table |= {
            "arrival_step": wl.arrival_step,
            "ttft_steps": m.ttft_steps,
            "tpot_steps": m.tpot_steps,
            "e2e_steps": m.e2e_steps,
        }
    table |= {
        "first_scheduled_step": np.asarray(run.first_scheduled_step),
        "first_token_step": np.asarray(run.first_token_step),
        "finish_step": np.asarray(run.finish_step),
        "num_preemptions": np.asarray(run.num_preemptions),
        "num_recomputed_tokens": np.asarray(run.num_recomputed_tokens),
    }
    return pd.DataFrame(table)


def time_series(run: Run) -> pd.DataFrame:
    """One row per step for the app's charts.

    Columns: step (1-based), time_s (step start; NaN in step replays), step_ms, running,
    waiting (both after schedule), seqs and tokens (scheduled), kv_blocks_used, kv_usage
    (after output), preemptions and finished (in that step).
    """
    nan = np.full(run.num_steps, np.nan)
    return pd.DataFrame(
        {
            "step": np.arange(1, run.num_steps + 1),
            "time_s": np.asarray(run.step_start_s, dtype=np.float64) if run.timed else nan,
            "step_ms": np.asarray(run.step_ms, dtype=np.float64),
            "running": np.asarray(run.num_running),
            "waiting": np.asarray(run.num_waiting),
            "seqs": np.asarray(run.num_scheduled_seqs),
            "tokens": np.asarray(run.num_scheduled_tokens),
            "kv_blocks_used": np.asarray(run.kv_blocks_used),
            "kv_usage": kv_usage(run.kv_blocks_used, run.kv_blocks_usable),
            "preemptions": np.asarray(run.num_preempted),
            "finished": np.asarray(run.num_finished),
        }
    )


def _per(value: float, span: float) -> float | None:
    return float(value / span) if span > 0 else None


def summarize(
    run: Run,
    *,
    ttft_slo_ms: float | None = None,
    itl_slo_ms: float | None = None,
    measured: Measured | None = None,
) -> dict[str, Any]:
    """The run's figures as plain JSON-ready values (None where a figure does not apply).

    Keys: timed, num_requests, num_finished, num_steps, num_output_tokens (sampled),
    total_preemptions, total_recomputed_tokens, peak_kv_usage, mean_kv_usage (over steps),
    rejected_requests (total and per admission limit: num_finished + total = num_requests, plus
    timed_out_requests when a gateway timeout is set, sim/gateway.py);
    time (None in step replays): makespan_s, ttft_ms, itl_ms, tpot_ms, e2e_s (each a dict
    p50/p90/p99/max/mean), output_tokens_per_s, total_tokens_per_s, scheduled_tokens_per_s,
    mean_step_ms; steps (None in timed runs): ttft_steps, itl_steps, e2e_steps (dicts),
    output_tokens_per_step; with an SLO given: ttft_slo_ms, itl_slo_ms, num_good,
    goodput_req_per_s (timed runs only). `measured`: `measure(run)`, if the caller has it.
    """
    wl = run.workload
    measured = measured or measure(run)
    times, m = measured.times, measured.metrics
    usage = kv_usage(run.kv_blocks_used, run.kv_blocks_usable)
    num_out = int(np.asarray(run.token_req).size)
    out: dict[str, Any] = {
        "timed": bool(run.timed),
        "num_requests": wl.num_requests,
        "num_finished": int(m.finished.sum()),
        "num_steps": int(run.num_steps),
        "num_output_tokens": num_out,
        "total_preemptions": int(np.sum(run.num_preempted)),
        "total_recomputed_tokens": int(np.sum(run.num_recomputed_tokens)),
        "peak_kv_usage": float(usage.max()) if usage.size else 0.0,
        "mean_kv_usage": float(usage.mean()) if usage.size else 0.0,
        "rejected_requests": rejected_counts(run.rejected),
    }
    timed_out = getattr(run, "timed_out", None)
    if timed_out is not None:
        out["timed_out_requests"] = int(np.count_nonzero(timed_out))
    none4 = percentiles(np.empty(0))
    if run.timed:
        sent = np.asarray(run.arrival_s, dtype=np.float64)
        sent = sent[np.isfinite(sent)]
        start = float(sent.min()) if sent.size else 0.0
        span = float(times.max()) - start if times.size else 0.0
        finished_prompt = float(wl.prompt_tokens[m.finished].sum())
        out |= {
            "makespan_s": span,
            "ttft_ms": percentiles(m.ttft_ms),
            "itl_ms": percentiles(m.itl),
            "tpot_ms": percentiles(m.tpot_ms),
            "e2e_s": percentiles(m.e2e_s),
            "output_tokens_per_s": _per(num_out, span),
            "total_tokens_per_s": _per(finished_prompt + num_out, span),
            "scheduled_tokens_per_s": _per(float(np.sum(run.num_scheduled_tokens)), span),
            "mean_step_ms": float(np.mean(run.step_ms)) if run.num_steps else None,
            "ttft_steps": none4,
            "itl_steps": none4,
            "e2e_steps": none4,
            "output_tokens_per_step": None,
        }
    else:
        out |= {
            "makespan_s": None,
            "ttft_ms": none4,
            "itl_ms": none4,
            "tpot_ms": none4,
            "e2e_s": none4,
            "output_tokens_per_s": None,
            "total_tokens_per_s": None,
            "scheduled_tokens_per_s": None,
            "mean_step_ms": None,
            "ttft_steps": percentiles(m.ttft_steps),
            "itl_steps": percentiles(m.itl),
            "e2e_steps": percentiles(m.e2e_steps),
            "output_tokens_per_step": _per(num_out, float(run.num_steps)),
        }
    if ttft_slo_ms is not None or itl_slo_ms is not None:
        if not run.timed:
            raise SimInputError("goodput needs a timed run (a step replay has no milliseconds)")
        good = good_requests(
            m.finished, m.ttft_ms, m.tpot_ms, ttft_slo_ms=ttft_slo_ms, itl_slo_ms=itl_slo_ms
        )
        out |= {
            "ttft_slo_ms": None if ttft_slo_ms is None else float(ttft_slo_ms),
            "itl_slo_ms": None if itl_slo_ms is None else float(itl_slo_ms),
            "num_good": int(good.sum()),
            "goodput_req_per_s": _per(float(good.sum()), out["makespan_s"]),
        }
    return out
