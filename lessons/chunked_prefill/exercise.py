"""The exercise of the chunked-prefill lesson, drawn from a seed and answered by the simulator.

"The worst gap, with and without chunking": given the cost model's prices of the steps involved,
by how much does chunking shorten the longest wait between two tokens? The answer is the
difference of the two lanes' worst gaps in lesson.build(), the same timed runs the lesson's
charts show. Seed 0 is the seed text's example: a budget of 2,048, 48 users streaming and an
8,000-token prompt.

The prompt and the solution are sections of text.md. Draws are cached: the practice page draws
every exercise on every rerun.
"""

from __future__ import annotations

import random
from functools import lru_cache

from lessons.chunked_prefill.lesson import Params, build
from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec

TEXT = ROOT / "chunked_prefill" / "text.md"
BUDGETS = (1024, 2048, 4096)


def _draw_numbers(seed: int) -> tuple[int, int, int]:
    if seed == 0:
        return 2048, 48, 8000
    rng = random.Random(seed)
    budget = rng.choice(BUDGETS)
    users = rng.randrange(4, min(budget // 2, 200) + 1, 4)
    prompt = rng.randrange(budget, 40_001, 100)
    return budget, users, prompt


@lru_cache(maxsize=64)
def draw_gap(seed: int) -> Drawn:
    """How much chunking shortens the worst wait between tokens."""
    budget, users, prompt = _draw_numbers(seed)
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
    return Drawn.from_text(
        TEXT,
        "gap",
        values,
        answer,
        "ms",
        atol=0.2,
        params={"budget": budget, "users": r.users, "prompt": r.prompt},
    )


EXERCISES = [
    ExerciseSpec(id="worst_gap", title="The worst gap, with and without chunking", draw=draw_gap),
]
