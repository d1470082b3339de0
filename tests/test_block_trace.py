"""Block tables traced step by step (sim/blocks.py) against the engine's own block accounting.

A traced run must take the same decisions as the untraced one (the differential checks below, on
vLLM's recordings and on random cases); its tables must add up to the blocks the run says are in
use at the end of every turn, hold ceil(computed tokens / block_size) blocks per running request,
never hand out the null block or one block to two requests (without shared prefixes), and free
a victim's blocks at once. Workloads where many requests have the same prompt, exactly a shared
prefix (their output blocks are shared through the cache, sim/kv.py "po" keys), are traced too:
a traced run goes step by step, so it also checks the quiet runs that batch those steps.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.blocks import CACHED, FREE, NULL
from sim.config import SchedulerConfig
from sim.kv import cdiv
from sim.policy import TEACHING_POLICIES
from sim.replay import config_from_settings, to_schema, workload_from_requests
from sim.scheduler import Engine
from sim.workload import Workload
from tests.test_scheduler_props import BOTH, SETTINGS, _toy_timer, cases

FEWER = settings(SETTINGS, max_examples=60)  # each example runs the engine twice, step by step

DATA = Path(__file__).parent / "data"
RECORDINGS = sorted(
    p for p in DATA.glob("*.json") if "config_error" not in json.loads(p.read_text())
)


def _pair(config, wl, timer=None):
    plain = Engine(config, wl, timer=timer, record_detail=True, max_steps=200_000).run()
    traced = Engine(config, wl, timer=timer, trace_blocks=True, max_steps=200_000).run()
    return plain, traced


def _end_of_turn_used(run) -> np.ndarray:
    """Blocks in use at the end of each turn, from the run's own records: the synchronous
    engine measures after its own output; async records step k's count at turn k + 1."""
    used = np.array([d.kv_blocks_used for d in run.detail])
    if run.config.async_scheduling and used.size:
        used = np.concatenate([[run.detail[0].kv_blocks_used_after_schedule], used[:-1]])
    return used


def _computed_per_turn(run) -> np.ndarray:
    """Each request's computed tokens at the end of each turn, replayed from the detail."""
    n, steps = run.workload.num_requests, run.num_steps
    computed = np.zeros(n, dtype=np.int64)
    hits = run.num_prefix_hit_tokens  # only lessons without shared prefixes use this below
    out = np.zeros((steps, n), dtype=np.int64)
    late = run.config.async_scheduling
    finished_in = {}
    for d in run.detail:
        for r in d.finished.tolist():
            finished_in[r] = d.step + (1 if late else 0)
    for k, d in enumerate(run.detail):
        computed[d.preempted] = 0
        computed[d.scheduled_req] += d.scheduled_tokens
        out[k] = computed
        for r, step in finished_in.items():
            if step == k + 1:
                computed[r] = 0
                out[k, r] = 0
    assert not hits.any()
    return out


def _check_trace(run) -> None:
    trace = run.blocks
    cfg = run.config
    assert trace.num_steps == run.num_steps
    used = trace.used()
    np.testing.assert_array_equal(used, _end_of_turn_used(run))
    np.testing.assert_array_equal(trace.table_lens, cdiv(trace.num_computed_tokens, cfg.block_size))
    for queries, hits in (
        (trace.prefix_queries, trace.prefix_hits),
        (trace.preempted_queries, trace.preempted_hits),
    ):
        assert np.all(np.diff(hits) >= 0) and np.all(np.diff(queries) >= 0)
        assert np.all(hits <= queries)
    # the counters at the last turn are the run's, and count each admission's hits once
    if trace.num_steps:
        last = (trace.prefix_queries, trace.prefix_hits, trace.preempted_queries)
        last += (trace.preempted_hits,)
        assert tuple(int(a[-1]) for a in last) == dataclasses.astuple(run.prefix_cache)
    stats = run.prefix_cache
    assert stats.hits + stats.preempted_hits == run.num_prefix_hit_tokens.sum()
    if not cfg.enable_prefix_caching and trace.num_steps:
        assert trace.prefix_queries[-1] == trace.preempted_queries[-1] == 0
    for k in range(trace.num_steps):
        ids = trace.table_ids[k]
        assert np.unique(ids).size == used[k]  # every block held, shared ones counted once
        assert ids.size == int(trace.table_lens[k].sum())
        assert not np.isin(0, ids), "the null block is never handed out"
        owners = trace.owners(k)
        assert owners[0] == NULL and np.count_nonzero(owners == NULL) == 1
        held = np.count_nonzero(owners >= 0)
        free = np.count_nonzero((owners == FREE) | (owners == CACHED))
        assert held == used[k]
        assert held + free == cfg.kv_blocks_usable
        if not cfg.enable_prefix_caching:
            assert np.unique(ids).size == ids.size, "no block is in two tables"
            assert trace.cached_free[k].size == 0


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_traced_recordings_take_vllms_decisions_and_add_up(path):
    scenario = json.loads(path.read_text())
    config = config_from_settings(scenario["settings"])
    wl = workload_from_requests(scenario["requests"])
    max_steps = scenario["settings"].get("max_steps")
    traced = Engine(
        config, wl, trace_blocks=True, max_steps=max_steps, stop_at_max_steps=True
    ).run()
    plain = Engine(config, wl, record_detail=True, max_steps=max_steps, stop_at_max_steps=True)
    assert to_schema(traced) == to_schema(plain.run())
    # the recording's own count of blocks in use, turn by turn
    used = [s["kv_blocks_used"] for s in scenario["steps"]]
    if config.async_scheduling:
        used = [scenario["steps"][0]["kv_blocks_used_after_schedule"], *used[:-1]]
    np.testing.assert_array_equal(traced.blocks.used(), used)
    _check_trace(traced)


