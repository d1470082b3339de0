"""Preemptions planned inside windows of steps (sim/victims.py, sim/window.py): the victims are the
shortest tail of the running list whose blocks cover what the others need, and a window that
plans them takes the same decisions as the engine one step at a time, step for step."""

import dataclasses

import numpy as np
import pytest

from sim.config import SchedulerConfig
from sim.generators import from_spec
from sim.replay import to_schema
from sim.scheduler import _FIELDS, Engine
from sim.timed import config_for, deployment, timer_for
from sim.victims import tail_victims, withdraw
from sim.workload import Workload
from tests.test_admits import _count_single_steps

RUN_ARRAYS = (
    *_FIELDS,  # every per-step column of the log
    "token_req",
    "token_step",
    "first_scheduled_step",
    "first_token_step",
    "finish_step",
    "num_preemptions",
    "num_output_tokens",
    "num_recomputed_tokens",
)


def test_the_tail_goes_until_the_requests_before_it_have_their_blocks():
    # four decoders; three need a block, one is free: short by two before any victim
    need = np.array([1, 0, 1, 1])
    held = np.array([3, 2, 1, 1])
    assert tail_victims(1 - 3, need, held) == 1  # the last one's block back and its need gone
    held = np.array([3, 2, 0, 0])  # the tail holds nothing yet: it goes, then the next
    assert tail_victims(0 - 3, need, held) == 3
    # one request short of its block, alone: it preempts itself
    assert tail_victims(-1, np.array([1]), np.array([4])) == 1


def test_withdraw_gives_back_a_victims_steps_budget_and_blocks():
    busy = np.full(6, 3)
    left = np.full(6, 10)
    avail = np.zeros(6, dtype=np.int64)
    # preempted at step 2 with 7 tokens computed (blocks of 4): it would have decoded to step 4
    withdraw(busy, left, avail, 2, np.array([4]), np.array([7]), 4)
    assert busy.tolist() == [3, 3, 2, 2, 2, 3]
    assert left.tolist() == [10, 10, 11, 11, 11, 10]
    # after each step's allocation it would have held cdiv(8, 4), cdiv(9, 4), cdiv(10, 4)
    assert avail.tolist() == [0, 0, 2, 3, 3, 0]


def _same(a, b, timed: bool) -> None:
    assert a.num_steps == b.num_steps
    for name in RUN_ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    if timed:
        np.testing.assert_allclose(a.step_start_s, b.step_start_s, rtol=0, atol=1e-9)
        np.testing.assert_allclose(a.step_ms, b.step_ms, rtol=0, atol=1e-9)


@pytest.mark.parametrize("limit", [None, "max_num_queued_reqs", "max_num_queued_tokens"])
def test_an_overloaded_l4_plans_its_preemptions_inside_windows_exactly(limit, monkeypatch):
    dep = deployment("L4", "Llama-3.1-8B")
    spec = "poisson:n=600,rate=1.3,prompt=lognormal:800:0.8,output=lognormal:200:0.8,seed=3"
    wl = from_spec(spec)
    kw = {} if limit is None else {limit: {"max_num_queued_reqs": 300}.get(limit, 40_000)}
    cfg = config_for(dep, **kw)
    timer = timer_for(dep)
    slow = Engine(cfg, wl, timer=timer, batch_quiet_runs=False).run()
    counts = _count_single_steps(monkeypatch)
    fast = Engine(cfg, wl, timer=timer).run()
    _same(fast, slow, timed=True)
    preemptions = int(slow.num_preemptions.sum())
    assert preemptions > 50  # the pool runs dry again and again
    # nearly all of them planned by windows, not left to single steps
    assert counts["preempting"] < preemptions // 10


