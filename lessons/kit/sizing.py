"""What the lessons that run a stream of requests share: a run sized to hold several full
batches on any GPU, its measured capacity, and a run's gauges read on a time grid.

`sized` finds how many requests a full engine runs at once (a probe burst), makes the run
`waves` times that (within bounds, so that a slow GPU still gets enough requests and a fast one
a short run), and measures the capacity of those requests (sim.overload, trimmed of the fill
and the drain). `last_begun` is the step whose gauges a scrape at each time would read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sim.config import SchedulerConfig
from sim.generators import WorkloadSpec
from sim.overload import capacity_req_per_s, full_batch, poisson_at
from sim.run import Run

PROBE = 300  # requests of the probe burst
TRIM = 0.1  # the fill and the drain left out of the capacity


def sized(
    config: SchedulerConfig,
    recipe: Callable[[int], WorkloadSpec],
    dep: Any,
    *,
    waves: int,
    lo: int,
    hi: int,
) -> tuple[WorkloadSpec, int, float]:
    """(the recipe for `waves` full batches, rounded down to hundreds within [lo, hi]; the full
    batch; the capacity of those requests in requests per second)."""
    full = full_batch(config, poisson_at(recipe(PROBE), 1.0), dep)
    n = int(np.clip(waves * full, lo, hi)) // 100 * 100
    spec = recipe(n)
    return spec, full, capacity_req_per_s(config, poisson_at(spec, 1.0), dep, trim=TRIM)


def last_begun(run: Run, times: np.ndarray) -> np.ndarray:
    """For each time, the index of the last step that began by then (-1: none yet)."""
    return np.searchsorted(np.asarray(run.step_start_s), times, side="right") - 1
