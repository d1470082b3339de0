"""Exercises of lesson 3, drawn from a seed and answered by the simulator.

1. "Steps that carry the prompt": with chunked prefill, how many steps read a piece of a long
   prompt that arrives while users stream? The answer is read off a step replay of vLLM's
   scheduler (sim.scheduler.run_steps). Seed 0 is the seed text's example: a budget of 2,048,
   48 users streaming and an 8,000-token prompt, which takes 4 steps of 2,000 tokens.
2. "The worst gap, with and without chunking": given the cost model's prices of the steps
   involved, by how much does chunking shorten the longest wait between two tokens? The answer
   is the difference of the two lanes' worst gaps in lessons.chunked_prefill.figures, the same
   runs the lesson's charts show.

Draws are cached: the practice page draws every exercise on every rerun.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache

from lessons.chunked_prefill import figures
from lessons.quiz.exercise import Drawn, ExerciseSpec
from sim.config import SchedulerConfig
from sim.scheduler import run_steps
from sim.workload import Workload

BUDGETS = (512, 1024, 2048, 4096, 8192)
STREAM_PROMPT = 512  # each streaming user's own prompt
LEAD = 3  # decode steps between the last user's first token and the prompt's arrival


def prompt_steps(budget: int, users: int, prompt: int) -> dict[str, int]:
    """Replay the scheduler: `users` stream, then a `prompt`-token request arrives (chunked).

    Returns the arrival step, the first step that schedules the prompt, the step of its first
    token and the tokens of its first chunk.
    """
    warm = math.ceil(users * STREAM_PROMPT / max(budget - users, 1)) + 1
    arrival = warm + LEAD + 1
    outputs = arrival + math.ceil(prompt / max(budget - users, 1)) + 8
    blocks = users * math.ceil((STREAM_PROMPT + outputs) / 16) + math.ceil((prompt + 4) / 16) + 2
    config = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=max(users + 1, 2),
        max_model_len=131_072,
        num_gpu_blocks=blocks,
        enable_chunked_prefill=True,
    )
    wl = Workload.build(
        [STREAM_PROMPT] * users + [prompt],
        [outputs] * users + [4],
        arrival_step=[1] * users + [arrival],
    )
    run = run_steps(config, wl)
    first = int(run.first_scheduled_step[users])
    seqs = int(run.num_scheduled_seqs[first - 1])
    return {
        "arrival_step": arrival,
        "first_step": first,
        "first_token_step": int(run.first_token_step[users]),
        "first_chunk": int(run.num_scheduled_tokens[first - 1]) - (seqs - 1),
    }


def _draw_numbers(seed: int, budgets=BUDGETS) -> tuple[int, int, int]:
    if seed == 0:
        return 2048, 48, 8000
    rng = random.Random(seed)
    budget = rng.choice(budgets)
    users = rng.randrange(4, min(budget // 2, 200) + 1, 4)
    prompt = rng.randrange(budget, 40_001, 100)
    return budget, users, prompt


@lru_cache(maxsize=256)
def draw_steps(seed: int) -> Drawn:
    """Exercise 1: how many steps carry a piece of the prompt."""
    budget, users, prompt = _draw_numbers(seed)
    r = prompt_steps(budget, users, prompt)
    steps = r["first_token_step"] - r["first_step"] + 1
    chunk = r["first_chunk"]
    last = prompt - chunk * (steps - 1)
    return Drawn(
        prompt=(
            f"Chunked prefill is on with a token budget of **{budget:,}**. **{users}** users "
            f"are streaming, one token per step each, when a **{prompt:,}**-token prompt arrives. "
            "How many steps carry a piece of that prompt (the last of them also produces its "
            "first token)?"
        ),
        answer=float(steps),
        unit="steps",
        solution=(
            f"The {users} streaming users are served first, one token each, which leaves "
            f"{budget:,} − {users} = {chunk:,} tokens of every step for the prompt. "
            f"{prompt:,} tokens in chunks of {chunk:,} take {steps} steps"
            + (f" (the last chunk holds {last:,} tokens)." if steps > 1 else ".")
            + " The simulated scheduler agrees: it reads the prompt in steps "
            f"{r['first_step']} to {r['first_token_step']}."
        ),
        rtol=0.0,
        atol=0.01,
        params={"budget": budget, "users": users, "prompt": prompt},
    )


@lru_cache(maxsize=64)
def draw_gap(seed: int) -> Drawn:
    """Exercise 2: how much chunking shortens the worst wait between tokens."""
    budget, users, prompt = _draw_numbers(seed, budgets=(1024, 2048, 4096))
    p = figures.Params(prompt_tokens=min(prompt, 32_000), users=users, budget=budget)
    sim = figures.compute(p)
    w, c = sim["lanes"]["whole"].stats, sim["lanes"]["chunked"].stats
    e = sim["effective"]
    answer = w["worst_gap_ms"] - c["worst_gap_ms"]
    return Drawn(
        prompt=(
            f"{e['users']} users stream from {p.model} on an {p.gpu} when a "
            f"**{e['prompt']:,}**-token prompt arrives. The cost model prices the steps "
            f"like this: a step with only the {e['users']} decodes takes "
            f"**{c['decode_ms']:.1f} ms**; with a budget of {budget:,}, each step that also "
            "carries a chunk of the prompt takes between "
            f"**{c['prompt_step_ms_min']:.1f} and {c['prompt_step_ms_max']:.1f} ms**, "
            "depending on the chunk's size and how much of the prompt it attends to; and a "
            "step with the "
            f"decodes plus the whole prompt ({w['prompt_tokens_in_step_max']:,} tokens) takes "
            f"**{w['prompt_step_ms_max']:.1f} ms**. By how many milliseconds does chunked "
            f"prefill (budget {budget:,}) shorten the longest wait between two tokens that a "
            "streaming user sees?"
        ),
        answer=float(answer),
        unit="ms",
        solution=(
            "A streaming user's wait between two tokens is the duration of the step between "
            "them, so the longest wait is the longest step. Without chunking that is the step "
            f"holding the whole prompt, {w['worst_gap_ms']:.1f} ms. With chunking it is the "
            f"slowest chunk step, {c['worst_gap_ms']:.1f} ms. The difference is "
            f"{answer:.1f} ms."
        ),
        rtol=0.02,
        atol=0.2,
        params={"budget": budget, "users": e["users"], "prompt": e["prompt"]},
    )


EXERCISES = [
    ExerciseSpec(id="prompt_steps", title="Steps that carry the prompt", draw=draw_steps),
    ExerciseSpec(id="worst_gap", title="The worst gap, with and without chunking", draw=draw_gap),
]
