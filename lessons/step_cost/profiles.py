"""Measured linear-layer profiles (Vidur, sim/data/vidur_linear_ops.csv) for the step-cost chart.

Why: the chart overlays what real kernels took next to what the cost model says, where such a
measurement exists. A profile fits a selection when the GPU and TP size are the same and the
four per-layer matrices (QKV, O, gate/up, down) have the same shapes on one GPU; the profiles
are 16-bit kernels of dense models, so FP8 weights and mixture-of-experts models have none.
The CSV is read once per process (functools.cache).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from sim.calibrate import OPS
from sim.hardware import DATA_DIR
from sim.models import get_model, linear_shapes

CSV = DATA_DIR / "vidur_linear_ops.csv"

Shapes = tuple[tuple[int, int], ...]


@dataclass(frozen=True, eq=False)
class Profile:
    """One measured GPU/model/TP group: per-layer linear time (ms) at each token count."""

    gpu: str
    model: str  # the profiled model's name (may differ from the catalog's, same shapes)
    tp: int
    tokens: np.ndarray  # int64, ascending
    per_layer_ms: np.ndarray  # QKV + O + gate/up + down medians, one layer


def _row_shapes(heads: int, kv_heads: int, hidden: int, inter: int, gated: bool, tp: int) -> Shapes:
    """(N out, K in) of QKV, O, gate/up and down on one GPU, as sim.models.linear_shapes."""
    hd = hidden // heads
    q, kv = heads // tp * hd, max(kv_heads // tp, 1) * hd
    up = 2 * inter // tp if gated else inter // tp
    return ((q + 2 * kv, hidden), (hidden, q), (up, hidden), (hidden, inter // tp))


@cache
def _index() -> dict[tuple[str, int, Shapes], tuple[Profile, ...]]:
    """Every profile, by (GPU, TP, shapes); read from the CSV once."""
    df = pd.read_csv(CSV).sort_values(["gpu", "model", "tp", "num_tokens"], kind="stable")
    ms = df[list(OPS)].to_numpy(dtype=np.float64).sum(axis=1)
    tokens = df["num_tokens"].to_numpy(dtype=np.int64)
    shape_cols = ["num_attention_heads", "num_kv_heads", "hidden_size", "intermediate_size"]
    shape_values = df[shape_cols].to_numpy(dtype=np.int64)
    gated = df["gated_mlp"].to_numpy(dtype=bool)
    out: dict[tuple[str, int, Shapes], list[Profile]] = {}
    for (gpu, model, tp), rows in df.groupby(["gpu", "model", "tp"], sort=True).indices.items():
        heads, kv_heads, hidden, inter = (int(v) for v in shape_values[rows[0]])
        shapes = _row_shapes(heads, kv_heads, hidden, inter, bool(gated[rows[0]]), int(tp))
        profile = Profile(
            gpu=str(gpu), model=str(model), tp=int(tp), tokens=tokens[rows], per_layer_ms=ms[rows]
        )
        out.setdefault((str(gpu), int(tp), shapes), []).append(profile)
    return {k: tuple(v) for k, v in out.items()}


@cache
def profiled_gpus() -> tuple[str, ...]:
    """The GPUs with measured profiles."""
    return tuple(sorted({gpu for gpu, _, _ in _index()}))


def model_shapes(model_key: str, tp: int) -> Shapes:
    s = linear_shapes(get_model(model_key), tp)
    return tuple(s[name] for name in ("qkv", "o", "gate_up", "down"))


def find(gpu: str, model_key: str, tp: int, dtype: str) -> Profile | None:
    """The measured profile of this selection, or None. Several profiled models can share the
    shapes: the one of the same name wins, else the one with the most token counts."""
    model = get_model(model_key)
    if dtype != "bf16" or model.is_moe:
        return None
    found = _index().get((gpu, tp, model_shapes(model_key, tp)), ())
    if not found:
        return None
    return min(found, key=lambda p: (p.model != model_key, -len(p.tokens), p.model))
