"""Async scheduling hides a step's CPU part behind the GPU: timed runs price it so."""

from __future__ import annotations

import dataclasses

import numpy as np

from sim.cost import OVERHEAD_MS, Deployment, step_ms
from sim.generators import concurrency_workload
from sim.timed import config_for, run_timed


def _runs():
    dep = Deployment("H100-SXM", "Llama-3.1-8B")
    wl = concurrency_workload(64, 16, prompt="fixed:512", output="fixed:64", seed=0)
    sync = config_for(dep)
    both = [run_timed(c, wl, dep) for c in (sync, dataclasses.replace(sync, async_scheduling=True))]
    return dep, *both


def test_each_async_step_lasts_the_longer_of_gpu_and_cpu_time():
    dep, _, run = _runs()
    busy = run.num_scheduled_tokens > 0
    args = (run.num_scheduled_tokens, run.num_scheduled_seqs, run.kv_read_tokens, run.attn_pairs)
    full = step_ms(dep, *(np.asarray(a, dtype=np.int64) for a in args))
    expect = np.maximum(full - OVERHEAD_MS, OVERHEAD_MS)
    np.testing.assert_allclose(run.step_ms[busy], expect[busy], rtol=1e-12)
    assert (run.step_ms[~busy] == 0).all()


def test_async_lowers_inter_token_latency_by_about_the_cpu_part():
    _, sync, asy = _runs()
    d_sync = np.median(sync.step_ms[sync.num_scheduled_tokens == sync.num_scheduled_seqs])
    d_async = np.median(asy.step_ms[asy.num_scheduled_tokens == asy.num_scheduled_seqs])
    assert abs((d_sync - d_async) - OVERHEAD_MS) < 0.2  # decode steps: about 1 ms shorter
    assert asy.step_start_s[-1] < sync.step_start_s[-1]
