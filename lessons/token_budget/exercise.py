"""Exercises of the lesson "One token budget", each answer computed by the lesson's own replay.

Both build the lesson's scenario (`lesson.build`, sim.scenarios.stream_then_cached_prompt):
`decodes` requests are decoding when a long prompt arrives. `first_chunk` asks how many prompt
tokens are scheduled in its first step (seed 0 is the seed text's Fig. 8.2: budget 2,048, 8
decodes, 4,096 tokens: 2,040). `cached_prefix` asks how many of the prompt's tokens are left to
compute when an earlier conversation carried its first tokens and prefix caching (vLLM's
default) finds them: the answer is the replay's own prefix-cache hits (seed 0: the whole 4,096
tokens were carried, and the cache gives back 4,080 of them). Other seeds draw new numbers.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from lessons.token_budget.lesson import Params, build
from lessons.token_budget.readout import Readout

TEXT = ROOT / "token_budget" / "text.md"
BUDGETS = (512, 1024, 2048, 4096, 8192)
GPU = "H100-SXM"  # its catalog KV pool holds every draw; no made-up pool size
CACHED_SHARES = (25, 50, 75, 100)  # % of the prompt an earlier conversation carried


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
    return Drawn.from_text(
        TEXT,
        "first-chunk",
        values,
        r.first_chunk,
        "tokens",
        rtol=0.0,
        params={"budget": r.budget, "decodes": r.running, "prompt": r.prompt},
    )


def cached_params(seed: int) -> Params:
    """A draw with a cached prefix: seed 0 carries the whole Fig. 8.2 prompt; the rest share
    part of a random prompt (so that the shared tokens rarely end on a block boundary)."""
    share = 100 if seed == 0 else CACHED_SHARES[seed % len(CACHED_SHARES)]
    return replace(draw_params(seed), cached_pct=share)


def cached_prefix(seed: int) -> Drawn:
    """Prompt tokens left to compute after the prefix cache's hits."""
    r = build(cached_params(seed))
    bs = r.block_size
    values = {
        "prompt": r.prompt,
        "cached": r.cached,
        "block_size": bs,
        "cached_blocks": r.cached // bs,
        "before_last": (r.prompt - 1) // bs,
        "hit_blocks": r.hit_tokens // bs,
        "hit": r.hit_tokens,
        "answer": r.needed,
    }
    return Drawn.from_text(
        TEXT,
        "cached",
        values,
        r.needed,
        "tokens",
        rtol=0.0,
        params={"prompt": r.prompt, "cached": r.cached, "budget": r.budget},
    )


EXERCISES = (
    ExerciseSpec(id="first_chunk", title="The first chunk", draw=first_chunk),
    ExerciseSpec(id="cached_prefix", title="What a cached prefix leaves", draw=cached_prefix),
)