def test_tables_hold_ceil_of_computed_tokens_and_a_victim_empties_at_once():
    scenario = json.loads((DATA / "preempt_fcfs.json").read_text())
    config = config_from_settings(scenario["settings"])
    wl = workload_from_requests(scenario["requests"])
    run = Engine(config, wl, trace_blocks=True).run()
    computed = _computed_per_turn(run)
    lens = run.blocks.table_lens
    np.testing.assert_array_equal(lens, cdiv(computed, config.block_size))
    np.testing.assert_array_equal(run.blocks.num_computed_tokens, computed)
    victims = [(d.step, r) for d in run.detail for r in d.preempted.tolist()]
    assert len(victims) == run.total_preemptions == 3
    for step, r in victims:
        assert lens[step - 2, r] > 0 and lens[step - 1, r] == 0
        assert not np.isin(run.blocks.table(step - 2, r), run.blocks.table(step - 1, r)).any()


def test_block_ids_follow_the_free_queue():
    """Fresh blocks come from the front in id order; a freed block is the next one handed out."""
    scenario = json.loads((DATA / "preempt_fcfs.json").read_text())
    config = config_from_settings(scenario["settings"])
    wl = workload_from_requests(scenario["requests"])
    run = Engine(config, wl, trace_blocks=True).run()
    first = run.blocks.table(0, 0)
    np.testing.assert_array_equal(first, [1, 2])  # r0's 32-token prompt: blocks 1 and 2
    d = next(d for d in run.detail if d.preempted.size)
    victim = int(d.preempted[0])
    freed = set(run.blocks.table(d.step - 2, victim).tolist())
    taken = set(run.blocks.table_ids[d.step - 1].tolist()) - set(
        run.blocks.table_ids[d.step - 2].tolist()
    )
    assert taken <= freed  # the pool was dry: what was handed out came from the victim


@FEWER
@given(BOTH.flatmap(lambda a: cases(async_scheduling=a)))
def test_tracing_changes_no_decision(case):
    config, wl = case
    plain, traced = _pair(config, wl)
    assert to_schema(plain) == to_schema(traced)
    _check_trace(traced)


@FEWER
@given(BOTH.flatmap(lambda a: cases(timed=True, async_scheduling=a)))
def test_tracing_changes_no_decision_in_timed_runs(case):
    config, wl = case
    plain, traced = _pair(config, wl, _toy_timer)
    np.testing.assert_array_equal(plain.num_scheduled_tokens, traced.num_scheduled_tokens)
    np.testing.assert_allclose(plain.step_ms, traced.step_ms)
    np.testing.assert_array_equal(plain.token_req, traced.token_req)
    np.testing.assert_array_equal(plain.num_prefix_hit_tokens, traced.num_prefix_hit_tokens)
    _check_trace(traced)


def test_run_traced_is_the_timed_run():
    """sim.traced's run is the timed run, with its block tables."""
    import dataclasses

    from sim.traced import run_traced

    scenario = json.loads((DATA / "preempt_fcfs.json").read_text())
    config = config_from_settings(scenario["settings"])
    steps = workload_from_requests(scenario["requests"])
    wl = dataclasses.replace(steps, arrival_s=(steps.arrival_step - 1) * 0.01, arrival_step=None)
    plain = Engine(config, wl, timer=_toy_timer).run()
    traced = run_traced(config, wl, _toy_timer)
    np.testing.assert_array_equal(traced.step_ms, plain.step_ms)
    np.testing.assert_array_equal(traced.token_req, plain.token_req)
    assert traced.blocks is not None and traced.blocks.num_steps == plain.num_steps
    assert plain.total_preemptions > 0


