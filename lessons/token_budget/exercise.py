"""Exercises of the lesson "One token budget", each answer computed by the lesson's own replay.

Both build the lesson's scenario (`lesson.build`, sim.scenarios.stream_then_prompt): `decodes`
requests are decoding when a long prompt arrives. `first_chunk` asks how many prompt tokens are
scheduled in its first step; `prompt_steps` asks in how many steps its prompt is read. Seed 0 is
the seed text's Fig. 8.2 (budget 2,048, 8 decodes, 4,096 tokens: 2,040 and 3 steps); other seeds
draw new numbers.
"""

from __future__ import annotations

import numpy as np

from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from lessons.token_budget.lesson import Params, build
from lessons.token_budget.readout import Readout

TEXT = ROOT / "token_budget" / "text.md"
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
        gpu=GPU,
        model="Llama-3.1-8B",
        vllm_defaults=False,
        max_num_batched_tokens=budget,
        max_num_seqs=min(1024, budget),
        decodes=decodes,
        prompt=prompt,
    )


def _drawn(seed: int) -> tuple[Readout, dict]:
    r = build(draw_params(seed))
    values = {"budget": r.budget, "running": r.running, "prompt": r.prompt}
    return r, {**values, "intro": section(TEXT, "exercise-intro", values)}


def first_chunk(seed: int) -> Drawn:
    """Prompt tokens in the new request's first step."""
    r, values = _drawn(seed)
    values["answer"] = r.first_chunk
    return Drawn(
        prompt=section(TEXT, "exercise-first-chunk-prompt", values),
        answer=float(r.first_chunk),
        unit="tokens",
        solution=section(TEXT, "exercise-first-chunk-solution", values),
        rtol=0.0,
        params={"budget": r.budget, "decodes": r.running, "prompt": r.prompt},
    )


def prompt_steps(seed: int) -> Drawn:
    """Steps that carry a chunk of the new prompt."""
    r, values = _drawn(seed)
    values |= {
        "answer": r.num_chunks,
        "chunk": r.budget - r.running,
        "full": r.num_chunks - 1,
        "last": r.last_chunk,
    }
    return Drawn(
        prompt=section(TEXT, "exercise-steps-prompt", values),
        answer=float(r.num_chunks),
        unit="steps",
        solution=section(TEXT, "exercise-steps-solution", values),
        rtol=0.0,
        params={"budget": r.budget, "decodes": r.running, "prompt": r.prompt},
    )


EXERCISES = (
    ExerciseSpec(id="first_chunk", title="The first chunk", draw=first_chunk),
    ExerciseSpec(id="prompt_steps", title="Steps to read a prompt", draw=prompt_steps),
)
