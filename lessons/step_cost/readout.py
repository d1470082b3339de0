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
    fits: bool
    memory_gib: float
    # the floor and the slope
    weight_gb: float
    weight_read_ms: float
    # the bandwidth: datasheet, the model's streaming rate, the one-token linear layers
    bw_tbps: float
    stream_pct: float  # the cost model's streaming rate, % of the datasheet
    lin1_ms: float  # linear layers of a one-token step, cost model
    model_b1_pct: float  # their bytes over that time, % of the datasheet
    gpu_profiled: bool  # measured profiles exist for this GPU
    b1_lo_pct: float  # measured one-token share of the datasheet, TP 1, 7B and up (range)
    b1_hi_pct: float
    b1_models: int
    fitted_on: str  # the GPUs this GPU's factors were fitted on
    sm_count: int
    ridge_tokens: int
    one_ms: float
    small_tokens: int
    small_ms: float
    small_pct: float  # the step at small_tokens over one token, % more
    small_per_token_ms: float
    # how flat the floor stays: linear layers at small_tokens over one token, % more
    small_lin_pct: float
    small_model: str  # the catalog's smallest and largest dense models, same GPU, TP, dtype
    small_model_lin_pct: float
    large_model: str
    large_model_lin_pct: float
    large_flatter: bool  # the largest model's rise is below the smallest's
    gpu_count: int  # this model on each of the catalog's GPUs (with this dtype)
    gpu_lo: str
    gpu_lo_lin_pct: float
    gpu_hi: str
    gpu_hi_lin_pct: float
    moe: bool
    moe_small_gb: float  # weight bytes a step of small_tokens reads (more experts touched)
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
    no_decodes: bool  # no running request: the step reads no KV cache
    some_decodes: bool
    kv_room_gb: float  # the KV cache vLLM would have on each GPU
    kv_too_big: bool  # the running requests' KV cache is larger than that
    kv_fit_seqs: int  # how many such requests it holds
    max_tokens: int
    # the back-of-the-envelope check (H100-SXM, Llama-3.1-8B)
    seed_weight_ms: float
    seed_2048_ms: float
    cal_weight_ms: float
    cal_2048_ms: float
    cal_ratio: float
    seed_ratio: float
    seed_params_b: float  # the seed's inputs: parameters (billions), TB/s, TFLOP/s
    seed_bw_tbps: float
    seed_tflops: float
    cal_tflops: float  # the calibrated GEMM rate of H100-SXM (BF16), TFLOP/s
    # the measured profile of this selection (sim/data/vidur_linear_ops.csv), if any
    has_profile: bool
    num_layers: int
    profiled_gpus: str
    profile_model: str
    profile_tokens: np.ndarray
    profile_ms: np.ndarray  # linear layers of all layers, measured (per-layer medians x layers)
    profile_model_ms: np.ndarray  # the cost model's linear layers at the same token counts
    profile_max_tokens: int
    profile_points: int
    err_median_pct: float  # |model / measured - 1| over the profile's points
    err_worst_pct: float
    meas1_ms: float  # measured linear layers at one token
    meas_b1_pct: float  # their bytes over that time, % of the datasheet
    meas_small_pct: float  # measured linear layers at small_tokens over one token, % more
    # what the charts draw
    prompt_only: Curves
    with_kv: Curves
    at_n: Curves  # two rows: prompt only, with the decodes
    anim: Curves
