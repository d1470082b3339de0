"""Exercise of the lesson "When memory runs out", its answer computed by the scheduler replay.

`first_preemption`: identical requests arrive together at an idle engine with a small KV pool;
in which step is a request preempted for the first time? Seed 0 is the default draw; other seeds
draw new numbers, always ones for which the pool holds every prompt but runs dry while the
answers grow. The words are in text.md.
"""

from __future__ import annotations

import numpy as np

from lessons.course import lesson
from lessons.quiz.exercise import Drawn, ExerciseSpec
from sim.config import SchedulerConfig
from sim.kv import cdiv
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = lesson("memory").text_path
BUDGET = 4096
BLOCK_SIZE = 16
MAX_MODEL_LEN = 8192


def _draw(seed: int) -> tuple[int, int, int, int]:
    """(count, prompt, output, usable blocks) of a draw."""
    if seed == 0:
        return 8, 200, 120, 120
    rng = np.random.default_rng(seed)
    prompt = int(rng.integers(3, 26)) * 16 + int(rng.integers(0, 16))
    count = min(int(rng.integers(4, 13)), BUDGET // prompt)  # every prompt fits in step 1
    output = int(rng.integers(40, 200))
    need = count * cdiv(prompt + output, BLOCK_SIZE)
    have = count * cdiv(prompt, BLOCK_SIZE)
    usable = int(rng.integers(have + count, max(need - count, have + count + 1)))
    return count, prompt, output, usable


def first_preemption(seed: int) -> Drawn:
    """The step of the first preemption, from a step replay of the drawn workload."""
    count, prompt, output, usable = _draw(seed)
    config = SchedulerConfig(
        max_num_batched_tokens=BUDGET,
        max_num_seqs=256,
        max_model_len=MAX_MODEL_LEN,
        num_gpu_blocks=usable + 1,
        block_size=BLOCK_SIZE,
    )
    wl = Workload.build([prompt] * count, [output] * count, arrival_step=[1] * count)
    run = run_steps(config, wl, record_detail=True)
    first = next((d for d in run.detail if d.preempted.size), None)
    if first is None:  # a draw whose pool holds everything: not a question about preemption
        return first_preemption(seed + 1_000_003)
    start = run.detail[0]
    admitted = int(start.new.size)
    held = int(start.kv_blocks_used_after_schedule)
    values = {
        "count": count,
        "prompt": prompt,
        "output": output,
        "usable": usable,
        "budget": BUDGET,
        "block_size": BLOCK_SIZE,
        "prompt_blocks": int(cdiv(prompt, BLOCK_SIZE)),
        "admitted": admitted,
        "held": held,
        "free": usable - held,
        "answer": first.step,
    }
    return Drawn.from_text(
        TEXT,
        "first",
        values,
        first.step,
        "step",
        rtol=0.0,
        params={"count": count, "prompt": prompt, "output": output, "usable": usable},
    )


EXERCISES = (
    ExerciseSpec(id="first_preemption", title="When the pool runs dry", draw=first_preemption),
)
