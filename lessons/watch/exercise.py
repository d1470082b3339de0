"""Exercise of the lesson "What to watch", its answer computed by the scheduler replay.

`hit_rate`: requests that share a system prompt, one after another, with prefix caching on;
what hit rate does vLLM report? The replay runs the engine's prefix cache (whole blocks only)
and reads the hits from the run. Seed 0 is the default draw; the words are in text.md.
"""

from __future__ import annotations

import numpy as np

from lessons.course import lesson
from lessons.quiz.exercise import Drawn, ExerciseSpec
from sim.config import SchedulerConfig
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = lesson("watch").text_path
BLOCK = 16
OUTPUT = 4


def _draw(seed: int) -> tuple[int, int, int]:
    """(requests, system prompt tokens, own tokens) of a draw."""
    if seed == 0:
        return 4, 1000, 200
    rng = np.random.default_rng(seed)
    return (
        int(rng.integers(3, 9)),
        int(rng.integers(20, 200)) * 10 + 5,
        int(rng.integers(2, 60)) * 10,
    )


def hit_rate(seed: int) -> Drawn:
    """The run's hit tokens over its prompt tokens, in percent."""
    count, system, own = _draw(seed)
    config = SchedulerConfig(
        max_num_batched_tokens=8192,
        max_num_seqs=8,
        max_model_len=8192,
        num_gpu_blocks=4096,
        block_size=BLOCK,
        enable_prefix_caching=True,
    )
    steps = 1 + np.arange(count) * (OUTPUT + 1)  # each arrives after the one before finished
    wl = Workload.build(
        [system + own] * count,
        [OUTPUT] * count,
        arrival_step=steps.tolist(),
        prefix_id=[0] * count,
        prefix_tokens=[system] * count,
    )
    run = run_steps(config, wl)
    hits, queries = run.prefix_cache.hits, run.prefix_cache.queries  # vLLM's two counters
    answer = hits / queries * 100
    full = system // BLOCK * BLOCK
    values = {
        "count": count,
        "system": system,
        "own": own,
        "block_size": BLOCK,
        "full": full,
        "blocks": system // BLOCK,
        "rest": system - full,
        "prompt": system + own,
        "queries": queries,
        "later": count - 1,
        "hits": hits,
        "answer": answer,
    }
    return Drawn.from_text(
        TEXT,
        "hits",
        values,
        float(round(answer, 1)),
        "%",
        rtol=0.0,
        atol=0.1,
        params={"count": count, "system": system, "own": own},
    )


EXERCISES = (ExerciseSpec(id="hit_rate", title="What the hit rate says", draw=hit_rate),)