def _thrashing_replay() -> tuple[SchedulerConfig, Workload]:
    """Step replay on a pool far too small: requests are preempted, resumed and preempted
    again, several of them more than once."""
    rng = np.random.default_rng(7)
    n = 40
    cfg = SchedulerConfig(
        max_num_batched_tokens=256,
        max_num_seqs=16,
        max_model_len=200,
        num_gpu_blocks=40,
        block_size=8,
    )
    wl = Workload.build(
        rng.integers(5, 120, n), rng.integers(20, 150, n), arrival_step=rng.integers(1, 60, n)
    )
    return cfg, wl


def test_a_request_preempted_twice_in_one_window_is_recorded_as_single_steps_record_it(
    monkeypatch,
):
    cfg, wl = _thrashing_replay()
    slow = Engine(cfg, wl, record_detail=True, batch_quiet_runs=False).run()
    counts = _count_single_steps(monkeypatch)
    fast = Engine(cfg, wl, record_detail=True).run()
    assert to_schema(fast) == to_schema(slow)  # every step's lists, queue order included
    _same(fast, slow, timed=False)
    assert int(slow.num_preemptions.max()) >= 3
    assert counts["preempting"] < int(slow.num_preemptions.sum()) // 4
    # and without the per-step detail, the queue is rebuilt from the window's victims alone
    _same(Engine(cfg, wl).run(), slow, timed=False)


def _toy_timer(q, s, kv, attn):
    return 2.0 + 0.01 * q + 0.05 * s + 1e-4 * kv + 1e-6 * attn


@pytest.mark.parametrize("seed", range(40))
def test_random_small_pools_take_the_same_steps_in_windows(seed):
    """Random configurations (chunked or not, watermark, full-sequence check, both policies)
    with pools small enough to preempt, as step replays and on a clock."""
    rng = np.random.default_rng(seed)
    bs = int(rng.choice([4, 8, 16]))
    n = int(rng.integers(5, 60))
    mml = int(rng.integers(40, 600))
    chunked = bool(rng.random() < 0.8)
    budget = int(rng.integers(8 if chunked else mml, max(mml, 800) + 1))
    min_blocks = -(-mml // bs) + 1
    cfg = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=int(rng.integers(1, min(budget, 40) + 1)),
        max_model_len=mml,
        num_gpu_blocks=int(rng.integers(min_blocks, min_blocks * 3)),
        block_size=bs,
        enable_chunked_prefill=chunked,
        policy=str(rng.choice(["fcfs", "fcfs", "priority"])),
        watermark=float(rng.choice([0.0, 0.05])),
        scheduler_reserve_full_isl=bool(rng.random() < 0.7),
    )
    prompt, output = rng.integers(1, mml, n), rng.integers(1, 300, n)
    timed = seed % 2 == 1
    if timed:
        wl = Workload.build(prompt, output, arrival_s=np.sort(rng.random(n)))
        kw = {"timer": _toy_timer}
    else:
        wl = Workload.build(prompt, output, arrival_step=rng.integers(1, 40, n))
        kw = {}
    slow = Engine(cfg, wl, batch_quiet_runs=False, max_steps=300_000, **kw).run()
    fast = Engine(cfg, wl, max_steps=300_000, **kw).run()
    _same(fast, slow, timed)


def test_a_window_cut_at_its_planned_preemption_leaves_that_request_running():
    """A timed window whose landings disagree is cut at step m; a preemption the plan put at
    step m is not in the cut, and the request must stay running, not finish (found while
    building: H100 with max_num_queued_reqs, a victim exactly at the cut)."""
    dep = deployment("H100-SXM", "Llama-3.1-8B")
    spec = "poisson:n=1443,rate=30,prompt=lognormal:800:0.8,output=lognormal:200:0.8,seed=127"
    cfg = dataclasses.replace(config_for(dep, max_num_queued_reqs=43), num_gpu_blocks=2796)
    wl = from_spec(spec)
    timer = timer_for(dep)
    fast = Engine(cfg, wl, timer=timer).run()
    slow = Engine(cfg, wl, timer=timer, batch_quiet_runs=False).run()
    _same(fast, slow, timed=True)
