"""Exercises of the lesson "The step loop", each answer computed by the scheduler replay.

`blocks_after_steps`: how many KV blocks a lone request holds after a number of steps (the token
sampled in a step only gets its slot in the next one). `seq_budget_wait`: with a small
max_num_seqs, in which step does the last of several simultaneous requests get its first token.
Seed 0 is the default draw; other seeds draw new numbers. The words are in text.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.step_loop.lesson import BLOCK_SIZE, MAX_MODEL_LEN
from sim.config import SchedulerConfig
from sim.kv import cdiv
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = Path(__file__).with_name("text.md")
BUDGET = 2048
POOL = 4000
SEAT_PROMPT = 64


def _config(max_num_seqs: int = 256) -> SchedulerConfig:
    return SchedulerConfig(
        max_num_batched_tokens=BUDGET,
        max_num_seqs=max_num_seqs,
        max_model_len=MAX_MODEL_LEN,
        num_gpu_blocks=POOL,
        block_size=BLOCK_SIZE,
    )


def blocks_after_steps(seed: int) -> Drawn:
    """A lone request: KV blocks held after step s."""
    if seed == 0:
        prompt, step = 600, 20
    else:
        rng = np.random.default_rng(seed)
        prompt = int(rng.integers(50, 2001))
        step = int(rng.integers(2, 81))
    config = _config()
    run = run_steps(config, Workload.build([prompt], [step + 10], arrival_step=[1]))
    answer = int(run.kv_blocks_used[step - 1])
    values = {
        "prompt": prompt,
        "step": step,
        "budget": BUDGET,
        "block_size": config.block_size,
        "before": step - 1,
        "held": prompt + step - 1,
        "answer": answer,
    }
    return Drawn.from_text(
        TEXT, "blocks", values, answer, "blocks", rtol=0.0, params={"prompt": prompt, "step": step}
    )


def seq_budget_wait(seed: int) -> Drawn:
    """max_num_seqs S, N requests at once: step of the last first token."""
    if seed == 0:
        seqs, count, output = 4, 10, 12
    else:
        rng = np.random.default_rng(seed)
        seqs = int(rng.integers(2, 9))
        count = int(rng.integers(seqs + 1, 3 * seqs + 1))
        output = int(rng.integers(5, 31))
    run = run_steps(
        _config(seqs),
        Workload.build([SEAT_PROMPT] * count, [output] * count, arrival_step=[1] * count),
    )
    answer = int(run.first_token_step.max())
    values = {
        "count": count,
        "prompt": SEAT_PROMPT,
        "output": output,
        "seqs": seqs,
        "budget": BUDGET,
        "rounds": cdiv(count, seqs),
        "second": output + 1,
        "third": 2 * output + 1,
        "answer": answer,
    }
    return Drawn.from_text(
        TEXT,
        "seats",
        values,
        answer,
        "step",
        rtol=0.0,
        params={"seqs": seqs, "count": count, "output": output},
    )


EXERCISES = (
    ExerciseSpec(id="blocks", title="KV blocks of a growing request", draw=blocks_after_steps),
    ExerciseSpec(id="seq_budget", title="Waiting for a seat", draw=seq_budget_wait),
)
