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
    cols = [c for c in one.columns if c != "scheduler_seconds"]
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
    }
    for seqs, steps in zip([2, 8], bare["num_steps"], strict=True):
        assert steps == run_steps(dataclasses.replace(BASE, max_num_seqs=seqs), wl).num_steps
    assert bare["num_steps"].iloc[0] > bare["num_steps"].iloc[1]  # 2 sequences take longer
