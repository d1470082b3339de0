"""Timed runs: the scheduler with a clock, every step priced by the cost model.

Requests arrive in seconds (`Workload.arrival_s`). A step that starts at time t first admits the
requests with arrival_s <= t, then runs one schedule() and output update; it lasts what
`sim.cost.step_costs` says for what it holds (query tokens, sequences, KV tokens read, attention
pairs). An idle engine jumps to the next arrival (idle time is not a step). Quiet runs of decode
steps are priced with one vectorized cost call and cut at the next arrival by a cumulative sum.
A token's time is the end of the step that sampled it, with `async_scheduling` too (the step
that only processes an output schedules nothing and costs what the timer says for nothing). A
closed-loop workload (`concurrency:...`) sends its requests as earlier ones finish; the Run's
`arrival_s` holds those times.

`config_for` builds the SchedulerConfig vLLM would use on a deployment: batch limits from vLLM's
defaults for the GPU (SCHEDULER.md e) unless given, the KV pool from the catalogs unless given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.run import Run
from sim.scheduler import Engine, StepTimer
from sim.workload import Workload


def run_with_timer(
    config: SchedulerConfig,
    workload: Workload,
    timer: StepTimer,
    *,
    record_detail: bool = False,
    max_steps: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Run:
    """A timed run with any step-time model `timer(query_tokens, num_seqs, kv_read_tokens,
    attn_pairs) -> step_ms` (arrays over steps in, an array of milliseconds out). `progress`,
    if given, is called about four times a second with (requests done, requests in all)."""
    engine = Engine(
        config,
        workload,
        timer=timer,
        record_detail=record_detail,
        max_steps=max_steps,
        progress=progress,
    )
    return engine.run()


def deployment(
    gpu: str, model: str, *, tp: int = 1, dtype: str = "bf16", kv_cache_dtype: str = "auto"
) -> Any:
    """`sim.cost.Deployment` (unknown keys raise SimInputError there). kv_cache_dtype is vLLM's
    --kv-cache-dtype: it sizes the KV pool (config_for) and the KV bytes attention reads."""
    from sim.cost import Deployment

    return Deployment(gpu, model, tp=tp, dtype=dtype, kv_cache_dtype=kv_cache_dtype)


def timer_for(dep: Any, *, async_scheduling: bool = False) -> StepTimer:
    """The cost model of a deployment as a StepTimer.

    With async scheduling the CPU part of a step (sim.cost.OVERHEAD_MS: scheduling, input
    preparation, output processing) runs while the GPU computes the step before, which is why
    vLLM does it: a step lasts max(GPU time, CPU time) instead of their sum.
    """
    from sim.cost import OVERHEAD_MS, cost_constants, step_ms

    consts = cost_constants(dep)

    def timer(query_tokens, num_seqs, kv_read_tokens, attn_pairs) -> np.ndarray:
        ms = step_ms(dep, query_tokens, num_seqs, kv_read_tokens, attn_pairs, consts)
        ms = np.asarray(ms, dtype=np.float64)
        if async_scheduling:
            active = np.asarray(query_tokens) > 0
            ms = np.where(active, np.maximum(ms - OVERHEAD_MS, OVERHEAD_MS), ms)
        return ms

    # what the compiled loop (sim/engine/pricing.py) prices from, to the same numbers
    timer.deployment = dep  # type: ignore[attr-defined]
    timer.overlap = async_scheduling  # type: ignore[attr-defined]
    return timer


def run_timed(
    config: SchedulerConfig,
    workload: Workload,
    deployment: Any,
    *,
    record_detail: bool = False,
    max_steps: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Run:
    """Run `workload` (arrival_s) on `deployment` (sim.cost.Deployment), step for step, timed."""
    return run_with_timer(
        config,
        workload,
        timer_for(deployment, async_scheduling=config.async_scheduling),
        record_detail=record_detail,
        max_steps=max_steps,
        progress=progress,
    )


def config_for(
    dep: Any,
    *,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    max_model_len: int | None = None,
    num_gpu_blocks: int | None = None,
    usage: str = "server",
    gpu_memory_utilization: float = 0.9,
    block_size: int = 16,
    **scheduler: Any,
) -> SchedulerConfig:
    """The SchedulerConfig vLLM would run `dep` with; any value given overrides the default.

    max_model_len defaults to the model's max_position_embeddings (vLLM's default); the batch
    limits follow vLLM's defaults for the GPU (sim.hardware.default_batch_limits, SCHEDULER.md e:
    a defaulted budget is at most max_num_seqs * max_model_len, a defaulted max_num_seqs at most
    the budget); the KV pool is the catalog estimate (sim.models.num_gpu_blocks) for that budget,
    with the deployment's KV cache dtype (`dep.kv_cache_dtype`, vLLM's --kv-cache-dtype).
    Other keyword arguments (policy, enable_prefix_caching, ...) go to SchedulerConfig.
    gpu_memory_utilization defaults to 0.9 here, the release the seeds describe; the command
    line passes vLLM serve's 0.92 (sim/flags.py).
    """
    from sim.hardware import default_batch_limits
    from sim.models import num_gpu_blocks as catalog_blocks

    mml = (
        int(max_model_len) if max_model_len is not None else dep.model_spec.max_position_embeddings
    )
    chunked = bool(scheduler.get("enable_chunked_prefill", True))
    limits = default_batch_limits(
        dep.gpu, usage, tp=dep.tp, max_model_len=mml, enable_chunked_prefill=chunked
    )
    seqs = max_num_seqs
    if seqs is None:
        seqs = limits["max_num_seqs"]
        if max_num_batched_tokens is not None:
            seqs = min(seqs, int(max_num_batched_tokens))
    budget = max_num_batched_tokens
    if budget is None:
        budget = limits["max_num_batched_tokens"]
        if max_num_seqs is not None:
            budget = max(budget, mml) if not chunked else budget
            budget = min(int(max_num_seqs) * mml, budget)
    if num_gpu_blocks is None:
        num_gpu_blocks = catalog_blocks(
            dep.gpu,
            dep.model,
            tp=dep.tp,
            dtype=dep.dtype,
            kv_dtype=getattr(dep, "kv_cache_dtype", None),
            gpu_memory_utilization=gpu_memory_utilization,
            block_size=block_size,
            max_num_batched_tokens=int(budget),
        )
        if num_gpu_blocks < 2:
            raise SimInputError(
                f"{dep.model} does not fit on {dep.tp} x {dep.gpu} with room for a KV cache"
            )
    return SchedulerConfig(
        max_num_batched_tokens=int(budget),
        max_num_seqs=int(seqs),
        max_model_len=mml,
        num_gpu_blocks=int(num_gpu_blocks),
        block_size=block_size,
        **scheduler,
    )
