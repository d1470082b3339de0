"""The memory lesson's comparisons: the same workload run again with one thing changed.

- the other victim policy (FCFS against PRIORITY), per class of request;
- the other prefix-caching setting: how much of a victim's work comes back from the cache;
- the other scheduling mode (async against synchronous): the preemptions each makes;
- the fixes: a lower max_num_seqs, a larger gpu_memory_utilization, an FP8 KV cache, a second
  GPU (tensor parallel 2), the next larger GPU, a watermark. Fixes that change memory need the
  pool to come from the catalogs; with a pool set in blocks they are left out (and the page says
  so). Each is a timed run of its own (sim.timed.run_timed) on the cost model of its deployment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lessons.memory.readout import Comparison
from sim.config import SchedulerConfig
from sim.cost import Deployment
from sim.hardware import get_gpu, gpu_keys
from sim.metrics import percentiles, request_metrics, summarize
from sim.run import Run
from sim.timed import run_timed
from sim.workload import Workload

WATERMARK_FIX = 0.02
UTIL_FIX_PCT = 5
UTILIZATIONS = (50, 98)  # gpu_memory_utilization in percent: the lesson's slider range
LARGER_POOL = ("more_memory", "fp8_kv", "tp2", "bigger_gpu")  # the what-ifs that grow the pool
CLASSES = ("interactive", "batch")  # priority 0 and 1


@dataclass(frozen=True, eq=False)
class ClassRow:
    """One class of request under one policy."""

    policy: str
    cls: str
    preemptions: int
    ttft_p50_ms: float
    ttft_p99_ms: float
    e2e_p50_s: float
    e2e_p99_s: float


@dataclass(frozen=True, eq=False)
class Fix:
    """One what-if: a run of the same workload with one setting changed."""

    key: str
    num_gpu_blocks: int
    max_num_seqs: int
    preemptions: int
    recomputed_tokens: int
    ttft_p50_ms: float
    ttft_p99_ms: float
    itl_p50_ms: float
    itl_p99_ms: float
    output_tokens_per_s: float
    detail: str  # the changed value, for the label
    peak_running: int  # the most requests running at once


def _num(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def class_rows(run: Run, policy: str) -> list[ClassRow]:
    """TTFT and end-to-end percentiles and preemptions of each class in one run."""
    m = request_metrics(run)
    prio = np.asarray(run.workload.priority)
    out = []
    for level, cls in enumerate(CLASSES):
        mask = prio == level
        ttft, e2e = percentiles(m.ttft_ms[mask]), percentiles(m.e2e_s[mask])
        out.append(
            ClassRow(
                policy=policy.upper(),
                cls=cls,
                preemptions=int(run.num_preemptions[mask].sum()),
                ttft_p50_ms=_num(ttft["p50"]),
                ttft_p99_ms=_num(ttft["p99"]),
                e2e_p50_s=_num(e2e["p50"]),
                e2e_p99_s=_num(e2e["p99"]),
            )
        )
    return out


def _fix(key: str, run: Run, detail: str) -> Fix:
    s = summarize(run)
    return Fix(
        key=key,
        num_gpu_blocks=run.config.num_gpu_blocks,
        max_num_seqs=run.config.max_num_seqs,
        preemptions=int(s["total_preemptions"]),
        recomputed_tokens=int(run.num_recomputed_tokens.sum() - run.num_prefix_hit_tokens.sum()),
        ttft_p50_ms=_num(s["ttft_ms"]["p50"]),
        ttft_p99_ms=_num(s["ttft_ms"]["p99"]),
        itl_p50_ms=_num(s["itl_ms"]["p50"]),
        itl_p99_ms=_num(s["itl_ms"]["p99"]),
        output_tokens_per_s=_num(s["output_tokens_per_s"]),
        detail=detail,
        peak_running=int(np.max(run.num_running)) if run.num_steps else 0,
    )


def bigger_gpu(gpu: str, dtype: str = "bf16") -> str | None:
    """The catalog GPU with the least memory above this one's that runs weights of `dtype` (FP8
    needs FP8 tensor cores); None for the largest."""
    mine = get_gpu(gpu).memory_gib
    larger = [
        (get_gpu(k).memory_gib, k)
        for k in gpu_keys()
        if get_gpu(k).memory_gib > mine and (dtype != "fp8" or get_gpu(k).fp8_tflops)
    ]
    return min(larger)[1] if larger else None


def fixes(
    p,
    cfg: SchedulerConfig,
    dep: Deployment,
    wl: Workload,
    run: Run,
    catalog_fn: Callable,
    smallest: int,
) -> list[Fix]:
    """The what-ifs, each run on the same workload (see the module docstring). A what-if whose
    pool could not hold the longest request (fewer than `smallest` blocks) is left out."""
    out = [_fix("as_set", run, "")]
    peak = int(np.max(run.num_running)) if run.num_steps else 1
    seqs = max(1, peak // 2)
    if seqs < cfg.max_num_seqs:
        out.append(
            _fix(
                "fewer_seqs",
                run_timed(dataclasses.replace(cfg, max_num_seqs=seqs), wl, dep),
                f"{seqs:,}",
            )
        )
    if p.pool_from == "memory":
        util = min(p.gpu_memory_utilization + UTIL_FIX_PCT, UTILIZATIONS[1])
        memory = []
        if util > p.gpu_memory_utilization:  # at the top already: no more memory to give
            memory.append(("more_memory", {"gpu_memory_utilization": util / 100}, dep, f"{util}%"))
        memory.append(("fp8_kv", {"kv_dtype": "fp8"}, dep, ""))  # its label names it
        if p.tp * 2 <= 8:
            two = Deployment(gpu=p.gpu, model=p.model, tp=p.tp * 2, dtype=p.dtype)
            memory.append(("tp2", {"tp": p.tp * 2}, two, f"{p.tp * 2}"))
        big = bigger_gpu(p.gpu, p.dtype)
        if big is not None:
            bigger = Deployment(gpu=big, model=p.model, tp=p.tp, dtype=p.dtype)
            memory.append(("bigger_gpu", {"gpu": big}, bigger, get_gpu(big).name))
        for key, change, where, detail in memory:
            blocks, fits = catalog_fn(**change)
            if not fits or blocks < smallest:
                continue
            variant = dataclasses.replace(cfg, num_gpu_blocks=blocks)
            out.append(_fix(key, run_timed(variant, wl, where), detail))
    if cfg.watermark < WATERMARK_FIX:
        variant = dataclasses.replace(cfg, watermark=WATERMARK_FIX)
        out.append(_fix("watermark", run_timed(variant, wl, dep), f"{WATERMARK_FIX:g}"))
    return out


def compare(
    p, cfg: SchedulerConfig, dep: Deployment, wl: Workload, run: Run, catalog_fn, smallest: int
) -> Comparison:
    """Every comparison the page quotes (see lesson.comparison)."""
    other_policy = "priority" if cfg.policy == "fcfs" else "fcfs"
    other = run_timed(dataclasses.replace(cfg, policy=other_policy), wl, dep)
    rows = class_rows(run, cfg.policy) + class_rows(other, other_policy)
    by = {(row.policy, row.cls): row for row in rows}
    fcfs_i, prio_i = by[("FCFS", "interactive")], by[("PRIORITY", "interactive")]
    fcfs_b, prio_b = by[("FCFS", "batch")], by[("PRIORITY", "batch")]

    flipped = run_timed(
        dataclasses.replace(cfg, enable_prefix_caching=not cfg.enable_prefix_caching), wl, dep
    )
    on, off = (run, flipped) if cfg.enable_prefix_caching else (flipped, run)
    recompute_on = int(on.num_recomputed_tokens.sum() - on.num_prefix_hit_tokens.sum())
    recompute_off = int(off.num_recomputed_tokens.sum())

    mode = run_timed(dataclasses.replace(cfg, async_scheduling=not cfg.async_scheduling), wl, dep)
    asyn, sync = (run, mode) if cfg.async_scheduling else (mode, run)
    fixes_ = fixes(p, cfg, dep, wl, run, catalog_fn, smallest)
    none = not any(row.preemptions for row in rows)
    as_set = fixes_[0]
    # a larger pool that preempts more often, running more requests at once than the run as set
    more = [
        f
        for f in fixes_
        if f.key in LARGER_POOL
        and f.preemptions > as_set.preemptions
        and f.peak_running > as_set.peak_running
    ]
    worst = max(more, key=lambda f: f.preemptions) if more else as_set
    first_sync, first_async = _first(sync), _first(asyn)
    moved = first_sync != first_async  # the first preemption comes in another step
    n_sync, n_async = int(sync.total_preemptions), int(asyn.total_preemptions)
    differ = moved or n_sync != n_async
    return Comparison(
        fcfs_interactive_preempted=fcfs_i.preemptions,
        fcfs_batch_preempted=fcfs_b.preemptions,
        priority_interactive_preempted=prio_i.preemptions,
        priority_batch_preempted=prio_b.preemptions,
        fcfs_interactive_ttft_p99_s=fcfs_i.ttft_p99_ms / 1e3,
        priority_interactive_ttft_p99_s=prio_i.ttft_p99_ms / 1e3,
        fcfs_batch_e2e_p99_s=fcfs_b.e2e_p99_s,
        priority_batch_e2e_p99_s=prio_b.e2e_p99_s,
        priority_spares_interactive=prio_i.preemptions < fcfs_i.preemptions,
        victims_none=none,
        victims_no_spare=not none and prio_i.preemptions >= fcfs_i.preemptions,
        recompute_on=recompute_on,
        recompute_off=recompute_off,
        cache_saves=recompute_off - recompute_on,
        cache_saves_some=recompute_on < recompute_off,
        cache_same_some=recompute_off <= recompute_on and recompute_on > 0,
        cache_none_twice=recompute_on == recompute_off == 0,
        sync_preemptions=n_sync,
        async_preemptions=n_async,
        sync_first_preempt=first_sync,
        async_first_preempt=first_async,
        modes_differ=moved and n_sync != n_async and min(n_sync, n_async) > 0,
        modes_only_async=n_sync == 0 < n_async,
        modes_only_sync=n_async == 0 < n_sync,
        modes_moved_same_count=moved and n_sync == n_async,
        modes_differ_count=differ and not moved,
        modes_same_some=not differ and n_sync > 0,
        modes_none=not differ and n_sync == 0,
        class_rows=tuple(rows),
        fixes=tuple(fixes_),
        fixes_none=all(f.preemptions == 0 for f in fixes_),
        fixes_memory_left_out=p.pool_from != "memory",
        pool_more_preempts=bool(more),
        as_set_preemptions=as_set.preemptions,
        as_set_running=as_set.peak_running,
        pool_more_max=worst.preemptions,
        pool_more_running=worst.peak_running,
    )


def _first(run: Run) -> int:
    hit = np.flatnonzero(np.asarray(run.num_preempted) > 0)
    return int(hit[0]) + 1 if hit.size else 0
