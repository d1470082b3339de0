"""The teaching policies (sim/policy.py: sjf, fair-share, prefix-aware), which vLLM does not
have, on small hand-made cases: the order of the waiting queue and the victim each one picks.
The invariants every policy must keep (budget, blocks, every request finishes, determinism,
windows equal to single steps) are in tests/test_scheduler_props.py, which draws these
policies too."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.policy import POLICY_REGISTRY, TEACHING_POLICIES, make_policy
from sim.replay import to_schema
from sim.scheduler import Engine, run_steps
from sim.workload import Workload


def _policy(name: str, *, jobs=None, tenants=None):
    n = len(jobs) if jobs is not None else len(tenants)
    jobs = np.asarray(jobs if jobs is not None else [10] * n)
    return make_policy(
        name,
        priority=np.zeros(jobs.size, dtype=np.int64),
        arrival_time=np.arange(jobs.size, dtype=np.float64),
        request_ids=[str(i) for i in range(jobs.size)],
        job_tokens=jobs,
        tenant=np.asarray(tenants if tenants is not None else [0] * jobs.size),
    )


def test_the_teaching_policies_are_registered_and_named_apart():
    assert set(TEACHING_POLICIES) <= set(POLICY_REGISTRY)
    assert {"fcfs", "priority"} <= set(POLICY_REGISTRY)
    for name in TEACHING_POLICIES:
        SchedulerConfig(
            max_num_batched_tokens=64,
            max_num_seqs=4,
            max_model_len=64,
            num_gpu_blocks=8,
            policy=name,
        )
    with pytest.raises(SimInputError, match="unknown policy"):
        SchedulerConfig(
            max_num_batched_tokens=64,
            max_num_seqs=4,
            max_model_len=64,
            num_gpu_blocks=8,
            policy="lifo",
        )


def _engine_arrays(p) -> tuple[np.ndarray, np.ndarray]:
    """The request rows and config the engine's queue and victim rules read, from what the
    policy declares (sim/engine/state.py fills the same rows)."""
    from sim.engine import layout as L

    caps = p.engine_capabilities()
    n = p.priority.shape[0]
    req = np.zeros((L.REQ_ROWS, n), dtype=np.int64)
    if caps.queue_rank is not None:
        req[L.QUEUE_RANK] = caps.queue_rank
    if caps.victim_rank is not None:
        req[L.VICTIM_KEY] = caps.victim_rank
    req[L.TENANT] = np.unique(p.tenant, return_inverse=True)[1].reshape(-1)
    cfg = np.zeros(L.CFG_ROWS, dtype=np.int64)
    cfg[L.C_QUEUE] = L.QUEUE_DEQUE if caps.queue_rank is None else L.QUEUE_RANKED
    cfg[L.C_VICTIM] = caps.victim_kind
    return req, cfg


def _queue(p, arrived, preempted=(), waiting=()) -> list[int]:
    """The waiting queue the engine keeps (sim/engine/kernel.py `_enqueue`): `waiting` and
    `arrived` join in order, then `preempted` go back in preemption order."""
    from sim.engine import kernel
    from sim.engine import layout as L
    from sim.engine.queues import wait_at

    req, cfg = _engine_arrays(p)
    wait = np.zeros(req.shape[1] + 1, dtype=np.int64)
    st = np.zeros(L.ST_ROWS, dtype=np.int64)
    for r in [*waiting, *arrived]:
        kernel._enqueue(req, cfg, wait, st, int(r), False)
    for r in preempted:
        kernel._enqueue(req, cfg, wait, st, int(r), True)
    return [int(wait_at(wait, st, i)) for i in range(st[L.S_WAIT_LEN])]


def _victim(p, running) -> int:
    """The running request the engine preempts (sim/engine/kernel.py `_victim`)."""
    from sim.engine import kernel

    req, cfg = _engine_arrays(p)
    run = np.asarray(running, dtype=np.int64)
    tcount = np.zeros(p.tenant.shape[0] + 1, dtype=np.int64)  # tenant indices < n
    return int(run[kernel._victim(req, cfg, run, run.shape[0], tcount)])


def test_sjf_orders_by_job_size_and_preempts_the_largest():
    p = _policy("sjf", jobs=[50, 10, 30, 10])
    assert _queue(p, range(4)) == [1, 3, 2, 0]  # smallest first; equal jobs in arrival order
    assert _queue(p, [], preempted=[0, 1], waiting=[3, 2]) == [1, 3, 2, 0]
    assert _victim(p, [1, 0, 2]) == 0  # the largest job


def test_fair_share_takes_tenants_in_turn_and_preempts_the_heaviest():
    # tenant 0 sends four requests first, tenant 1 two, tenant 2 one
    p = _policy("fair-share", tenants=[0, 0, 0, 0, 1, 1, 2])
    assert _queue(p, range(7)) == [0, 4, 6, 1, 5, 2, 3]  # one of each tenant per round
    assert _victim(p, [0, 4, 1, 6, 2]) == 2  # tenant 0 runs three: its last admitted goes


def test_sjf_admits_the_short_job_before_the_long_one_in_a_run():
    config = SchedulerConfig(
        max_num_batched_tokens=128,
        max_num_seqs=1,
        max_model_len=1024,
        num_gpu_blocks=80,
        policy="sjf",
    )
    wl = Workload.build([100, 20], [50, 5], arrival_step=[1, 1])  # both wait for one seat
    run = run_steps(config, wl)
    assert run.first_scheduled_step[1] < run.first_scheduled_step[0]
    fcfs = run_steps(SchedulerConfig(**{**config.__dict__, "policy": "fcfs"}), wl)
    assert fcfs.first_scheduled_step[0] < fcfs.first_scheduled_step[1]


def test_prefix_aware_puts_the_most_cached_first_and_keeps_fcfs_among_equals():
    from sim.engine import layout as L
    from sim.engine.queues import wait_at, wait_sort_slots

    p = _policy("prefix-aware", jobs=[10] * 5)
    assert p.engine_capabilities().reorders_by_cache
    assert not _policy("fcfs", jobs=[10]).engine_capabilities().reorders_by_cache
    assert _queue(p, range(5)) == [0, 1, 2, 3, 4]  # arrivals at the tail, as FCFS
    # the engine's sort of the whole queue by cached blocks (kernel `_sort_by_cache`)
    wait = np.array([0, 1, 2, 3, 4, 0], dtype=np.int64)
    st = np.zeros(L.ST_ROWS, dtype=np.int64)
    st[L.S_WAIT_LEN] = 5
    wait_sort_slots(wait, st, np.arange(5), 5, np.array([0, 2, 0, 5, 2]))
    assert [int(wait_at(wait, st, i)) for i in range(5)] == [3, 1, 4, 0, 2]
    assert _queue(p, [], preempted=[4], waiting=[1, 2]) == [4, 1, 2]  # preempted first
    assert _victim(p, [2, 0, 1]) == 1  # the last running, as FCFS


def test_prefix_aware_serves_a_cached_system_prompt_first_in_a_run():
    config = SchedulerConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=1,
        max_model_len=4096,
        num_gpu_blocks=400,
        enable_prefix_caching=True,
        policy="prefix-aware",
    )
    # r0 and r2 share a 1,024-token system prompt; r1 has its own. One seat: r0 runs first.
    wl = Workload.build(
        [1100, 1100, 1100],
        [4, 4, 4],
        arrival_step=[1, 1, 1],
        prefix_id=[0, 1, 0],
        prefix_tokens=[1024, 1024, 1024],
    )
    run = run_steps(config, wl)
    assert run.first_scheduled_step.tolist()[0] < run.first_scheduled_step[2]
    assert run.first_scheduled_step[2] < run.first_scheduled_step[1]  # cached prefix first
    assert run.num_prefix_hit_tokens[2] == 1024
    fcfs = run_steps(dataclasses.replace(config, policy="fcfs"), wl)
    assert fcfs.first_scheduled_step[1] < fcfs.first_scheduled_step[2]


def test_requests_arriving_at_the_same_instant_are_ordered_as_listed():
    """vLLM stamps each request with its own arrival time, in the order it receives them. Two
    requests at the same instant under PRIORITY: the later-listed one is the victim, and the
    run ends (with exact ties, vLLM's rule among equals, first in running order, had the two
    chunked prefills preempt each other in turn forever: a case hypothesis found)."""
    from sim.scheduler import Engine

    config = SchedulerConfig(
        max_num_batched_tokens=295,
        max_num_seqs=6,
        max_model_len=168,
        num_gpu_blocks=43,
        block_size=4,
        policy="priority",
        long_prefill_token_threshold=33,
        scheduler_reserve_full_isl=False,
    )
    wl = Workload.build([78, 111], [80, 49], arrival_s=[0.28, 0.28])
    run = Engine(config, wl, timer=lambda q, s, kv, a: 2.0 + 0.01 * q, max_steps=5000).run()
    assert run.num_preemptions.tolist()[0] == 0 and run.num_preemptions[1] > 0
    assert np.all(run.finish_step > 0)


def _shared_prefix_traffic(seed: int) -> tuple[SchedulerConfig, Workload]:
    """Prefix-aware traffic in a pool small enough that decodes evict cached blocks while
    requests wait: three system prompts, 5 to 24 requests, sync or async."""
    rng = np.random.default_rng(seed)
    bs, n, mml = int(rng.choice([4, 8])), int(rng.integers(5, 25)), int(rng.integers(60, 200))
    pid = rng.integers(-1, 3, n)
    ptok = np.where(pid >= 0, rng.integers(1, 6, n) * bs, 0)
    for g in np.unique(pid[pid >= 0]):  # a group shares one prefix length
        ptok[pid == g] = ptok[pid == g].min()
    config = SchedulerConfig(
        max_num_batched_tokens=int(rng.integers(mml, 400)),
        max_num_seqs=int(rng.integers(1, 8)),
        max_model_len=mml,
        num_gpu_blocks=-(-mml // bs) + 1 + int(rng.integers(0, 20)),
        block_size=bs,
        enable_prefix_caching=True,
        policy="prefix-aware",
        async_scheduling=bool(rng.integers(0, 2)),
    )
    wl = Workload.build(
        np.minimum(ptok + rng.integers(1, 40, n), mml - 1),
        rng.integers(1, 60, n),
        arrival_step=np.sort(rng.integers(1, 60, n)),
        prefix_id=pid,
        prefix_tokens=ptok,
    )
    return config, wl


@pytest.mark.parametrize("policy", ["fcfs", "priority", "sjf", "fair-share", "prefix-aware"])
def test_the_lessons_runs_price_each_step_as_the_cost_model_does(policy):
    """The policies lesson's opening runs (prefix caching on, the queue behind a head waiting
    for blocks): priced inside the loop from the cost model's tables, or by calling the cost
    model step by step, they are the same run, the same counters and every step's queue."""
    from lessons.policies import lesson as pol
    from sim.cost import Deployment
    from sim.timed import run_timed, timer_for

    p = pol.Params()
    made = pol.runs_for(p.gpu, p.model, p.tp, p.dtype, p.load_pct, 70, 60, True)
    base = made.runs[policy]
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype)
    fast = run_timed(base.config, base.workload, dep, record_detail=True)
    timer = timer_for(dep, async_scheduling=base.config.async_scheduling)

    def by_call(*shape):  # the same model, asked one step at a time
        return timer(*shape)

    single = Engine(base.config, base.workload, timer=by_call, record_detail=True).run()
    assert to_schema(fast) == to_schema(single)
    np.testing.assert_allclose(fast.step_start_s, single.step_start_s, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(fast.num_waiting, single.num_waiting)
    assert fast.prefix_cache == single.prefix_cache
    assert fast.total_preemptions + int(fast.num_waiting.max()) > 0
