"""A request whose arrival the steps before it decide (sim/scenarios.py `timed_run`): the engine
holds it back, runs the steps before its arrival step, pins its arrival to the clock and goes on
(`Engine.hold`, `advance`, `pin_arrival`). It must be the run that times the steps before the
arrival once on their own and then times the whole workload with that arrival (the way it was
done before, kept here as the reference)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.cost import Deployment
from sim.scenarios import ARRIVAL_EARLY_S, stream_then_cached_prompt, stream_then_prompt, timed_run
from sim.scheduler import Engine
from sim.timed import config_for, run_timed, timer_for
from sim.workload import Workload

DEP = Deployment("H100-SXM", "Llama-3.1-8B")
# a held-back arrival is infinite: no window may do arithmetic with it (it once cast inf to int)
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _with_arrivals(wl: Workload, arrival_s: np.ndarray) -> Workload:
    return dataclasses.replace(wl, arrival_s=arrival_s, arrival_step=None)


def _reference(scenario, config, dep, record_detail=False):
    """Time the steps before the arrival without the long prompt, then run everything again."""
    wl = scenario.workload()
    late = scenario.long_index
    first = np.arange(wl.num_requests) != late
    arrival_s = np.zeros(wl.num_requests)
    if scenario.arrival() > 1 and first.any():
        warm = Engine(
            config,
            _with_arrivals(wl, arrival_s).take(np.flatnonzero(first)),
            timer=timer_for(dep, async_scheduling=config.async_scheduling),
            max_steps=scenario.arrival() - 1,
            stop_at_max_steps=True,
        ).run()
        if warm.num_steps:
            end = float(warm.step_start_s[-1] + warm.step_ms[-1] / 1e3)
            arrival_s[late] = max(end - ARRIVAL_EARLY_S, 0.0)
    return run_timed(config, _with_arrivals(wl, arrival_s), dep, record_detail=record_detail)


CASES = [
    # users, their prompt, the long prompt, budget, chunked, async
    (16, 512, 2000, 2048, True, False),
    (64, 1024, 20000, 4096, True, True),
    (128, 16, 8000, 512, True, False),
    (4, 1024, 100, 8192, False, True),  # the engine runs out of work before the arrival step
    (0, 16, 4000, 1024, True, False),  # no users: the long prompt arrives at 0 s
    (1, 1024, 8000, 8192, True, True),
]


@pytest.mark.parametrize(("users", "user_prompt", "prompt", "budget", "chunked", "asyn"), CASES)
def test_the_paused_run_is_the_reference_run(users, user_prompt, prompt, budget, chunked, asyn):
    scenario = stream_then_prompt(users, user_prompt, prompt, budget)
    config = config_for(DEP, max_num_batched_tokens=budget, max_num_seqs=256)
    config = dataclasses.replace(config, async_scheduling=asyn)
    if not chunked:
        config = dataclasses.replace(config, enable_chunked_prefill=False, max_model_len=budget)
    run, ref = timed_run(scenario, config, DEP), _reference(scenario, config, DEP)
    late = scenario.long_index
    assert run.arrival_s[late] == pytest.approx(ref.arrival_s[late], abs=1e-12)
    assert run.num_steps == ref.num_steps
    for name in ("num_scheduled_tokens", "token_req", "first_token_step", "finish_step"):
        np.testing.assert_array_equal(getattr(run, name), getattr(ref, name), err_msg=name)
    np.testing.assert_allclose(run.step_start_s, ref.step_start_s, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.first_token_s, ref.first_token_s, rtol=0, atol=1e-12)
    if users and scenario.arrival() > 1:  # the long prompt is first scheduled in its step
        assert run.first_scheduled_step[late] == scenario.arrival()


def test_a_cached_prompt_scenario_and_its_step_detail():
    scenario = stream_then_cached_prompt(32, 512, 6000, 2048, cached_tokens=2048)
    config = config_for(DEP, max_num_batched_tokens=2048, max_num_seqs=256)
    run = timed_run(scenario, config, DEP, record_detail=True)
    ref = _reference(scenario, config, DEP, record_detail=True)
    assert [d.step for d in run.detail] == [d.step for d in ref.detail]
    for a, b in zip(run.detail, ref.detail, strict=True):
        np.testing.assert_array_equal(a.scheduled_req, b.scheduled_req)
        np.testing.assert_array_equal(a.waiting, b.waiting)


def test_only_the_last_arrival_of_a_timed_run_can_be_held_and_pinned():
    wl = Workload.build([100, 100, 100], [5, 5, 5], arrival_s=[0.0, 0.0, 1.0])
    config = config_for(DEP, max_num_batched_tokens=2048, max_num_seqs=256)
    engine = Engine(config, wl, timer=timer_for(DEP))
    with pytest.raises(ValueError):
        engine.hold(0)  # not the last to arrive
    with pytest.raises(ValueError):
        engine.pin_arrival(2, 0.5)  # not held
    engine.hold(2)
    engine.advance()  # runs the two, then stops: idle with the third held back
    assert engine.num_finished == 2 and engine.now_s > 0
    now = engine.now_s
    engine.pin_arrival(2, now)
    with pytest.raises(ValueError):
        engine.pin_arrival(2, now)  # it is no longer held
    run = engine.run()
    assert run.arrival_s[2] == now and np.all(run.finish_step > 0)
    assert run.step_start_s[run.first_scheduled_step[2] - 1] >= now


@pytest.mark.parametrize("budget", [512, 2048, 4096, 16384])
def test_the_choosing_budget_lanes_are_the_reference_runs(budget):
    """The lesson's own lanes (128 users, a 20,000-token prompt): long windows with a landing
    guess from the last window's mean step, where the held-back arrival must stay out."""
    from lessons.choosing_budget import lesson as cb

    p = cb.Params()
    scenario = cb.scenario(p.decodes, p.prompt, budget)
    config = cb.lane_config(p.gpu, p.model, p.decodes, p.prompt, budget)
    dep = Deployment(p.gpu, p.model)
    run, ref = timed_run(scenario, config, dep), _reference(scenario, config, dep)
    np.testing.assert_array_equal(run.token_req, ref.token_req)
    np.testing.assert_array_equal(run.token_step, ref.token_step)
    np.testing.assert_allclose(run.step_start_s, ref.step_start_s, rtol=0, atol=1e-12)
