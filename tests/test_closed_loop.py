"""Closed-loop workloads (`concurrency:clients=C,...`, sim/engine/kernel.py `_release`).

The spec and its errors; the semaphore (never more than C requests in flight, exactly C while
some are unsent); realized arrivals equal to finish times; windows equal to one step at a time
(sync and async, with and without prefix caching, on pools that force preemptions); latencies
measured from the realized arrivals, with their means; the command line.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.generators import concurrency_workload, from_spec, parse_spec, poisson_workload
from sim.metrics import request_metrics, summarize
from sim.scheduler import run_steps
from sim.sweep import sweep_values
from sim.timed import deployment, run_timed, run_with_timer
from sim.workload import Workload
from tests.test_cli_sched import _assert_one_line_error, _sim

ROOT = Path(__file__).parent.parent


def _toy_timer(q, s, kv, attn):
    """A made-up affine step time (ms), positive for every step."""
    return 2.0 + 0.01 * q + 0.05 * s + 1e-4 * kv + 1e-6 * attn


def _config(**kw) -> SchedulerConfig:
    base = dict(max_num_batched_tokens=512, max_num_seqs=64, max_model_len=1024, num_gpu_blocks=400)
    return SchedulerConfig(**(base | kw))


def _check_semaphore(run, clients: int) -> None:
    """At every step start: requests sent and not finished <= C, and == C while some are
    unsent. A finish and the send it causes happen at the same instant (the same float)."""
    n = run.workload.num_requests
    c = min(clients, n)
    t = run.step_start_s[:, None]
    sent = (run.arrival_s[None, :] <= t).sum(axis=1)
    done = (run.finish_s[None, :] <= t).sum(axis=1)
    in_flight = sent - done
    assert in_flight.max() <= c
    assert np.all(in_flight[sent < n] == c)
    # realized arrivals: the first C at 0 s, then one per finish, in finishing order
    assert np.all(run.arrival_s[:c] == 0.0)
    np.testing.assert_array_equal(run.arrival_s[c:], np.sort(run.finish_s)[: n - c])


def _same_runs(a, b) -> None:
    assert a.num_steps == b.num_steps
    for name in ("num_scheduled_tokens", "kv_blocks_used", "num_running", "num_waiting"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in ("first_token_step", "finish_step", "token_req", "token_step"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    np.testing.assert_allclose(a.step_start_s, b.step_start_s, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.arrival_s, b.arrival_s, rtol=0, atol=1e-9)


# --- the spec --------------------------------------------------------------------------------


def test_spec_builds_a_closed_loop_with_the_poisson_lengths():
    spec = "concurrency:clients=4,n=50,prompt=lognormal:200:0.5,output=uniform:4:40,seed=3"
    wl = from_spec(spec, max_model_len=1024)
    assert wl.concurrency == 4 and wl.arrival_s is None and wl.arrival_step is None
    same_seed = poisson_workload(
        50, 2.0, prompt="lognormal:200:0.5", output="uniform:4:40", seed=3, max_model_len=1024
    )
    np.testing.assert_array_equal(wl.prompt_tokens, same_seed.prompt_tokens)
    np.testing.assert_array_equal(wl.output_tokens, same_seed.output_tokens)
    api = concurrency_workload(
        50, 4, prompt="lognormal:200:0.5", output="uniform:4:40", seed=3, max_model_len=1024
    )
    np.testing.assert_array_equal(api.prompt_tokens, wl.prompt_tokens)
    assert api.concurrency == 4
    again = parse_spec(parse_spec(spec).to_spec())
    assert again == parse_spec(spec) and again.clients == 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("concurrency:n=5", "need clients=C"),
        ("concurrency:clients=0,n=5", "clients=0 must be at least 1"),
        ("concurrency:clients=-3,n=5", "clients=-3 must be at least 1"),
        ("concurrency:clients=2.5,n=5", "clients: '2.5' is not a whole number"),
        ("concurrency:clients=2,n=0", "n=0 must be between 1 and 1,000,000"),
        ("concurrency:clients=2", "needs n=N"),
        ("concurrency:clients=2,n=5,rate=3", "concurrency workloads take no rate"),
        ("poisson:rate=2,n=5,clients=3", "clients=C is for concurrency: workloads"),
        ("concurrence:clients=2,n=5", "burst: or concurrency:"),
        ("concurrency:client=2,n=5", "did you mean 'clients'?"),
    ],
)
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(SimInputError) as info:
        from_spec(spec)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_workload_build_checks_concurrency():
    with pytest.raises(SimInputError, match="concurrency=0 must be at least 1 client"):
        Workload.build([10], [5], concurrency=0)
    with pytest.raises(SimInputError, match="whole number"):
        Workload.build([10], [5], concurrency=True)
    with pytest.raises(SimInputError, match="exactly one of arrival_s"):
        Workload.build([10], [5], arrival_s=[0.0], concurrency=2)


def test_a_step_replay_of_a_closed_loop_is_refused():
    wl = from_spec("concurrency:clients=2,n=5")
    with pytest.raises(SimInputError, match="needs a timed run"):
        run_steps(_config(), wl)


# --- runs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("async_scheduling", [False, True])
@pytest.mark.parametrize(
    ("clients", "n", "overrides"),
    [
        (1, 12, {}),
        (5, 80, {}),
        (16, 120, {"num_gpu_blocks": 70}),  # a small pool: preemptions
        (8, 60, {"enable_prefix_caching": True}),
        (6, 60, {"policy": "priority", "max_num_seqs": 4}),  # max_num_seqs < C: a queue
    ],
)
def test_semaphore_and_windows(async_scheduling, clients, n, overrides):
    config = _config(async_scheduling=async_scheduling, **overrides)
    wl = concurrency_workload(
        n,
        clients,
        prompt="lognormal:150:0.7",
        output="uniform:1:60",
        seed=clients,
        prefix_tokens=32 if overrides.get("enable_prefix_caching") else 0,
        max_model_len=1024,
        interactive=0.5,
    )
    run = run_with_timer(config, wl, _toy_timer)
    assert (run.finish_step > 0).all()
    _check_semaphore(run, clients)
    if overrides.get("num_gpu_blocks"):
        assert run.total_preemptions > 0


def test_clients_at_least_n_is_all_at_once():
    """C >= N: every request is sent at 0 s, the run of a burst of the same requests."""
    wl = concurrency_workload(20, 50, prompt="uniform:10:300", output="uniform:1:50", seed=1)
    burst = Workload.build(wl.prompt_tokens, wl.output_tokens, arrival_s=np.zeros(20))
    run = run_with_timer(_config(), wl, _toy_timer)
    ref = run_with_timer(_config(), burst, _toy_timer)
    assert np.all(run.arrival_s == 0.0)
    _same_runs(run, ref)


def test_latencies_from_the_realized_arrivals_with_means():
    wl = concurrency_workload(60, 4, prompt="uniform:50:400", output="uniform:2:40", seed=2)
    run = run_with_timer(_config(), wl, _toy_timer)
    m = request_metrics(run)
    np.testing.assert_allclose(m.ttft_ms, (run.first_token_s - run.arrival_s) * 1e3)
    np.testing.assert_allclose(m.e2e_s, run.finish_s - run.arrival_s)
    s = summarize(run)
    assert json.loads(json.dumps(s)) == s
    assert s["ttft_ms"]["mean"] == pytest.approx(float(m.ttft_ms.mean()))
    assert s["e2e_s"]["mean"] == pytest.approx(float(m.e2e_s.mean()))
    assert s["tpot_ms"]["mean"] == pytest.approx(float(np.nanmean(m.tpot_ms)))
    assert s["itl_ms"]["mean"] == pytest.approx(float(m.itl.mean()))
    assert s["makespan_s"] == pytest.approx(float(run.finish_s.max()))  # from 0 s
    # a later request waited for a client: its arrival is a finish, not 0 s
    assert run.arrival_s[4:].min() > 0


def test_a_sweep_of_a_closed_loop_gives_each_run_its_own_arrivals():
    """Runs of a sweep share the workload's prepared arrays; each run fills in its own
    arrivals, and each equals the same configuration run alone."""
    dep = deployment("H100-SXM", "Llama-3.1-8B")
    wl = concurrency_workload(40, 3, prompt="uniform:50:400", output="uniform:2:40", seed=4)
    base = _config(async_scheduling=True)
    frame = sweep_values(
        base, "max_num_seqs", [1, 2, 8], wl, deployment=dep, keep_runs=True, share=False
    )
    for run, seqs in zip(frame.attrs["runs"], (1, 2, 8), strict=True):
        alone = run_timed(dataclasses.replace(base, max_num_seqs=seqs), wl, dep)
        _same_runs(run, alone)
        _check_semaphore(run, 3)
    assert frame["ttft_ms_mean"].iloc[0] > frame["ttft_ms_mean"].iloc[2]  # 1 seq: a queue


@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    clients=st.integers(1, 12),
    n=st.integers(1, 40),
    blocks=st.integers(65, 300),
    seqs=st.integers(1, 16),
    asynchronous=st.booleans(),
    caching=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_random_closed_loops(clients, n, blocks, seqs, asynchronous, caching, seed):
    config = _config(
        num_gpu_blocks=blocks,
        max_num_seqs=seqs,
        async_scheduling=asynchronous,
        enable_prefix_caching=caching,
    )
    wl = concurrency_workload(
        n,
        clients,
        prompt="longtail:100",
        output="uniform:1:80",
        seed=seed,
        max_model_len=1024,
        prefix_tokens=16 if caching else 0,
        prefixes=2,
    )
    run = run_with_timer(config, wl, _toy_timer)
    _check_semaphore(run, clients)


def test_command_line_runs_a_closed_loop():
    dep = ("--gpu", "H100-SXM", "--model", "Llama-3.1-8B")
    spec = "concurrency:clients=8,n=40,prompt=uniform:64:512,output=uniform:8:64,seed=1"
    proc = _sim("simulate", *dep, "--workload", spec, "--async-scheduling")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["num_finished"] == 40
    assert out["ttft_ms"]["mean"] > 0 and set(out["e2e_s"]) == {"p50", "p90", "p99", "max", "mean"}
    bad = _sim("simulate", *dep, "--workload", "concurrency:clients=0,n=40")
    _assert_one_line_error(bad, "clients=0 must be at least 1")
    assert bad.stderr.strip() == "error: clients=0 must be at least 1"
