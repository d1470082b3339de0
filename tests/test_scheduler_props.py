"""Property tests (hypothesis, derandomized) for the scheduler's invariants.

On random small workloads and configurations (FCFS, priority and the teaching policies sjf and
fair-share, with tenants; chunked or not, thresholds,
watermarks, tiny pools that force preemptions, shared prefixes with prefix caching): the budget,
max_num_seqs and the pool are never exceeded; every request ends with exactly its output tokens
(or length-capped by max_model_len); the work done is conserved (scheduled tokens = prompt +
outputs - 1 + recomputed - prefix hits, per request); vLLM's prefix-cache counters query each
request once, at its first admission, and keep a preempted request's apart; batching quiet runs
changes nothing; the
same input gives the same run; in timed runs time never goes backwards and no request is
scheduled before it arrives.

Every property runs with `async_scheduling` off and on. Async adds its own (SCHEDULER.md g): no
request is scheduled after the step that produced its last token (g4); a request that finishes
while running is still in the running list one step later, and the run ends one output after
the last finish (g1, g5); where memory and max_num_seqs never bind, every step schedules the
same tokens as the synchronous engine (a8).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.config import SchedulerConfig
from sim.kv import cdiv
from sim.policy import TEACHING_POLICIES
from sim.replay import to_schema
from sim.scheduler import Engine, run_steps
from sim.timed import run_with_timer
from sim.workload import Workload

SETTINGS = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def cases(draw, timed: bool = False, async_scheduling: bool = False):
    bs = draw(st.sampled_from([4, 8, 16]))
    n = draw(st.integers(1, 10))
    mml = draw(st.integers(40, 400))
    prompt = draw(st.lists(st.integers(1, mml - 1), min_size=n, max_size=n))
    output = draw(st.lists(st.integers(1, 80), min_size=n, max_size=n))
    chunked = draw(st.booleans())
    budget_lo = 8 if chunked else mml
    budget = draw(st.integers(budget_lo, max(budget_lo, 600)))
    seqs = draw(st.integers(1, min(budget, 12)))
    # Any request fits alone (else the run would rightly stop with "can never be scheduled").
    min_blocks = int(cdiv(mml, bs)) + 1
    blocks = draw(st.integers(min_blocks, min_blocks * 4))
    caching = draw(st.booleans())
    config = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=seqs,
        max_model_len=mml,
        num_gpu_blocks=blocks,
        block_size=bs,
        enable_chunked_prefill=chunked,
        enable_prefix_caching=caching,
        policy=draw(st.sampled_from(["fcfs", "priority", *TEACHING_POLICIES])),
        long_prefill_token_threshold=draw(st.sampled_from([0, 0, 7, 33, 100])),
        watermark=draw(st.sampled_from([0.0, 0.0, 0.05, 0.2])),
        scheduler_reserve_full_isl=draw(st.booleans()),
        async_scheduling=async_scheduling,
    )
    prefix_id = draw(st.lists(st.integers(-1, 1), min_size=n, max_size=n))
    prefix_tokens = [
        draw(st.integers(0, p)) if pid >= 0 else 0 for p, pid in zip(prompt, prefix_id, strict=True)
    ]
    # a group shares one prefix length, as a system prompt would
    for g in (0, 1):
        members = [i for i in range(n) if prefix_id[i] == g]
        if members:
            length = min(prefix_tokens[i] for i in members)
            for i in members:
                prefix_tokens[i] = length
    kw = dict(
        priority=draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
        tenant=draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
        prefix_id=prefix_id,
        prefix_tokens=prefix_tokens,
    )
    if timed:
        arr = draw(st.lists(st.floats(0, 2.0, allow_nan=False), min_size=n, max_size=n))
        wl = Workload.build(prompt, output, arrival_s=arr, **kw)
    else:
        arr = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
        wl = Workload.build(prompt, output, arrival_step=arr, **kw)
    return config, wl


def _check_invariants(config: SchedulerConfig, wl: Workload, run) -> None:
    assert np.all(run.num_scheduled_tokens <= config.max_num_batched_tokens)
    assert np.all(run.num_scheduled_seqs <= config.max_num_seqs)
    assert np.all(run.num_running <= config.max_num_seqs)
    assert np.all((run.kv_blocks_used >= 0) & (run.kv_blocks_used <= run.kv_blocks_usable))
    assert run.kv_blocks_used[-1] == 0  # everything freed (cached blocks count as free)
    expected_out = np.minimum(wl.output_tokens, config.max_model_len - wl.prompt_tokens)
    np.testing.assert_array_equal(run.num_output_tokens, expected_out)
    assert np.all(run.finish_step > 0)
    # tokens: one per sampled step, in order, first and last at first_token/finish step
    counts = np.bincount(run.token_req, minlength=wl.num_requests)
    np.testing.assert_array_equal(counts, expected_out)
    order = np.lexsort((run.token_step, run.token_req))
    steps_sorted = run.token_step[order]
    first = np.searchsorted(run.token_req[order], np.arange(wl.num_requests))
    np.testing.assert_array_equal(steps_sorted[first], run.first_token_step)
    np.testing.assert_array_equal(steps_sorted[first + counts - 1], run.finish_step)
    assert np.all(run.first_scheduled_step <= run.first_token_step)
    assert run.num_preempted.sum() == run.num_preemptions.sum()
    assert run.num_finished.sum() == wl.num_requests
    # conservation of work
    work = wl.prompt_tokens + expected_out - 1 + run.num_recomputed_tokens
    work = work - run.num_prefix_hit_tokens
    assert run.num_scheduled_tokens.sum() == work.sum()
    # vLLM's PrefixCacheStats: one record per admission, a preempted request's kept apart, so
    # every request is queried once with its prompt (a head refused for blocks is not counted)
    stats = run.prefix_cache
    if not config.enable_prefix_caching:
        assert run.num_prefix_hit_tokens.sum() == 0
        assert stats == type(stats)()
    else:
        assert stats.queries == wl.prompt_tokens.sum()
        assert stats.hits + stats.preempted_hits == run.num_prefix_hit_tokens.sum()
        assert (stats.preempted_queries > 0) == (run.total_preemptions > 0)
        assert stats.preempted_hits <= stats.preempted_queries
    if run.detail is not None:
        per_req = np.zeros(wl.num_requests, dtype=np.int64)
        for d in run.detail:
            np.add.at(per_req, d.scheduled_req, d.scheduled_tokens)
            assert d.kv_blocks_used_after_schedule <= run.kv_blocks_usable
        np.testing.assert_array_equal(per_req, work)
    if config.async_scheduling:
        _check_async(wl, run)
    else:
        assert run.num_steps == run.finish_step.max()  # the run ends with the last finish


def _check_async(wl: Workload, run) -> None:
    """SCHEDULER g1, g4, g5 on a finished async run."""
    assert run.num_steps == run.finish_step.max() + 1  # the last finish is seen one output later
    assert run.num_scheduled_tokens[-1] == 0
    if run.detail is None:
        return
    last_scheduled = np.zeros(wl.num_requests, dtype=np.int64)
    for d in run.detail:
        last_scheduled[d.scheduled_req] = d.step
        assert np.all(d.step <= run.finish_step[d.scheduled_req])  # no wasted last step (g4)
    for r in range(wl.num_requests):
        after = run.detail[run.finish_step[r]]  # the step after its last token's
        if r in run.detail[run.finish_step[r] - 1].running and r not in after.preempted:
            assert r in after.running and r not in after.scheduled_req  # freed only now (g5)
        assert r in run.detail[run.finish_step[r] - 1].finished  # recorded at its last token


BOTH = st.sampled_from([False, True])


@SETTINGS
@given(BOTH.flatmap(lambda a: cases(async_scheduling=a)))
def test_step_runs_keep_every_invariant(case):
    config, wl = case
    run = run_steps(config, wl, record_detail=True, max_steps=200_000)
    _check_invariants(config, wl, run)
    assert run.num_steps == len(run.num_scheduled_tokens) == len(run.detail)


@SETTINGS
@given(BOTH.flatmap(lambda a: cases(async_scheduling=a)))
def test_runs_are_deterministic(case):
    config, wl = case
    first = run_steps(config, wl, record_detail=True, max_steps=200_000)
    again = run_steps(config, wl, record_detail=True, max_steps=200_000)
    assert to_schema(first) == to_schema(again)
    for name in ("num_scheduled_tokens", "kv_read_tokens", "attn_pairs", "kv_blocks_used"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    np.testing.assert_array_equal(first.token_req, again.token_req)


def _toy_timer(q, s, kv, attn):
    """A made-up affine step time (ms): the properties hold for any positive step time."""
    return 2.0 + 0.01 * q + 0.05 * s + 1e-4 * kv + 1e-6 * attn


@SETTINGS
@given(BOTH.flatmap(lambda a: cases(timed=True, async_scheduling=a)))
def test_timed_runs_move_forward_and_respect_arrivals(case):
    config, wl = case
    run = run_with_timer(config, wl, _toy_timer, max_steps=200_000)
    _check_invariants(config, wl, run)
    assert run.timed and np.all(run.step_ms > 0)
    ends = run.step_start_s + run.step_ms / 1e3
    assert np.all(run.step_start_s[1:] >= ends[:-1] - 1e-12)  # time never goes backwards
    start_of_first = run.step_start_s[run.first_scheduled_step - 1]
    assert np.all(start_of_first >= wl.arrival_s)
    np.testing.assert_allclose(run.first_token_s, ends[run.first_token_step - 1])
    np.testing.assert_allclose(run.finish_s, ends[run.finish_step - 1])


@SETTINGS
@given(BOTH.flatmap(lambda a: cases(timed=True, async_scheduling=a)), st.integers(0, 60))
def test_a_run_paused_and_resumed_is_the_same_run(case, pause):
    """`Engine.advance(until_step=k)` stops after exactly k steps (no window or quiet run goes
    past it), and running on from there gives the run that never paused."""
    config, wl = case
    whole = run_with_timer(config, wl, _toy_timer, max_steps=200_000)
    engine = Engine(config, wl, timer=_toy_timer, max_steps=200_000)
    engine.advance(until_step=pause)
    assert engine.step == min(pause, whole.num_steps)
    resumed = engine.run()
    assert resumed.num_steps == whole.num_steps
    np.testing.assert_array_equal(resumed.num_scheduled_tokens, whole.num_scheduled_tokens)
    np.testing.assert_array_equal(resumed.token_req, whole.token_req)
    np.testing.assert_array_equal(resumed.finish_step, whole.finish_step)
    np.testing.assert_allclose(resumed.step_start_s, whole.step_start_s, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("gpu", "rate_per_s", "async_scheduling"),
    [("H100-SXM", 12.0, False), ("L4", 2.0, False), ("A100-80GB", 8.0, True)],
)
def test_the_loops_pricing_is_the_cost_models_step_by_step(gpu, rate_per_s, async_scheduling):
    """With the calibrated cost model (not affine: tiles, a roofline), the loop's own pricing
    (the model's tables, sim/engine/pricing.py) and the model asked step by step from Python
    give the same steps, tokens and clock."""
    from sim.generators import poisson_workload
    from sim.timed import config_for, deployment, timer_for

    dep = deployment(gpu, "Llama-3.1-8B")
    config = dataclasses.replace(config_for(dep), async_scheduling=async_scheduling)
    wl = poisson_workload(
        300, rate_per_s, prompt="lognormal:800:0.8", output="lognormal:200:0.8", seed=11
    )
    timer = timer_for(dep, async_scheduling=async_scheduling)
    inside = Engine(config, wl, timer=timer).run()
    asked = Engine(config, wl, timer=lambda *shape: timer(*shape)).run()
    assert inside.num_steps == asked.num_steps > 300
    np.testing.assert_array_equal(inside.num_scheduled_tokens, asked.num_scheduled_tokens)
    np.testing.assert_array_equal(inside.token_req, asked.token_req)
    np.testing.assert_allclose(inside.step_start_s, asked.step_start_s, rtol=0, atol=1e-9)


@SETTINGS
@given(cases())
def test_async_schedules_the_same_tokens_where_nothing_binds(case):
    """With a pool that holds every sequence at once, max_num_seqs above the request count and
    no threshold (its lone-request exemption counts the running list, which async keeps a
    finished request in for one step), async changes no step's tokens (SCHEDULER a8)."""
    config, wl = case
    roomy = dataclasses.replace(
        config,
        num_gpu_blocks=int(cdiv(wl.prompt_tokens + wl.output_tokens, config.block_size).sum()) + 1,
        max_num_seqs=max(config.max_num_seqs, wl.num_requests),
        max_num_batched_tokens=max(config.max_num_batched_tokens, wl.num_requests),
        long_prefill_token_threshold=0,
        watermark=0.0,
    )
    sync = run_steps(roomy, wl, record_detail=True)
    asyn = run_steps(dataclasses.replace(roomy, async_scheduling=True), wl, record_detail=True)
    assert asyn.num_steps == sync.num_steps + 1
    for a, b in zip(asyn.detail, sync.detail, strict=False):
        assert a.scheduled_req.tolist() == b.scheduled_req.tolist()
        assert a.scheduled_tokens.tolist() == b.scheduled_tokens.tolist()
    np.testing.assert_array_equal(asyn.first_token_step, sync.first_token_step)
    np.testing.assert_array_equal(asyn.finish_step, sync.finish_step)
    assert asyn.total_preemptions == sync.total_preemptions == 0
