"""Lesson "Why a step costs what it costs": its controls (Params) and build(p) -> Readout.

One vectorized cost-model call prices every step the lesson shows: the curve from 1 to 16,384
tokens with and without running decodes, the learner's step, and the animation's grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit import shared
from lessons.kit.controls import Integer, Steps, control
from lessons.kit.figures import COST_PARTS
from lessons.kit.selection import selection
from lessons.step_cost.readout import Curves, Readout
from sim.cost import Deployment, StepCosts, mixed_batch, ridge_tokens, step_costs, weight_read_ms
from sim.hardware import get_gpu
from sim.models import get_model, kv_bytes_per_token, kv_pool, weight_read_bytes

PREFIX = "cost"
MAX_TOKENS = 16_384
REF_TOKENS = 2_048
TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
CONTEXTS = (0, 128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class Params(shared.Deployment):
    """Everything the lesson's controls set."""

    tokens: int = control(2_048, Steps("Prompt tokens in the step", options=TOKENS, main=True))
    decodes: int = control(64, Integer("Running decodes", lo=0, hi=1024))
    context_tokens: int = control(
        2_048, Steps("KV context per decode (tokens)", key="context", options=CONTEXTS)
    )


def grid(max_tokens: int = MAX_TOKENS, points: int = 97) -> np.ndarray:
    """Token counts on a log scale from 1 to `max_tokens`."""
    return np.unique(np.geomspace(1, max_tokens, points).round().astype(np.int64))


def _curves(costs: StepCosts, tokens: np.ndarray, rows: slice) -> Curves:
    return Curves(
        tokens=tokens,
        step_ms=np.asarray(costs.step_ms)[rows],
        memory_bound=np.asarray(costs.memory_bound)[rows],
        parts_ms={name: np.asarray(getattr(costs, name))[rows] for name, _, _ in COST_PARTS},
    )


def _priced(dep: Deployment, batches: list[tuple[np.ndarray, int, int]]) -> list[Curves]:
    """Price several batches of steps in one cost-model call."""
    chunks = [mixed_batch(tokens, d, ctx) for tokens, d, ctx in batches]
    merged = {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    costs = step_costs(dep, **merged)
    ends = np.cumsum([0] + [len(t) for t, _, _ in batches])
    return [_curves(costs, t, slice(ends[i], ends[i + 1])) for i, (t, _, _) in enumerate(batches)]


def _seed_check() -> dict[str, float]:
    """The seed's round numbers against the calibrated model, always on H100-SXM + 8B."""
    dep = Deployment(gpu="H100-SXM", model="Llama-3.1-8B")
    seed = step_costs(dep, **mixed_batch(np.array([1, REF_TOKENS]), 0, 0), assumptions="seed")
    cal = float(step_costs(dep, **mixed_batch(np.array([REF_TOKENS]), 0, 0)).step_ms[0])
    cal_weight = weight_read_ms(dep)
    return {
        "seed_weight_ms": float(seed.step_ms[0]),
        "seed_2048_ms": float(seed.step_ms[1]),
        "cal_weight_ms": cal_weight,
        "cal_2048_ms": cal,
        "cal_ratio": cal / cal_weight,
        "seed_ratio": float(seed.step_ms[1]) / float(seed.step_ms[0]),
    }


def build(p: Params) -> Readout:
    """Every number and curve of the lesson for one selection."""
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype)
    xs = grid()
    anim_xs = np.union1d(grid(points=40), [p.tokens])  # it opens at the learner's step
    ridge = ridge_tokens(dep)
    # A step well below the ridge (a power of two at most half of it): the text quotes its price.
    small_tokens = int(2 ** np.clip(np.floor(np.log2(ridge / 2)), 3, 8))
    n = np.array([p.tokens])
    prompt, kv, at_n, at_n_kv, ref, anim, small = _priced(
        dep,
        [
            (xs, 0, 0),
            (xs, p.decodes, p.context_tokens),
            (n, 0, 0),
            (n, p.decodes, p.context_tokens),
            (np.array([REF_TOKENS]), 0, 0),
            (anim_xs, 0, 0),
            (np.array([1, small_tokens]), 0, 0),
        ],
    )
    both = Curves(
        tokens=np.array([p.tokens, p.tokens]),
        step_ms=np.concatenate([at_n.step_ms, at_n_kv.step_ms]),
        memory_bound=np.concatenate([at_n.memory_bound, at_n_kv.memory_bound]),
        parts_ms={
            k: np.concatenate([at_n.parts_ms[k], at_n_kv.parts_ms[k]]) for k in at_n.parts_ms
        },
    )
    model, gpu = get_model(p.model), get_gpu(p.gpu)
    floor = weight_read_ms(dep)
    one_ms, small_ms = (float(v) for v in small.step_ms)
    ref_ms = float(ref.step_ms[0])
    return Readout(
        **selection(p, dtype=p.dtype),
        tp_phrase="" if p.tp == 1 else f", split over {p.tp} GPUs",
        fits=kv_pool(p.gpu, p.model, tp=p.tp, dtype=p.dtype).fits,
        memory_gib=gpu.memory_gib,
        weight_gb=weight_read_bytes(model, p.dtype, p.tp, tokens=1) / 1e9,
        weight_read_ms=floor,
        ridge_tokens=int(round(ridge)),
        one_ms=one_ms,
        small_tokens=small_tokens,
        small_ms=small_ms,
        small_pct=(small_ms / one_ms - 1) * 100,
        small_per_token_ms=(small_ms - one_ms) / (small_tokens - 1),
        ref_tokens=REF_TOKENS,
        ref_ms=ref_ms,
        ref_ratio=ref_ms / floor,
        n_tokens=p.tokens,
        n_ms=float(at_n.step_ms[0]),
        n_ms_with_kv=float(at_n_kv.step_ms[0]),
        memory_bound=bool(at_n.memory_bound[0]),
        decodes=p.decodes,
        context_tokens=p.context_tokens,
        kv_gb=p.decodes * p.context_tokens * kv_bytes_per_token(model, p.dtype, p.tp) / 1e9,
        max_tokens=MAX_TOKENS,
        **_seed_check(),
        prompt_only=prompt,
        with_kv=kv,
        at_n=both,
        anim=anim,
    )
