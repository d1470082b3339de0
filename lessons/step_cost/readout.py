"""What the step-cost lesson shows, by name: every number its text quotes and the curves its
charts draw, all computed by sim.cost in lesson.build()."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.selection import Selection


@dataclass(frozen=True, eq=False)
class Curves:
    """Cost-model parts on a grid of token counts: step_ms, memory_bound and each part's ms."""

    tokens: np.ndarray
    step_ms: np.ndarray
    memory_bound: np.ndarray
    parts_ms: dict[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class Readout(Selection):
    # the selection
    tp_phrase: str
    fits: bool
    memory_gib: float
    # the floor and the slope
    weight_gb: float
    weight_read_ms: float
    ridge_tokens: int
    one_ms: float
    small_tokens: int
    small_ms: float
    small_pct: float
    small_per_token_ms: float
    ref_tokens: int
    ref_ms: float
    ref_ratio: float
    # the learner's step
    n_tokens: int
    n_ms: float
    n_ms_with_kv: float
    memory_bound: bool
    decodes: int
    context_tokens: int
    kv_gb: float
    max_tokens: int
    # the back-of-the-envelope check (H100-SXM, Llama-3.1-8B)
    seed_weight_ms: float
    seed_2048_ms: float
    cal_weight_ms: float
    cal_2048_ms: float
    cal_ratio: float
    seed_ratio: float
    # what the charts draw
    prompt_only: Curves
    with_kv: Curves
    at_n: Curves  # two rows: prompt only, with the decodes
    anim: Curves
