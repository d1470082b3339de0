"""Sweeps (sim/sweep.py) give, row by row, exactly what separate runs give."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.scheduler import run_steps
from sim.sweep import sweep, sweep_values
from sim.workload import Workload


def _workload(n: int = 60, seed: int = 3) -> Workload:
    rng = np.random.default_rng(seed)
    return Workload.build(
        rng.integers(20, 600, n),
        rng.integers(1, 80, n),
        arrival_step=1 + np.cumsum(rng.integers(0, 4, n)),
        priority=rng.integers(0, 3, n),
    )


BASE = SchedulerConfig(
    max_num_batched_tokens=512, max_num_seqs=16, max_model_len=1024, num_gpu_blocks=90
)


def test_sweep_rows_equal_separate_runs():
    wl = _workload()
    budgets = [64, 128, 256, 512, 1024]
    frame = sweep_values(BASE, "max_num_batched_tokens", budgets, wl, keep_runs=True)
    assert list(frame["max_num_batched_tokens"]) == budgets
    for budget, (_, row), kept in zip(budgets, frame.iterrows(), frame.attrs["runs"], strict=True):
        alone = run_steps(dataclasses.replace(BASE, max_num_batched_tokens=budget), wl)
        assert row["num_steps"] == alone.num_steps == kept.num_steps
        assert row["total_preemptions"] == alone.total_preemptions
        assert row["num_finished"] == wl.num_requests
        np.testing.assert_array_equal(kept.num_scheduled_tokens, alone.num_scheduled_tokens)
    # a bigger budget never needs more steps on this workload (prefill goes faster)
    assert frame["num_steps"].iloc[0] > frame["num_steps"].iloc[-1]


def test_sweep_mixed_policies_and_the_varied_columns():
    wl = _workload()
    configs = [BASE, dataclasses.replace(BASE, policy="priority")]
    frame = sweep(configs, wl)
    assert list(frame["policy"]) == ["fcfs", "priority"]
    prio = run_steps(configs[1], wl)
    assert frame["num_steps"].iloc[1] == prio.num_steps
    assert {"ttft_steps_p50", "ttft_steps_p99", "scheduler_seconds"} <= set(frame.columns)


def test_sweep_in_two_processes_gives_the_same_table():
    wl = _workload(30)
    budgets = [64, 256]
    one = sweep_values(BASE, "max_num_batched_tokens", budgets, wl)
    two = sweep_values(BASE, "max_num_batched_tokens", budgets, wl, workers=2)
    cols = [c for c in one.columns if c not in ("scheduler_seconds", "run_of")]
    assert one[cols].equals(two[cols])


def test_bad_sweeps_raise_input_errors():
    wl = _workload(5)
    with pytest.raises(SimInputError, match="unknown scheduler setting"):
        sweep_values(BASE, "max_num_tokens", [1], wl)
    with pytest.raises(SimInputError, match="at least one"):
        sweep([], wl)
    with pytest.raises(SimInputError, match="max_num_seqs"):  # vLLM's rejection, per value
        sweep_values(BASE, "max_num_batched_tokens", [8], wl)


def test_sweep_without_metrics_keeps_the_run_figures():
    wl = _workload(30)
    bare = sweep_values(BASE, "max_num_seqs", [2, 8], wl, metrics=False)
    assert set(bare.columns) == {
        "max_num_seqs",
        "num_steps",
        "total_preemptions",
        "num_finished",
        "num_output_tokens",
        "scheduler_seconds",
        "run_of",
    }
    for seqs, steps in zip([2, 8], bare["num_steps"], strict=True):
        assert steps == run_steps(dataclasses.replace(BASE, max_num_seqs=seqs), wl).num_steps
    assert bare["num_steps"].iloc[0] > bare["num_steps"].iloc[1]  # 2 sequences take longer


# ---- sharing runs across limits (sim/dominance.py)

PER_STEP = ("num_scheduled_tokens", "num_scheduled_seqs", "num_running", "kv_blocks_used")
PER_REQUEST = ("first_token_step", "finish_step", "num_preemptions", "num_prefix_hit_tokens")


def _random_case(seed: int) -> tuple[SchedulerConfig, Workload]:
    """A small workload and a base configuration, often with a pool tight enough to preempt."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    mml = 1024
    chunked = bool(rng.random() < 0.7)
    prefix = bool(rng.random() < 0.3)
    prompts = rng.integers(8, 700, n)
    wl = Workload.build(
        prompts,
        rng.integers(1, 60, n),
        arrival_step=1 + np.cumsum(rng.integers(0, 3, n)),
        priority=rng.integers(0, 3, n),
        prefix_id=rng.integers(0, 3, n) if prefix else None,
        prefix_tokens=np.minimum(prompts, 64) if prefix else None,
    )
    base = SchedulerConfig(
        max_num_batched_tokens=int(rng.integers(16, 400)) if chunked else mml,
        max_num_seqs=int(rng.integers(1, 12)),
        max_model_len=mml,
        num_gpu_blocks=int(rng.integers(66, 200)),
        enable_chunked_prefill=chunked,
        enable_prefix_caching=prefix,
        policy=str(rng.choice(["fcfs", "priority"])),
        long_prefill_token_threshold=int(rng.choice([0, 0, 8, 40, 200])),
        watermark=float(rng.choice([0.0, 0.0, 0.05, 0.2])),
        scheduler_reserve_full_isl=bool(rng.random() < 0.8),
    )
    return base, wl


