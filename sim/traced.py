"""A timed run with its block tables (sim/blocks.py): which KV block each request holds, step by
step, for the lessons that draw the pool.

The engine keeps block ids as it runs (sim/engine/pool.py), so a traced run is one run: the same
decisions as the untraced one (the tests check it), with a snapshot of every table at the end of
every turn.
"""

from __future__ import annotations

from sim.config import SchedulerConfig
from sim.run import Run
from sim.scheduler import Engine, StepTimer
from sim.workload import Workload


def run_traced(
    config: SchedulerConfig, workload: Workload, timer: StepTimer, *, max_steps: int | None = None
) -> Run:
    """The timed run of `workload` with `timer`, with every step's block tables (`Run.blocks`)
    and per-step detail."""
    return Engine(config, workload, timer=timer, trace_blocks=True, max_steps=max_steps).run()
