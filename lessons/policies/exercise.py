"""Exercise of the lesson "Who goes first", its answer computed by the scheduler replay.

`sjf_first_token`: a few requests reach an idle engine with one seat (max_num_seqs = 1) under
SJF; in which step does a given one produce its first token? Seed 0 is the default draw; other
seeds draw new job sizes, all different, so the order has no ties. The words are in text.md.
"""

from __future__ import annotations

import numpy as np

from lessons.course import lesson
from lessons.kit.words import join
from lessons.quiz.exercise import Drawn, ExerciseSpec
from sim.config import SchedulerConfig
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = lesson("policies").text_path
BUDGET = 4096
NAMES = "ABCDEF"


def _draw(seed: int) -> tuple[list[int], list[int], int]:
    """(prompts, outputs, target index) of a draw."""
    if seed == 0:
        return [900, 200, 1500, 400], [30, 12, 8, 20], 0
    rng = np.random.default_rng(seed)
    count = int(rng.integers(3, 6))
    while True:
        prompts = rng.integers(100, 3000, count).tolist()
        outputs = rng.integers(4, 40, count).tolist()
        jobs = [p + o for p, o in zip(prompts, outputs, strict=True)]
        if len(set(jobs)) == count:
            break
    order = np.argsort(jobs)
    return prompts, outputs, int(order[int(rng.integers(1, count))])  # never the first


def sjf_first_token(seed: int) -> Drawn:
    """The step of the target's first token, from a step replay of the drawn requests."""
    prompts, outputs, target = _draw(seed)
    config = SchedulerConfig(
        max_num_batched_tokens=BUDGET,
        max_num_seqs=1,
        max_model_len=8192,
        num_gpu_blocks=2048,
        policy="sjf",
    )
    names = [NAMES[i] for i in range(len(prompts))]
    wl = Workload.build(prompts, outputs, arrival_step=[1] * len(prompts), request_ids=names)
    run = run_steps(config, wl)
    jobs = [p + o for p, o in zip(prompts, outputs, strict=True)]
    order = sorted(range(len(jobs)), key=jobs.__getitem__)
    ahead = order[: order.index(target)]
    answer = int(run.first_token_step[target])
    values = {
        "count": len(prompts),
        "jobs": join([f"{n} {p:,} + {o}" for n, p, o in zip(names, prompts, outputs, strict=True)]),
        "target": names[target],
        "order": join([f"{names[i]} ({jobs[i]:,})" for i in order]),
        "ahead": sum(outputs[i] for i in ahead),
        "answer": answer,
    }
    return Drawn.from_text(
        TEXT,
        "sjf",
        values,
        answer,
        "step",
        rtol=0.0,
        params={"prompts": prompts, "outputs": outputs, "target": names[target]},
    )


EXERCISES = (
    ExerciseSpec(id="sjf_first_token", title="One seat, shortest first", draw=sjf_first_token),
)
