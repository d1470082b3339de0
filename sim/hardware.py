"""GPU catalog (sim/data/gpus.csv) and vLLM's default token budget and max_num_seqs rules.

Why here: every other part of the simulator needs the same few facts about a GPU (memory as CUDA
reports it, bandwidth, dense FLOPs), and vLLM's defaults depend only on those facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from sim.errors import SimInputError

DATA_DIR = Path(__file__).parent / "data"
USAGES = ("server", "llm")


@dataclass(frozen=True)
class GPU:
    """One GPU model. Bandwidth and FLOPs are peak datasheet values (dense, not 2:4 sparse)."""

    key: str
    name: str
    memory_gib: float  # nominal (box label)
    cuda_memory_gib: float  # what CUDA reports; vLLM's default rules and KV sizing use this
    bw_tbps: float  # peak DRAM bandwidth, TB/s (1e12 bytes/s)
    bf16_tflops: float  # dense BF16/FP16 tensor-core peak, TFLOP/s
    fp8_tflops: float | None  # dense FP8 peak; None where the chip has no FP8 tensor cores
    arch: str  # ampere | ada | hopper | blackwell | cdna3 (chooses the calibrated factors)
    sm_count: int  # streaming multiprocessors (compute units on AMD): GEMM tiles run in waves of it
    vendor: str
    source: str

    @property
    def has_fp8(self) -> bool:
        return self.fp8_tflops is not None


@cache
def _catalog() -> dict[str, GPU]:
    df = pd.read_csv(DATA_DIR / "gpus.csv")
    out: dict[str, GPU] = {}
    for r in df.itertuples(index=False):
        fp8 = None if pd.isna(r.fp8_dense_tflops) else float(r.fp8_dense_tflops)
        out[str(r.key)] = GPU(
            key=str(r.key),
            name=str(r.name),
            memory_gib=float(r.memory_gib),
            cuda_memory_gib=float(r.cuda_memory_gib),
            bw_tbps=float(r.hbm_bandwidth_tbps),
            bf16_tflops=float(r.bf16_dense_tflops),
            fp8_tflops=fp8,
            arch=str(r.arch),
            sm_count=int(r.sm_count),
            vendor=str(r.vendor),
            source=f"{r.source} | CUDA memory: {r.cuda_memory_source} | SMs: {r.sm_source}",
        )
    return out


def gpu_keys() -> tuple[str, ...]:
    """All GPU keys, in catalog order."""
    return tuple(_catalog())


def get_gpu(key: str) -> GPU:
    """The GPU with this key; SimInputError naming the valid keys if unknown."""
    cat = _catalog()
    if key not in cat:
        raise SimInputError(f"unknown GPU {key!r}; valid: {', '.join(cat)}")
    return cat[key]


def default_batch_limits(
    gpu_key: str,
    usage: str = "server",
    *,
    tp: int = 1,
    max_model_len: int | None = None,
    enable_chunked_prefill: bool = True,
) -> dict[str, int]:
    """vLLM 0.33's defaults for max_num_batched_tokens and max_num_seqs (SCHEDULER.md (e)).

    usage "server" is `vllm serve` (UsageContext.OPENAI_API_SERVER), "llm" the offline
    `vllm.LLM` class (LLM_CLASS). The tier uses the memory CUDA reports (GiB = 2**30 bytes):
    >= 160 GiB: 16384/1024 for both; >= 70 GiB and no "a100" in the device name: LLM
    16384/1024, server 8192/1024; otherwise LLM 8192/256, server 2048/256. Then, as vLLM does
    for values the user did not set: without chunked prefill the budget is at least
    max_model_len; the budget is at most max_num_seqs * max_model_len; max_num_seqs is at most
    the budget. `tp` does not change the rule on GPUs (only the CPU platform scales by world
    size); it is validated and accepted for symmetry with the other calls.
    """
    gpu = get_gpu(gpu_key)
    if usage not in USAGES:
        raise SimInputError(f"unknown usage {usage!r}; valid: {', '.join(USAGES)}")
    if tp not in (1, 2, 4, 8):
        raise SimInputError(f"tp must be 1, 2, 4 or 8, got {tp!r}")
    mem = gpu.cuda_memory_gib
    if mem >= 160:
        tokens, seqs = 16384, 1024
    elif mem >= 70 and "a100" not in gpu.name.lower():
        tokens, seqs = (16384 if usage == "llm" else 8192), 1024
    else:
        tokens, seqs = (8192 if usage == "llm" else 2048), 256
    if max_model_len is not None:
        if not isinstance(max_model_len, int) or max_model_len < 1:
            raise SimInputError(f"max_model_len must be a positive integer, got {max_model_len!r}")
        if not enable_chunked_prefill:
            tokens = max(max_model_len, tokens)
        tokens = min(seqs * max_model_len, tokens)
    seqs = min(seqs, tokens)
    return {"max_num_batched_tokens": int(tokens), "max_num_seqs": int(seqs)}


def peak_tflops(gpu: GPU, dtype: str) -> float:
    """Dense peak TFLOP/s for the GEMM dtype (bf16 or fp8)."""
    if dtype == "fp8":
        if gpu.fp8_tflops is None:
            raise SimInputError(f"GPU {gpu.key!r} has no FP8 tensor cores; use dtype bf16")
        return gpu.fp8_tflops
    return gpu.bf16_tflops