@st.composite
def shared_prompt_cases(draw, timed: bool = False, async_scheduling: bool = False):
    """Small pools, every policy, and requests most of which have one of two prompts that are
    exactly a shared prefix (often not a whole number of blocks), the rest longer prompts on the
    same prefixes or none: preempted requests come back to output blocks cached by others."""
    bs = draw(st.sampled_from([4, 8, 16]))
    n = draw(st.integers(2, 20))
    mml = draw(st.integers(40, 300))
    lens = draw(st.lists(st.integers(1, mml // 3), min_size=2, max_size=2))
    kinds = draw(st.lists(st.sampled_from(["po", "po", "po", "longer", "none"]), min_size=n))
    kinds = kinds[:n] + ["po"] * (n - len(kinds[:n]))
    pids = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    extra = draw(st.lists(st.integers(1, mml // 3), min_size=n, max_size=n))
    prompt, prefix_id, prefix_tokens = [], [], []
    for kind, pid, more in zip(kinds, pids, extra, strict=True):
        length = lens[pid]
        prompt.append(length if kind == "po" else length + more)
        prefix_id.append(-1 if kind == "none" else pid)
        prefix_tokens.append(0 if kind == "none" else length)
    output = draw(st.lists(st.integers(1, mml // 2), min_size=n, max_size=n))
    output = [max(1, min(o, mml - 1 - p)) for o, p in zip(output, prompt, strict=True)]
    chunked = draw(st.booleans())
    budget_lo = 8 if chunked else mml
    budget = draw(st.integers(budget_lo, max(budget_lo, 400)))
    min_blocks = int(cdiv(mml, bs)) + 1
    config = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=draw(st.integers(1, min(budget, 12))),
        max_model_len=mml,
        num_gpu_blocks=draw(st.integers(min_blocks, min_blocks * 2)),
        block_size=bs,
        enable_chunked_prefill=chunked,
        enable_prefix_caching=True,
        policy=draw(st.sampled_from(["fcfs", "priority", *TEACHING_POLICIES])),
        long_prefill_token_threshold=draw(st.sampled_from([0, 0, 7, 33])),
        watermark=draw(st.sampled_from([0.0, 0.0, 0.05])),
        scheduler_reserve_full_isl=draw(st.booleans()),
        async_scheduling=async_scheduling,
    )
    kw = dict(
        priority=draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)),
        tenant=draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
        prefix_id=prefix_id,
        prefix_tokens=prefix_tokens,
    )
    if timed:
        arr = draw(st.lists(st.floats(0, 1.0, allow_nan=False), min_size=n, max_size=n))
        return config, Workload.build(prompt, output, arrival_s=arr, **kw)
    arr = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    return config, Workload.build(prompt, output, arrival_step=arr, **kw)


@FEWER
@given(BOTH.flatmap(lambda a: shared_prompt_cases(async_scheduling=a)))
def test_tracing_changes_no_decision_with_shared_prompts(case):
    """A run traced block by block decides as the untraced one."""
    config, wl = case
    plain, traced = _pair(config, wl)
    assert to_schema(traced) == to_schema(plain)
    np.testing.assert_array_equal(plain.num_prefix_hit_tokens, traced.num_prefix_hit_tokens)
    _check_trace(traced)


@FEWER
@given(BOTH.flatmap(lambda a: shared_prompt_cases(timed=True, async_scheduling=a)))
def test_tracing_changes_no_decision_with_shared_prompts_timed(case):
    config, wl = case
    plain, traced = _pair(config, wl, _toy_timer)
    for run in (plain,):
        np.testing.assert_array_equal(run.num_scheduled_tokens, traced.num_scheduled_tokens)
        np.testing.assert_allclose(run.step_ms, traced.step_ms)
        np.testing.assert_array_equal(run.token_req, traced.token_req)
        np.testing.assert_array_equal(run.num_prefix_hit_tokens, traced.num_prefix_hit_tokens)
    _check_trace(traced)


def test_shared_prompt_cases_hit_output_blocks_after_preemptions():
    """The cases above reach what they are for: requests whose prompt is exactly a shared
    prefix hit cached blocks past that prefix, blocks holding output tokens ("po" identity,
    sim/engine/state.py), whoever computed them."""
    cases_with_po_hits = []

    @settings(FEWER, max_examples=40)
    @given(BOTH.flatmap(lambda a: shared_prompt_cases(async_scheduling=a)))
    def collect(case):
        config, wl = case
        run = Engine(config, wl, max_steps=200_000).run()
        bs = config.block_size
        whole = (wl.prefix_id >= 0) & (wl.prefix_tokens >= wl.prompt_tokens)
        past = run.num_prefix_hit_tokens > (wl.prompt_tokens // bs) * bs * (run.num_preemptions + 1)
        cases_with_po_hits.append(bool((whole & past).any()))

    collect()
    assert sum(cases_with_po_hits) >= 3
