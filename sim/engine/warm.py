"""`python -m sim.engine.warm`: compile the engine once so that no learner waits for it.

Numba compiles a function the first time it is called with a given set of argument types and
keeps the machine code on disk (`__pycache__` beside the sources). `make run` and `make test`
run this module right after installing the requirements: it runs one small replay of every kind
the lessons use (synchronous and async, with and without prefix caching, timed and by step, each
queue and victim rule), which compiles every path, and prints how long that took.
"""

from __future__ import annotations

import time

import numpy as np


def warm() -> float:
    """Compile (or load from the cache) every path of the step loop; seconds taken."""
    from sim.config import SchedulerConfig
    from sim.cost import Deployment
    from sim.engine.engine import Engine
    from sim.timed import timer_for
    from sim.workload import Workload

    t0 = time.perf_counter()
    n = 6
    base = dict(
        prompt_tokens=np.array([40, 33, 64, 17, 40, 90]),
        output_tokens=np.array([5, 9, 3, 7, 4, 6]),
        priority=np.array([1, 0, 2, 0, 1, 0]),
        tenant=np.array([0, 1, 0, 1, 2, 0]),
        prefix_id=np.array([0, 0, -1, 1, 0, -1]),
        prefix_tokens=np.array([40, 32, 0, 16, 40, 0]),
        request_ids=tuple(str(i) for i in range(n)),
    )
    by_step = Workload(arrival_s=None, arrival_step=np.array([1, 1, 2, 3, 3, 4]), **base)
    timed = Workload(arrival_s=np.linspace(0, 0.01, n), arrival_step=None, **base)
    dep = Deployment("L4", "Llama-3.1-8B")
    for policy in ("fcfs", "priority", "fair-share", "prefix-aware"):
        for caching in (False, True):
            for async_ in (False, True):
                cfg = SchedulerConfig(
                    max_num_batched_tokens=64,
                    max_num_seqs=4,
                    max_model_len=256,
                    num_gpu_blocks=24,
                    enable_prefix_caching=caching,
                    async_scheduling=async_,
                    policy=policy,
                    max_num_queued_reqs=5,
                )
                timer = timer_for(dep, async_scheduling=async_)
                Engine(cfg, by_step, max_steps=10_000, record_detail=caching).run()
                Engine(cfg, timed, timer=timer, max_steps=10_000, trace_blocks=async_).run()
    return time.perf_counter() - t0


if __name__ == "__main__":
    print(f"sim.engine: compiled step loop ready in {warm():.1f} s")
