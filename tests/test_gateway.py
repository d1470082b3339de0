"""The gateway's queue timeout (sim/engine/kernel.py `_expire`, a teaching model): a request
not started within `gateway_timeout_s` of its arrival is cut off, never runs, and the
run stays exact.

Why: the overload lesson compares this gateway with vLLM's admission limits, so its rule must
hold on every run (a request that ran started before its deadline; one cut off never ran and
was waiting when a step began at or after its deadline), and the batched windows must give the
very steps that one step at a time gives.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.metrics import summarize
from sim.scheduler import Engine, run_steps
from sim.timed import config_for, deployment, run_timed
from sim.workload import Workload
from tests.test_scheduler_props import cases

SEAT = SchedulerConfig(
    max_num_batched_tokens=512, max_num_seqs=1, max_model_len=1024, num_gpu_blocks=64
)


def _flat(q, s, kv, attn):
    return np.full(np.shape(q), 125.0)


def _toy_timer(q, s, kv, attn):
    return 2.0 + 0.01 * q + 0.05 * s + 1e-4 * kv + 1e-6 * attn


def test_a_request_not_started_in_time_is_cut_off_and_never_runs():
    # one seat: A runs four 125 ms steps from 0 s; B (arrives 0.1 s, deadline 0.4 s) is still
    # waiting when the step at 0.5 s begins and is cut off; C comes at 0.6 s to an idle engine
    config = dataclasses.replace(SEAT, gateway_timeout_s=0.3)
    wl = Workload.build([100, 100, 100], [4, 2, 2], arrival_s=[0.0, 0.1, 0.6])
    run = Engine(config, wl, timer=_flat).run()
    assert run.timed_out.tolist() == [False, True, False]
    assert run.first_scheduled_step.tolist() == [1, 0, 5]
    np.testing.assert_allclose(run.finish_s, [0.5, np.nan, 0.85])
    out = summarize(run)
    assert out["timed_out_requests"] == 1 and out["num_finished"] == 2
    # with a longer timeout B runs after A
    relaxed = Engine(dataclasses.replace(config, gateway_timeout_s=0.5), wl, timer=_flat).run()
    assert not relaxed.timed_out.any() and relaxed.first_token_s[1] == pytest.approx(0.625)


def test_without_a_timeout_nothing_changes():
    wl = Workload.build([100, 100, 100], [4, 2, 2], arrival_s=[0.0, 0.1, 0.6])
    run = Engine(SEAT, wl, timer=_flat).run()
    assert run.timed_out is None and "timed_out_requests" not in summarize(run)


@pytest.mark.parametrize("bad", [0, -1.0, float("inf"), float("nan"), True, "3"])
def test_a_bad_timeout_is_refused_with_a_message(bad):
    with pytest.raises(SimInputError, match="gateway_timeout_s"):
        dataclasses.replace(SEAT, gateway_timeout_s=bad)


def test_a_timeout_needs_seconds_and_open_arrivals():
    config = dataclasses.replace(SEAT, gateway_timeout_s=1.0)
    with pytest.raises(SimInputError, match="timed run"):
        run_steps(config, Workload.build([100], [2], arrival_step=[1]))
    dep = deployment("L4", "Llama-3.1-8B")
    closed = Workload.build([100, 100], [2, 2], concurrency=1)
    with pytest.raises(SimInputError, match="open-loop"):
        run_timed(config_for(dep, gateway_timeout_s=1.0), closed, dep)


@settings(max_examples=150, deadline=None)
@given(
    case=st.booleans().flatmap(lambda a: cases(timed=True, async_scheduling=a)),
    timeout=st.floats(0.002, 0.4),
    max_tokens=st.none() | st.integers(0, 600),
)
def test_the_rule_holds_and_windows_match_single_steps(case, timeout, max_tokens):
    config, wl = case
    config = dataclasses.replace(
        config, gateway_timeout_s=timeout, max_num_queued_tokens=max_tokens
    )
    run = Engine(config, wl, timer=_toy_timer, max_steps=200_000).run()
    out = np.asarray(run.timed_out)
    refused = np.asarray(run.rejected) > 0
    done = run.finish_step > 0
    assert np.all(done.astype(int) + out + refused == 1)  # each request ends one way
    assert np.all(run.first_scheduled_step[out | refused] == 0)
    assert np.all(run.num_output_tokens[out] == 0)
    deadline = np.asarray(wl.arrival_s) + timeout
    ran = run.first_scheduled_step > 0
    starts = np.asarray(run.step_start_s)
    assert np.all(starts[run.first_scheduled_step[ran] - 1] < deadline[ran])  # began in time
    ends = starts + np.asarray(run.step_ms) / 1e3
    for i in np.flatnonzero(out):  # the engine reached its deadline with it still waiting
        assert ends.max() >= deadline[i]
