"""What every lesson's Readout says about the selection, computed once: the GPU (key and name),
the model, the weights as shown and the tensor-parallel size. A Readout inherits `Selection`
and its build passes `**selection(p)`; one of a run on a scheduler configuration inherits
`Scheduled` and passes `**scheduled(p, config, weights_fit)`."""

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


@dataclass(frozen=True, eq=False)
class Scheduled(Selection):
    """A Selection served by one scheduler configuration: whether the weights fit the GPU, the
    KV pool in blocks and the two budgets the run used."""

    weights_fit: bool
    num_gpu_blocks: int  # vLLM's count, the null block included
    usable_blocks: int  # the blocks that hold tokens: all but the null block
    budget: int
    max_num_seqs: int


def scheduled(
    p: Any, config: Any, weights_fit: bool, *, dtype: str | None = None
) -> dict[str, Any]:
    """The Scheduled fields of a Params run with a sim SchedulerConfig."""
    return {
        **selection(p, dtype=dtype),
        "weights_fit": weights_fit,
        "num_gpu_blocks": config.num_gpu_blocks,
        "usable_blocks": config.kv_blocks_usable,
        "budget": config.max_num_batched_tokens,
        "max_num_seqs": config.max_num_seqs,
    }


def prefixed(prefix: str, source: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """Readout fields `<prefix>_<name>` copied from `source`'s attributes: one lane's or one
    run's numbers, where a Readout holds several side by side."""
    return {f"{prefix}_{name}": getattr(source, name) for name in names}
