"""Lesson "Why a step costs what it costs": its controls (Params) and build(p) -> Readout.

One vectorized cost-model call prices every step the lesson shows: the curve from 1 to 16,384
tokens with and without running decodes, the learner's step, the animation's grid and the token
counts of the measured profile, if the selection has one (lessons/step_cost/profiles.py). The
text's comparisons (a small and a large model, the other GPUs) are cached per selection.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from lessons.kit import shared
from lessons.kit.controls import Integer, Steps, control
from lessons.kit.figures import COST_PARTS
from lessons.kit.selection import selection
from lessons.kit.words import join
from lessons.step_cost import profiles
from lessons.step_cost.readout import Curves, Readout
from sim.cost import (
    ARCH_FAMILY,
    SEED_BW_FRACTION,
    SEED_FLOPS_FRACTION,
    Deployment,
    StepCosts,
    calibration,
    factors_for,
    linear_layers_ms,
    mixed_batch,
    ridge_tokens,
    step_costs,
    weight_read_ms,
)
from sim.hardware import get_gpu, gpu_keys
from sim.models import (
    GIB,
    expected_experts,
    get_model,
    kv_bytes_per_token,
    kv_pool,
    linear_shapes,
    model_keys,
    weight_read_bytes,
)

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
    gpu = dep.gpu_spec
    return {
        "seed_weight_ms": float(seed.step_ms[0]),
        "seed_2048_ms": float(seed.step_ms[1]),
        "cal_weight_ms": cal_weight,
        "cal_2048_ms": cal,
        "cal_ratio": cal / cal_weight,
        "seed_ratio": float(seed.step_ms[1]) / float(seed.step_ms[0]),
        "cal_tflops": factors_for(gpu).flops_efficiency * gpu.bf16_tflops,
        "seed_params_b": dep.model_spec.active_params_b,
        "seed_bw_tbps": SEED_BW_FRACTION * gpu.bw_tbps,
        "seed_tflops": SEED_FLOPS_FRACTION * gpu.bf16_tflops,
    }


def linear_bytes(model_key: str, tp: int, dtype: str) -> float:
    """Weight bytes the linear layers of all layers read at one token, on one GPU (MoE: the
    experts one token touches), the bytes behind a one-token linear-layer time."""
    model = get_model(model_key)
    s = linear_shapes(model, tp)
    experts = float(expected_experts(model, 1))
    per_layer = s["qkv"][0] * s["qkv"][1] + s["o"][0] * s["o"][1]
    per_layer += experts * (s["gate_up"][0] * s["gate_up"][1] + s["down"][0] * s["down"][1])
    return model.num_layers * per_layer * (1 if dtype == "fp8" else 2)


@cache
def linear_rise_pct(gpu: str, model: str, tp: int, dtype: str, tokens: int) -> float:
    """How much more the linear layers of a step of `tokens` tokens cost than of one (%)."""
    lin = linear_layers_ms(Deployment(gpu, model, tp, dtype), [1, tokens])
    return float(lin[1] / lin[0] - 1) * 100


def _flatness(p: Params, tokens: int) -> dict:
    """The linear layers' rise from 1 to `tokens` tokens for the catalog's smallest and largest
    dense models on this GPU, and for this model on every GPU of the catalog."""
    dense = [k for k in model_keys() if not get_model(k).is_moe]
    small = min(dense, key=lambda k: get_model(k).total_params_b)
    large = max(dense, key=lambda k: get_model(k).total_params_b)
    gpus = [g for g in gpu_keys() if p.dtype == "bf16" or get_gpu(g).has_fp8]
    rise = {g: linear_rise_pct(g, p.model, p.tp, p.dtype, tokens) for g in gpus}
    lo, hi = min(rise, key=rise.__getitem__), max(rise, key=rise.__getitem__)
    small_pct = linear_rise_pct(p.gpu, small, p.tp, p.dtype, tokens)
    large_pct = linear_rise_pct(p.gpu, large, p.tp, p.dtype, tokens)
    return {
        "small_lin_pct": rise[p.gpu],
        "small_model": small,
        "small_model_lin_pct": small_pct,
        "large_model": large,
        "large_model_lin_pct": large_pct,
        "large_flatter": large_pct < small_pct,
        "gpu_count": len(gpus),
        "gpu_lo": lo,
        "gpu_lo_lin_pct": rise[lo],
        "gpu_hi": hi,
        "gpu_hi_lin_pct": rise[hi],
    }


def _bandwidth(p: Params, lin1_ms: float) -> dict:
    """Shares of the datasheet bandwidth: the cost model's streaming rate, its one-token linear
    layers, and what the measured profiles of this GPU reached at one token (if it has any)."""
    gpu = get_gpu(p.gpu)
    peak = gpu.bw_tbps * 1e12
    measured = {r["gpu"]: r for r in calibration()["batch1_bandwidth"]}.get(p.gpu)
    fitted_on = calibration()["gemm"][ARCH_FAMILY[gpu.arch]]["fitted_on"]
    return {
        "bw_tbps": gpu.bw_tbps,
        "stream_pct": factors_for(gpu).bw_efficiency * 100,
        "lin1_ms": lin1_ms,
        "model_b1_pct": linear_bytes(p.model, p.tp, p.dtype) / (lin1_ms * 1e-3) / peak * 100,
        "gpu_profiled": measured is not None,
        "b1_lo_pct": measured["min_share"] * 100 if measured else 0.0,
        "b1_hi_pct": measured["max_share"] * 100 if measured else 0.0,
        "b1_models": measured["models"] if measured else 0,
        "fitted_on": join(list(fitted_on)),
        "sm_count": gpu.sm_count,
    }


def _measured(
    p: Params, profile: profiles.Profile | None, model_ms: np.ndarray, small_tokens: int
) -> dict:
    """The profile's points (linear layers of all layers, ms), the cost model at the same token
    counts, and the error between them; empty and zero without a profile."""
    profiled = join(list(profiles.profiled_gpus()))
    if profile is None:
        empty = np.zeros(0)
        return {
            "has_profile": False,
            "num_layers": get_model(p.model).num_layers,
            "profiled_gpus": profiled,
            "profile_model": "",
            "profile_tokens": np.zeros(0, dtype=np.int64),
            "profile_ms": empty,
            "profile_model_ms": empty,
            "profile_max_tokens": 0,
            "profile_points": 0,
            "err_median_pct": 0.0,
            "err_worst_pct": 0.0,
            "meas1_ms": 0.0,
            "meas_b1_pct": 0.0,
            "meas_small_pct": 0.0,
        }
    layers = get_model(p.model).num_layers
    measured = profile.per_layer_ms * layers
    rel = np.abs(model_ms / measured - 1) * 100
    one = float(measured[profile.tokens == 1][0])
    at_small = float(np.interp(small_tokens, profile.tokens, measured))
    peak = get_gpu(p.gpu).bw_tbps * 1e12
    return {
        "has_profile": True,
        "num_layers": layers,
        "profiled_gpus": profiled,
        "profile_model": profile.model,
        "profile_tokens": profile.tokens,
        "profile_ms": measured,
        "profile_model_ms": model_ms,
        "profile_max_tokens": int(profile.tokens.max()),
        "profile_points": len(profile.tokens),
        "err_median_pct": float(np.median(rel)),
        "err_worst_pct": float(rel.max()),
        "meas1_ms": one,
        "meas_b1_pct": linear_bytes(p.model, p.tp, p.dtype) / (one * 1e-3) / peak * 100,
        "meas_small_pct": (at_small / one - 1) * 100,
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
    profile = profiles.find(p.gpu, p.model, p.tp, p.dtype)
    measured_at = profile.tokens if profile is not None else np.zeros(0, dtype=np.int64)
    prompt, kv, at_n, at_n_kv, ref, anim, small, at_profile = _priced(
        dep,
        [
            (xs, 0, 0),
            (xs, p.decodes, p.context_tokens),
            (n, 0, 0),
            (n, p.decodes, p.context_tokens),
            (np.array([REF_TOKENS]), 0, 0),
            (anim_xs, 0, 0),
            (np.array([1, small_tokens]), 0, 0),
            (measured_at, 0, 0),
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
    weight_gb = weight_read_bytes(model, p.dtype, p.tp, tokens=1) / 1e9
    pool = kv_pool(p.gpu, p.model, tp=p.tp, dtype=p.dtype)
    # the KV cache stays 16-bit with FP8 weights, as sim.cost prices it
    kv_per_seq_gb = p.context_tokens * kv_bytes_per_token(model, "bf16", p.tp) / 1e9
    kv_room_gb = pool.kv_pool_gib * GIB / 1e9  # what vLLM would give the cache on each GPU
    return Readout(
        **selection(p, dtype=p.dtype),
        fits=pool.fits,
        memory_gib=gpu.memory_gib,
        weight_gb=weight_gb,
        weight_read_ms=floor,
        **_bandwidth(p, float(small.parts_ms["linear_ms"][0])),
        ridge_tokens=int(round(ridge)),
        one_ms=one_ms,
        small_tokens=small_tokens,
        small_ms=small_ms,
        small_pct=(small_ms / one_ms - 1) * 100,
        small_per_token_ms=(small_ms - one_ms) / (small_tokens - 1),
        **_flatness(p, small_tokens),
        moe=model.is_moe,
        moe_small_gb=weight_read_bytes(model, p.dtype, p.tp, tokens=small_tokens) / 1e9,
        ref_tokens=REF_TOKENS,
        ref_ms=ref_ms,
        ref_ratio=ref_ms / floor,
        n_tokens=p.tokens,
        n_ms=float(at_n.step_ms[0]),
        n_ms_with_kv=float(at_n_kv.step_ms[0]),
        memory_bound=bool(at_n.memory_bound[0]),
        decodes=p.decodes,
        context_tokens=p.context_tokens,
        kv_gb=p.decodes * kv_per_seq_gb,
        no_decodes=p.decodes == 0,
        some_decodes=p.decodes > 0,
        kv_room_gb=kv_room_gb,
        kv_too_big=pool.fits and p.decodes * kv_per_seq_gb > kv_room_gb,
        kv_fit_seqs=int(kv_room_gb // kv_per_seq_gb) if kv_per_seq_gb else 0,
        max_tokens=MAX_TOKENS,
        **_seed_check(),
        **_measured(p, profile, at_profile.parts_ms["linear_ms"], small_tokens),
        prompt_only=prompt,
        with_kv=kv,
        at_n=both,
        anim=anim,
    )