def _limit_grid(base: SchedulerConfig, rng) -> list[SchedulerConfig]:
    budgets = sorted({base.max_num_batched_tokens * k for k in (1, 2, 4, 16)})
    seqs = sorted({base.max_num_seqs, base.max_num_seqs + 1, 64, int(rng.integers(1, 80))})
    return [
        dataclasses.replace(base, max_num_batched_tokens=b, max_num_seqs=s)
        for b in budgets
        for s in seqs
        if s <= b
    ]


def test_shared_rows_are_exactly_the_separate_runs():
    """Every row a sweep fills from a smaller configuration's run equals running it, array for
    array, over random workloads, policies, chunking, prefix caching and tight pools."""
    shared = preempting = 0
    for seed in range(40):
        base, wl = _random_case(seed)
        configs = _limit_grid(base, np.random.default_rng(1000 + seed))
        frame = sweep(configs, wl, keep_runs=True, metrics=False)
        for i, (config, kept) in enumerate(zip(configs, frame.attrs["runs"], strict=True)):
            alone = run_steps(config, wl)
            assert kept.config == config
            assert kept.num_steps == alone.num_steps, (seed, config)
            for name in PER_STEP + PER_REQUEST:
                np.testing.assert_array_equal(getattr(kept, name), getattr(alone, name), name)
            np.testing.assert_array_equal(kept.token_req, alone.token_req)
            if frame["run_of"].iloc[i] != i:
                shared += 1
                preempting += alone.total_preemptions > 0
                assert frame["scheduler_seconds"].iloc[i] == 0.0
    assert shared >= 200  # the rule was exercised (312 shared rows when written),
    assert preempting >= 100  # also on runs with preemptions (204)


def test_a_budget_that_binds_is_never_shared():
    """The 1,000-step trace of the benchmark in miniature: budgets up to the busiest step each
    run on their own; every budget above it is the same run."""
    wl = _workload(80, seed=5)
    budgets = [64, 128, 256, 512, 1024, 2048, 4096]
    frame = sweep_values(BASE, "max_num_batched_tokens", budgets, wl, keep_runs=True)
    peaks = [int(r.num_scheduled_tokens.max()) for r in frame.attrs["runs"]]
    own = [i for i, r in enumerate(frame["run_of"]) if r == i]
    first_free = next(i for i, (b, p) in enumerate(zip(budgets, peaks, strict=True)) if p < b)
    assert own == list(range(first_free + 1))  # every binding budget ran, then one more
    assert set(frame["run_of"].iloc[first_free:]) == {first_free}
    plain = sweep_values(BASE, "max_num_batched_tokens", budgets, wl, share=False)
    assert list(plain["run_of"]) == list(range(len(budgets)))
    cols = [c for c in frame.columns if c not in ("scheduler_seconds", "run_of")]
    assert frame[cols].equals(plain[cols])


def test_the_priority_guard_applies_only_to_runs_with_preemptions():
    """A run whose budget never filled lends it under FCFS; under priority only if nothing was
    preempted (its victim may be a request already scheduled in the step: module docstring)."""
    from sim.dominance import budget_never_bound

    wl = _workload(60)
    roomy = dataclasses.replace(BASE, max_num_batched_tokens=100_000, num_gpu_blocks=2_000)
    tight = dataclasses.replace(roomy, num_gpu_blocks=60)
    for config, preempts in ((roomy, False), (tight, True)):
        fcfs = run_steps(config, wl)
        prio = run_steps(dataclasses.replace(config, policy="priority"), wl)
        assert (fcfs.total_preemptions > 0) is preempts
        assert (prio.total_preemptions > 0) is preempts
        assert budget_never_bound(fcfs)
        assert budget_never_bound(prio) is not preempts


def test_timed_sweeps_share_runs_exactly():
    """Timed runs (cost model clock): shared rows equal separate runs, times included."""
    from sim.cost import Deployment
    from sim.timed import run_timed

    dep = Deployment("L4", "Llama-3.1-8B")
    rng = np.random.default_rng(11)
    n = 40
    arrivals = np.cumsum(rng.exponential(0.05, n))
    wl = Workload.build(rng.integers(16, 900, n), rng.integers(1, 40, n), arrival_s=arrivals)
    base = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=8, max_model_len=2048, num_gpu_blocks=400
    )
    configs = [
        dataclasses.replace(base, max_num_batched_tokens=b, max_num_seqs=s)
        for b in (512, 2048, 8192, 32768)
        for s in (8, 64)
    ]
    frame = sweep(configs, wl, deployment=dep, keep_runs=True, metrics=False)
    assert (frame["run_of"] != frame.index).sum() >= 2
    for config, kept in zip(configs, frame.attrs["runs"], strict=True):
        alone = run_timed(config, wl, dep)
        np.testing.assert_array_equal(kept.step_ms, alone.step_ms)
        np.testing.assert_array_equal(kept.finish_s, alone.finish_s)
        np.testing.assert_array_equal(kept.num_scheduled_tokens, alone.num_scheduled_tokens)


def test_identical_configurations_run_once():
    frame = sweep([BASE, BASE, BASE], _workload(20))
    assert list(frame["run_of"]) == [0, 0, 0]
    assert list(frame["scheduler_seconds"].iloc[1:]) == [0.0, 0.0]
