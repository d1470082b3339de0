"""Exercises of the chunked-prefill lesson, drawn from a seed and answered by the simulator.

1. "Steps that carry the prompt": with chunked prefill, how many steps read a piece of a long
   prompt that arrives while users stream? The answer is read off a step replay of vLLM's
   scheduler (sim.scheduler.run_steps) on the lesson's scenario, sim.scenarios.stream_then_prompt.
   Seed 0 is the seed text's example: a budget of 2,048, 48 users streaming and an 8,000-token
   prompt, which takes 4 steps of 2,000 tokens.
2. "The worst gap, with and without chunking": given the cost model's prices of the steps
   involved, by how much does chunking shorten the longest wait between two tokens? The answer
   is the difference of the two lanes' worst gaps in lesson.build(), the same timed runs the
   lesson's charts show.

Prompts and solutions are sections of text.md. Draws are cached: the practice page draws every
exercise on every rerun.
"""

from __future__ import annotations

import random
from functools import lru_cache

from lessons.chunked_prefill.lesson import BLOCK_SIZE, Params, build
from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from sim.config import SchedulerConfig
from sim.kv import cdiv
from sim.scenarios import stream_then_prompt
from sim.scheduler import run_steps

TEXT = ROOT / "chunked_prefill" / "text.md"
BUDGETS = (512, 1024, 2048, 4096, 8192)
STREAM_PROMPT = 512  # each streaming user's own prompt
LEAD = 3  # decode steps between the last user's first token and the prompt's arrival


def prompt_steps(budget: int, users: int, prompt: int) -> dict[str, int]:
    """Replay the scheduler: `users` stream, then a `prompt`-token request arrives (chunked).

    Returns the arrival step, the first step that schedules the prompt, the step of its first
    token and the tokens of its first chunk.
    """
    warm = cdiv(users * STREAM_PROMPT, max(budget - users, 1)) + 1
    arrival = warm + LEAD + 1
    scenario = stream_then_prompt(
        users,
        STREAM_PROMPT,
        prompt,
        budget,
        user_output_tokens=arrival + cdiv(prompt, max(budget - users, 1)) + 8,
        long_output_tokens=4,
        arrival_step=arrival,
    )
    config = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=max(users + 1, 2),
        max_model_len=131_072,
        num_gpu_blocks=scenario.blocks_needed(BLOCK_SIZE),
        block_size=BLOCK_SIZE,
        enable_chunked_prefill=True,
    )
    run = run_steps(config, scenario.workload())
    long = scenario.long_index
    first = int(run.first_scheduled_step[long])
    seqs = int(run.num_scheduled_seqs[first - 1])
    return {
        "arrival_step": arrival,
        "first_step": first,
        "first_token_step": int(run.first_token_step[long]),
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
    values = {
        "budget": budget,
        "users": users,
        "prompt": prompt,
        "chunk": chunk,
        "steps": steps,
        "last": prompt - chunk * (steps - 1),
        "first_step": r["first_step"],
        "first_token_step": r["first_token_step"],
    }
    return Drawn(
        prompt=section(TEXT, "exercise-steps-prompt", values),
        answer=float(steps),
        unit="steps",
        solution=section(TEXT, "exercise-steps-solution", values),
        rtol=0.0,
        atol=0.01,
        params={"budget": budget, "users": users, "prompt": prompt},
    )


@lru_cache(maxsize=64)
def draw_gap(seed: int) -> Drawn:
    """Exercise 2: how much chunking shortens the worst wait between tokens."""
    budget, users, prompt = _draw_numbers(seed, budgets=(1024, 2048, 4096))
    p = Params(
        prompt_tokens=min(prompt, 32_000),
        users=users,
        vllm_defaults=False,
        max_num_batched_tokens=budget,
    )
    r = build(p)
    answer = r.whole_worst_gap_ms - r.chunked_worst_gap_ms
    values = {
        "users": r.users,
        "model": r.model_name,
        "gpu": r.gpu,
        "prompt": r.prompt,
        "budget": budget,
        "decode_ms": r.decode_ms,
        "chunk_min_ms": r.chunk_step_ms_min,
        "chunk_max_ms": r.chunk_step_ms_max,
        "whole_tokens": r.whole_step_tokens,
        "whole_ms": r.whole_step_ms,
        "whole_gap_ms": r.whole_worst_gap_ms,
        "chunked_gap_ms": r.chunked_worst_gap_ms,
        "answer": answer,
    }
    return Drawn(
        prompt=section(TEXT, "exercise-gap-prompt", values),
        answer=float(answer),
        unit="ms",
        solution=section(TEXT, "exercise-gap-solution", values),
        rtol=0.02,
        atol=0.2,
        params={"budget": budget, "users": r.users, "prompt": r.prompt},
    )


EXERCISES = [
    ExerciseSpec(id="prompt_steps", title="Steps that carry the prompt", draw=draw_steps),
    ExerciseSpec(id="worst_gap", title="The worst gap, with and without chunking", draw=draw_gap),
]
