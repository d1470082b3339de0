"""What every lesson's Readout says about the selection, computed once: the GPU (key and name),
the model, the weights as shown and the tensor-parallel size. A Readout inherits `Selection`
and its build passes `**selection(p)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.hardware import get_gpu


@dataclass(frozen=True, eq=False)
class Selection:
    gpu: str
    gpu_name: str
    model: str
    model_name: str
    dtype: str  # as shown: "BF16" or "FP8"
    tp: int


def selection(p: Any, *, dtype: str | None = None) -> dict[str, Any]:
    """The Selection fields of a Params (`dtype`: the weights the run really used, e.g. after
    the FP8 fallback; a lesson without a weights control shows BF16)."""
    shown = dtype or getattr(p, "dtype", "bf16")
    return {
        "gpu": p.gpu,
        "gpu_name": get_gpu(p.gpu).name,
        "model": p.model,
        "model_name": p.model,
        "dtype": shown.upper(),
        "tp": getattr(p, "tp", 1),
    }


@dataclass(frozen=True, eq=False)
class UsedLimits:
    """The limits a run used: vLLM's defaults for the GPU (`vllm_defaults`) or the learner's."""

    vllm_defaults: bool
    budget: int
    max_num_seqs: int


def used_limits(p: Any, budget: int, seqs: int) -> dict[str, Any]:
    """The UsedLimits fields for a Params with the kit's limit controls."""
    return {"vllm_defaults": p.vllm_defaults, "budget": int(budget), "max_num_seqs": int(seqs)}
