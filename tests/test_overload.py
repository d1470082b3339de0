"""Overload figures (sim/overload.py) and latency by group (sim/groups.py), checked against the
runs they come from and on hand-made cases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.config import SchedulerConfig
from sim.cost import step_ms
from sim.errors import SimInputError
from sim.generators import parse_spec
from sim.groups import by_group, queue_time_s
from sim.overload import (
    capacity_req_per_s,
    load_sweep,
    poisson_at,
    prefill_tokens_per_s,
    queued_tokens_limit,
    signals,
    sustained_prefill_tokens_per_s,
    sweep_row,
    waiting_peaks,
)
from sim.scheduler import Engine, run_steps
from sim.timed import config_for, deployment, run_timed
from sim.workload import Workload

DEP = deployment("L4", "Llama-3.1-8B")
SPEC = parse_spec(
    "poisson:n=160,rate=1,prompt=lognormal:800:0.8,output=lognormal:150:0.8,seed=3,"
    "interactive=0.7,tenants=3"
)


def _flat(q, s, kv, attn):
    return np.full(np.shape(q), 125.0)


def test_queue_time_is_arrival_to_the_first_step_that_ran_it():
    # one seat: B (arrives 0.1 s) waits for A's three steps (0 to 0.375 s), then starts
    config = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=1, max_model_len=1024, num_gpu_blocks=64
    )
    wl = Workload.build([100, 100], [3, 2], arrival_s=[0.0, 0.1], request_ids=["a", "b"])
    run = Engine(config, wl, timer=_flat).run()
    np.testing.assert_allclose(queue_time_s(run), [0.0, 0.375 - 0.1])
    table = by_group(run, "priority")
    assert table["longest_wait_request"].tolist() == ["b"]
    assert table["queue_s_max"].tolist() == pytest.approx([0.275])


def test_groups_add_up_and_name_the_request_that_waited_longest():
    config = config_for(DEP, policy="sjf")
    run = run_timed(config, poisson_at(SPEC, 1.2), DEP)
    wait = queue_time_s(run)
    for key in ("priority", "tenant"):
        table = by_group(run, key)
        assert table["requests"].sum() == run.workload.num_requests
        groups = np.asarray(getattr(run.workload, key))
        for row in table.itertuples():
            sel = groups == getattr(row, key)
            assert row.queue_s_max == pytest.approx(np.nanmax(wait[sel]))
            worst = run.workload.request_ids.index(row.longest_wait_request)
            assert wait[worst] == pytest.approx(row.queue_s_max)
    # under SJF the request that waits longest overall is a long job
    job = run.workload.prompt_tokens + run.workload.output_tokens
    assert job[int(np.nanargmax(wait))] > np.median(job)
    with pytest.raises(SimInputError, match="group by"):
        by_group(run, "model")


def test_poisson_at_keeps_the_requests_and_scales_the_gaps():
    slow, fast = poisson_at(SPEC, 0.5), poisson_at(SPEC, 2.0)
    assert np.array_equal(slow.prompt_tokens, fast.prompt_tokens)
    assert np.array_equal(slow.tenant, fast.tenant)
    np.testing.assert_allclose(slow.arrival_s * 0.5, fast.arrival_s * 2.0)


def test_above_capacity_the_queue_grows_whatever_the_policy():
    config = config_for(DEP)
    cap = capacity_req_per_s(config, poisson_at(SPEC, 1.0), DEP)
    assert cap > 0
    for policy in ("fcfs", "priority", "sjf", "fair-share"):
        sweep = load_sweep(
            dataclasses.replace(config, policy=policy), DEP, SPEC, [0.5 * cap, 2 * cap]
        )
        under, over = sweep.to_dict("records")
        assert over["peak_waiting"] > 4 * max(under["peak_waiting"], 1), policy
        assert over["queue_s_p99"] > 10 * under["queue_s_p99"], policy
        # finished per second of makespan at twice the capacity: the capacity, not the load
        assert SPEC.n / over["makespan_s"] < 1.25 * cap, policy


def test_the_sizing_rule_is_target_times_prefill_throughput():
    config = config_for(DEP)
    rate = prefill_tokens_per_s(config, DEP)
    q = config.max_num_batched_tokens
    ms = step_ms(DEP, np.array([q]), np.array([1]), np.array([0]), np.array([q * (q + 1) // 2]))
    assert rate == pytest.approx(q / ms[0] * 1000)
    assert queued_tokens_limit(2000, rate) == round(rate * 2)
    with pytest.raises(SimInputError):
        queued_tokens_limit(0, rate)


def test_a_limit_sized_by_the_sustained_prefill_rate_keeps_admitted_ttft_near_the_target():
    """At twice the capacity, 3 s TTFT target: the rule with the prefill rate the engine sustains
    under load holds the admitted requests' p99 near the target and raises goodput; the same
    rule with the speed of an all-prefill step lets far too much in (the engine is KV-bound)."""
    config = config_for(DEP)
    wl = poisson_at(SPEC, 1.0)
    cap = capacity_req_per_s(config, wl, DEP)
    sustained = sustained_prefill_tokens_per_s(config, wl, DEP)
    assert sustained == pytest.approx(cap * wl.prompt_tokens.mean())
    peak = prefill_tokens_per_s(config, DEP)
    assert peak > 3 * sustained

    def at_twice_capacity(limit):
        c = dataclasses.replace(config, max_num_queued_tokens=limit)
        return load_sweep(c, DEP, SPEC, [2 * cap], ttft_slo_ms=3000).iloc[0]

    free = at_twice_capacity(None)
    held = at_twice_capacity(queued_tokens_limit(3000, sustained))
    loose = at_twice_capacity(queued_tokens_limit(3000, peak))
    assert free["refused"] == 0 and held["refused"] > loose["refused"]
    assert held["ttft_ms_p99"] < 2.5 * 3000 < loose["ttft_ms_p99"] < free["ttft_ms_p99"]
    assert held["goodput_req_per_s"] > max(loose["goodput_req_per_s"], free["goodput_req_per_s"])


def test_signals_bin_step_time_and_carry_the_queue_over_idle_time():
    # one seat: A and B arrive at 0 s, C at 1.0 s; 125 ms steps: A runs two (B waits), then B
    # two, then the engine idles until C's two. Five bins of 0.25 s: busy, busy, idle, idle, busy
    config = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=1, max_model_len=1024, num_gpu_blocks=64
    )
    wl = Workload.build([100, 100, 100], [2, 2, 2], arrival_s=[0.0, 0.0, 1.0])
    run = Engine(config, wl, timer=_flat).run()
    table = signals(run, DEP, bins=5)
    np.testing.assert_allclose(table["time_s"], [0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(table["busy_pct"], [100, 100, 0, 0, 100])
    assert table["kv_pct"][2:4].isna().all() and (table["kv_pct"][[0, 1, 4]] > 0).all()
    assert (table["compute_pct"][2:4] == 0).all() and (table["compute_pct"][[0, 4]] > 0).all()
    assert table["waiting"].tolist() == [1, 0, 0, 0, 0]  # B waited behind A; idle bins carry 0
    untimed = run_steps(config, Workload.build([100, 100], [2, 2], arrival_step=[1, 1]))
    with pytest.raises(SimInputError, match="timed run"):
        signals(untimed, DEP)


def test_waiting_peaks_keep_a_peak_between_two_sample_times():
    # one seat, 125 ms steps from 0 s: A, B and C arrive at 0 s, D at 0.3 s. The queue after
    # each step: 2, 2 (A runs), 1, 2 (B; D arrives), 1, 1 (C), 0, 0 (D)
    config = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=1, max_model_len=1024, num_gpu_blocks=64
    )
    wl = Workload.build([100] * 4, [2, 2, 2, 2], arrival_s=[0.0, 0.0, 0.0, 0.3])
    run = Engine(config, wl, timer=_flat).run()
    assert run.num_waiting.tolist() == [2, 2, 1, 2, 1, 1, 0, 0]
    # up to 0.3 s: steps at 0, 0.125, 0.25 (peak 2); from there to 0.9 s: 0.375 (2) to 0.875
    # (0): the queue at 0.9 s is 0, its peak since 0.3 s is 2; none after: 0 carries over
    assert waiting_peaks(run, np.array([0.3, 0.9, 2.0])).tolist() == [2, 2, 0]
    assert waiting_peaks(run, np.array([0.26, 0.9])).tolist() == [2, 2]
    assert waiting_peaks(run, np.array([0.1, 0.2, 0.3])).tolist() == [2, 2, 1]


def test_a_trimmed_capacity_is_the_steady_rate_between_the_finish_quantiles():
    config = config_for(DEP)
    wl = poisson_at(SPEC, 1.0)
    burst = run_timed(config, dataclasses.replace(wl, arrival_s=np.zeros(wl.num_requests)), DEP)
    finish = np.sort(burst.finish_s)
    n = wl.num_requests
    lo, hi = int(0.1 * (n - 1)), int(round(0.9 * (n - 1)))
    got = capacity_req_per_s(config, wl, DEP, trim=0.1)
    assert got == pytest.approx((hi - lo) / (finish[hi] - finish[lo]))
    assert got > capacity_req_per_s(config, wl, DEP)  # the drain's tail is left out
    for bad in (-0.1, 0.5):
        with pytest.raises(SimInputError):
            capacity_req_per_s(config, wl, DEP, trim=bad)


def test_a_sweep_row_of_a_kept_run_is_the_sweeps_row():
    config = config_for(DEP, max_num_queued_tokens=4000)
    table = load_sweep(config, DEP, SPEC, [1.5], ttft_slo_ms=2000)
    run = run_timed(config, poisson_at(SPEC, 1.5, max_model_len=config.max_model_len), DEP)
    assert sweep_row(run, 1.5, ttft_slo_ms=2000) == table.iloc[0].to_dict()


def test_the_queued_tokens_limit_is_the_rate_times_the_target_rounded():
    """The lesson prints the rate rounded ("≈ 1,873 tokens per second") and the limit beside
    it: a limit truncated to 1,872 for a 1 s target read as an arithmetic slip."""
    from sim.overload import queued_tokens_limit

    assert queued_tokens_limit(1000, 1872.8) == 1873
    assert queued_tokens_limit(3000, 1872.8) == round(3 * 1872.8)
    assert queued_tokens_limit(2000, 1000.2) == 2000
