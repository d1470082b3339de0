"""A timed run with its block tables (sim/blocks.py), at about the price of two plain runs.

Tracing steps the engine one step at a time through the block pool, and pricing each of those
steps with the cost model separately would cost more than the run itself. A run's decisions
depend on the clock only through the step times, so `run_traced` first makes the ordinary timed
run (windows, one vectorized cost call per window) and then the traced run on a clock that plays
those step times back. The playback checks every step it prices against the first run (tokens,
sequences, KV read, attention pairs): if the two runs ever parted, it raises instead of drawing
a run that did not happen.
"""

from __future__ import annotations

import numpy as np

from sim.config import SchedulerConfig
from sim.run import Run
from sim.scheduler import Engine, StepTimer
from sim.workload import Workload


class _PlayBack:
    """A StepTimer that returns a finished run's step times, in order, after checking that the
    steps it is asked to price are that run's steps."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.k = 0

    def __call__(
        self, q: np.ndarray, s: np.ndarray, kv: np.ndarray, attn: np.ndarray
    ) -> np.ndarray:
        k, m, run = self.k, len(q), self.run
        window = slice(k, k + m)
        asked = (q, s, kv, attn)
        recorded = (
            run.num_scheduled_tokens[window],
            run.num_scheduled_seqs[window],
            run.kv_read_tokens[window],
            run.attn_pairs[window],
        )
        if k + m > run.num_steps or not all(
            np.array_equal(np.asarray(a), b) for a, b in zip(asked, recorded, strict=True)
        ):
            raise RuntimeError(f"the traced run parted from the timed run at step {k + 1}")
        self.k = k + m
        return run.step_ms[window]


def run_traced(
    config: SchedulerConfig, workload: Workload, timer: StepTimer, *, max_steps: int | None = None
) -> Run:
    """The timed run of `workload` with `timer`, with every step's block tables (`Run.blocks`)
    and per-step detail."""
    plain = Engine(config, workload, timer=timer, max_steps=max_steps).run()
    traced = Engine(
        config, workload, timer=_PlayBack(plain), trace_blocks=True, max_steps=max_steps
    ).run()
    if traced.num_steps != plain.num_steps:
        raise RuntimeError("the traced run parted from the timed run at its end")
    return traced
