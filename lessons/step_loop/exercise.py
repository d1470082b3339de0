"""Exercises of the lesson "The step loop", each answer computed by the scheduler replay.

`blocks_after_steps`: how many KV blocks a lone request holds after a number of steps (the token
sampled in a step only gets its slot in the next one). `seq_budget_wait`: with a small
max_num_seqs, in which step does the last of several simultaneous requests get its first token.
Seed 0 is the default draw; other seeds draw new numbers.
"""

from __future__ import annotations

import numpy as np

from lessons.quiz.exercise import Drawn, ExerciseSpec
from sim.config import SchedulerConfig
from sim.kv import cdiv
from sim.scheduler import run_steps
from sim.workload import Workload

BUDGET = 2048
POOL = 4000


def _config(max_num_seqs: int = 256) -> SchedulerConfig:
    return SchedulerConfig(
        max_num_batched_tokens=BUDGET,
        max_num_seqs=max_num_seqs,
        max_model_len=8192,
        num_gpu_blocks=POOL,
    )


def blocks_after_steps(seed: int) -> Drawn:
    """A lone request: KV blocks held after step s."""
    if seed == 0:
        prompt, step = 600, 20
    else:
        rng = np.random.default_rng(seed)
        prompt = int(rng.integers(50, 2001))
        step = int(rng.integers(2, 81))
    run = run_steps(_config(), Workload.build([prompt], [step + 10], arrival_step=[1]))
    answer = int(run.kv_blocks_used[step - 1])
    return Drawn(
        prompt=(
            f"A request with a **{prompt:,}-token** prompt arrives at an idle engine (budget "
            f"{BUDGET:,} tokens, 16-token KV blocks) and generates a long answer. "
            f"How many KV blocks does it hold at the end of step **{step}**?"
        ),
        answer=float(answer),
        unit="blocks",
        solution=(
            f"Step 1 reads the whole prompt and samples the first token. Each later step feeds "
            f"the previous token back in, so after step {step} the cache holds "
            f"{prompt:,} + {step - 1} = {prompt + step - 1:,} tokens (the token sampled in step "
            f"{step} gets its slot only in the next step). In 16-token blocks that is "
            f"⌈{prompt + step - 1:,} / 16⌉ = **{answer}**."
        ),
        rtol=0.0,
        atol=0.0,
        params={"prompt": prompt, "step": step},
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
        _config(seqs), Workload.build([64] * count, [output] * count, arrival_step=[1] * count)
    )
    answer = int(run.first_token_step.max())
    rounds = cdiv(count, seqs)
    return Drawn(
        prompt=(
            f"**{count}** requests, each with a 64-token prompt and a **{output}-token** answer, "
            f"arrive together at an idle engine with `max_num_seqs` = **{seqs}** and a budget of "
            f"{BUDGET:,} tokens. In which step does the last of them receive its first token?"
        ),
        answer=float(answer),
        unit="step",
        solution=(
            f"Only {seqs} requests may run at once, so they go in {rounds} rounds. A round "
            f"starts in the step after the previous round finished: each request takes "
            f"{output} steps (its first token comes with its prompt step), so rounds start at "
            f"steps 1, {output + 1}, {2 * output + 1}, … The last round starts, and gets its "
            f"first tokens, in step **{answer}**."
        ),
        rtol=0.0,
        atol=0.0,
        params={"seqs": seqs, "count": count, "output": output},
    )


EXERCISES = (
    ExerciseSpec(id="blocks", title="KV blocks of a growing request", draw=blocks_after_steps),
    ExerciseSpec(id="seq_budget", title="Waiting for a seat", draw=seq_budget_wait),
)
