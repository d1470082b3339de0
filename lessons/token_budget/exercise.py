"""Exercises of the lesson "One token budget", each answer computed by a scheduler replay.

Both use the lesson's own scenario (`figures.simulate`): `decodes` requests are decoding when a
long prompt arrives. `first_chunk` asks how many prompt tokens are scheduled in its first step;
`prompt_steps` asks in how many steps its prompt is read. Seed 0 is the seed text's Fig. 8.2
(budget 2,048, 8 decodes, 4,096 tokens: 2,040 and 3 steps); other seeds draw new numbers.
"""

from __future__ import annotations

import numpy as np

from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.token_budget.figures import Params, long_chunks, simulate

BUDGETS = (512, 1024, 2048, 4096, 8192)
GPU = "H100-SXM"  # its catalog KV pool holds every draw; no made-up pool size


def draw_params(seed: int) -> Params:
    """The scenario of one draw: seed 0 is Fig. 8.2; the rest are random but always feasible."""
    if seed == 0:
        return Params()
    rng = np.random.default_rng(seed)
    budget = int(rng.choice(BUDGETS))
    decodes = int(rng.integers(1, min(budget // 4, 200) + 1))
    chunk = budget - decodes
    prompt = int(rng.integers(1, 12)) * chunk + int(rng.integers(1, chunk))
    return Params(
        gpu=GPU, budget=budget, max_num_seqs=min(1024, budget), decodes=decodes, prompt=prompt
    )


def _intro(p: Params) -> str:
    return (
        f"The token budget is **{p.budget:,}** tokens per step. **{p.running}** requests are "
        f"decoding, one token each per step, when a prompt of **{p.prompt:,}** tokens arrives "
        "(no prefix caching, no speculative decoding)."
    )


def first_chunk(seed: int) -> Drawn:
    """Prompt tokens in the new request's first step."""
    p = draw_params(seed)
    _, tokens = long_chunks(simulate(p))
    answer = int(tokens[0])
    return Drawn(
        prompt=_intro(p) + " How many of its prompt tokens are scheduled in its first step?",
        answer=float(answer),
        unit="tokens",
        solution=(
            f"Running requests are served first: {p.running} tokens. The prompt gets the rest "
            f"of the budget, {p.budget:,} − {p.running} = **{answer:,}** tokens."
        ),
        rtol=0.0,
        params={"budget": p.budget, "decodes": p.running, "prompt": p.prompt},
    )


def prompt_steps(seed: int) -> Drawn:
    """Steps that carry a chunk of the new prompt."""
    p = draw_params(seed)
    _, tokens = long_chunks(simulate(p))
    answer = int(tokens.shape[0])
    chunk = p.budget - p.running
    last = int(tokens[-1])
    return Drawn(
        prompt=_intro(p) + " In how many steps is its prompt read (the steps that carry a chunk)?",
        answer=float(answer),
        unit="steps",
        solution=(
            f"Each step leaves {p.budget:,} − {p.running} = {chunk:,} tokens for the prompt. "
            f"{p.prompt:,} / {chunk:,} rounds up to **{answer}** steps: "
            f"{answer - 1} full chunks and a last one of {last:,} tokens. That last step also "
            "samples the first token of the answer."
        ),
        rtol=0.0,
        params={"budget": p.budget, "decodes": p.running, "prompt": p.prompt},
    )


EXERCISES = (
    ExerciseSpec(id="first_chunk", title="The first chunk", draw=first_chunk),
    ExerciseSpec(id="prompt_steps", title="Steps to read a prompt", draw=prompt_steps),
)
