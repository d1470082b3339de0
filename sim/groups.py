"""Latency by group: what a policy lesson compares side by side (per priority class, per tenant).

A request's queue time is the wait from its arrival to the start of the step that first
scheduled it (NaN if it never ran: refused by admission control). Per group `by_group` gives the
number of requests, finished and refused, TTFT p50/p99 (ms), E2E p50/p99 (s), queue time
p50/p99/max (s), and the request that waited longest, so that starvation has a name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sim.errors import SimInputError
from sim.metrics import request_metrics
from sim.run import Run

GROUP_KEYS = ("priority", "tenant")


def queue_time_s(run: Run) -> np.ndarray:
    """Per request: first scheduled step's start minus arrival (s); NaN if never scheduled."""
    if not run.timed:
        raise SimInputError("queue time needs a timed run")
    first = np.asarray(run.first_scheduled_step)
    start = np.asarray(run.step_start_s, dtype=np.float64)
    began = np.where(first > 0, start[np.maximum(first, 1) - 1], np.nan)
    return began - np.asarray(run.arrival_s, dtype=np.float64)


def finite_percentile(values: np.ndarray, q: float) -> float:
    """The q-th percentile of the finite values (NaN: refused or never run); NaN if none."""
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, q)) if finite.size else float("nan")


def by_group(run: Run, key: str = "priority") -> pd.DataFrame:
    """One row per value of `key` ("priority" or "tenant"), in increasing order."""
    if key not in GROUP_KEYS:
        raise SimInputError(f"group by one of {', '.join(GROUP_KEYS)}, not {key!r}")
    wl = run.workload
    m = request_metrics(run)
    wait = queue_time_s(run)
    refused = np.zeros(wl.num_requests, bool) if run.rejected is None else run.rejected > 0
    groups = np.asarray(getattr(wl, key))
    rows = []
    for g in np.unique(groups).tolist():
        sel = groups == g
        w = wait[sel]
        worst = int(np.flatnonzero(sel)[np.nanargmax(w)]) if np.isfinite(w).any() else -1
        rows.append(
            {
                key: g,
                "requests": int(sel.sum()),
                "finished": int(m.finished[sel].sum()),
                "refused": int(refused[sel].sum()),
                "ttft_ms_p50": finite_percentile(m.ttft_ms[sel], 50),
                "ttft_ms_p99": finite_percentile(m.ttft_ms[sel], 99),
                "e2e_s_p50": finite_percentile(m.e2e_s[sel], 50),
                "e2e_s_p99": finite_percentile(m.e2e_s[sel], 99),
                "queue_s_p50": finite_percentile(w, 50),
                "queue_s_p99": finite_percentile(w, 99),
                "queue_s_max": float(wait[worst]) if worst >= 0 else float("nan"),
                "longest_wait_request": wl.request_ids[worst] if worst >= 0 else "",
            }
        )
    return pd.DataFrame(rows)
