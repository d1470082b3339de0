"""Exercise of the lesson "Too many requests", its answer computed by the scheduler replay.

`refused_count`: vLLM's `max_num_queued_tokens` with a long prompt partly prefilled and a few
decodes running; how many of the requests that arrive next are refused? The replay runs the
engine with the limit (sim/admission.py holds vLLM's rule) and counts its refusals. Seed 0 is
the default draw; the words are in text.md.
"""

from __future__ import annotations

import numpy as np

from lessons.course import lesson
from lessons.kit.words import join
from lessons.quiz.exercise import Drawn, ExerciseSpec
from sim.config import SchedulerConfig
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = lesson("overload").text_path
BUDGET = 2048
SHORT = 100


def _trail(limit: int, long: int, prompts: list[int]) -> list[bool]:
    """vLLM's rule read plainly: each arrival refused when the count before it is at the limit."""
    queued, refused = long, []
    for p in prompts:
        refused.append(queued >= limit)
        queued += 0 if refused[-1] else p
    return refused


def _draw(seed: int) -> tuple[int, int, int, list[int]]:
    """(limit, decodes, long prompt, arriving prompts) of a draw; other seeds than 0 draw
    until some arrivals are let in and some refused."""
    if seed == 0:
        return 8192, 3, 6000, [1500, 900, 700, 2000]
    rng = np.random.default_rng(seed)
    while True:
        limit = int(rng.choice([4096, 6000, 8192, 12000]))
        long = int(rng.uniform(max(0.3 * limit, BUDGET + 500), 0.8 * limit)) // 100 * 100
        prompts = (rng.integers(3, 25, int(rng.integers(3, 6))) * 100).tolist()
        if 0 < sum(_trail(limit, long, prompts)) < len(prompts):
            return limit, int(rng.integers(1, 5)), long, prompts


def refused_count(seed: int) -> Drawn:
    """The arrivals of step 2 that the replay refuses."""
    limit, decodes, long, prompts = _draw(seed)
    config = SchedulerConfig(
        max_num_batched_tokens=BUDGET,
        max_num_seqs=64,
        max_model_len=32_768,
        num_gpu_blocks=4096,
        max_num_queued_tokens=limit,
    )
    lengths = [SHORT] * decodes + [long] + prompts
    steps = [1] * (decodes + 1) + [2] * len(prompts)
    wl = Workload.build(lengths, [50] * len(lengths), arrival_step=steps)
    run = run_steps(config, wl)
    answer = int(np.count_nonzero(run.rejected[decodes + 1 :]))
    queued, trail = long, []
    for p, refused in zip(prompts, _trail(limit, long, prompts), strict=True):
        if refused:  # the words of the solution: each arrival against the count before it
            trail.append(f"{p:,} refused ({queued:,} ≥ {limit:,})")
        else:
            trail.append(f"{p:,} let in ({queued:,} < {limit:,}, now {queued + p:,})")
            queued += p
    values = {
        "limit": limit,
        "budget": BUDGET,
        "decodes": decodes,
        "long": long,
        "long_done": BUDGET - decodes * SHORT,
        "count": len(prompts),
        "prompts": join([f"{p:,}" for p in prompts]),
        "steps": join(trail),
        "answer": answer,
    }
    return Drawn.from_text(
        TEXT,
        "refused",
        values,
        answer,
        "requests",
        rtol=0.0,
        params={"limit": limit, "decodes": decodes, "long": long, "prompts": prompts},
    )


EXERCISES = (ExerciseSpec(id="refused_count", title="Who gets a 503", draw=refused_count),)
