"""vLLM v1's scheduler, step for step: the entry points of the engine (sim/engine).

One step = arrivals, one `schedule()` (running requests first, then the waiting queue), one output
update (sample, stop, free), exactly as SCHEDULER.md (a)-(h) describe vLLM 0.34 (and 0.33 for its
recordings: `SchedulerConfig.vllm_version`). The whole run is one compiled loop over the engine's
arrays (sim/engine/kernel.py); `NUMBA_DISABLE_JIT=1` runs the same functions as Python. Async
scheduling (`SchedulerConfig.async_scheduling`), prefix caching, the policies, vLLM's admission
limits, a gateway's timeout and closed-loop workloads are all settings of that one loop.

Public: `run_steps` (arrivals in steps, for replays and lessons); `Engine` for a run paused,
traced or timed by any step-time model; `prepare` / `Prepared` (what a sweep shares); timed runs:
`sim.timed`.
"""

from __future__ import annotations

from sim.engine.engine import DEFAULT_MAX_STEPS, PROGRESS_EVERY_S, Engine, StepTimer, run_steps
from sim.engine.layout import RequestStatus
from sim.engine.prepare import Prepared, prepare

__all__ = [
    "DEFAULT_MAX_STEPS",
    "PROGRESS_EVERY_S",
    "Engine",
    "Prepared",
    "RequestStatus",
    "StepTimer",
    "prepare",
    "run_steps",
]
