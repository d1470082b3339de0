"""Chunked prompts inside windows of steps (sim/admits.py, sim/window.py): the chunks follow the
budget the decodes leave, and a window that chunks a prompt takes the same decisions as the
engine one step at a time, synchronous and async, sync and closed loop; only preemptions are
left to single steps."""

import numpy as np
import pytest

from sim.admits import Admits, chunk_plan, prompt_steps
from sim.generators import from_spec
from sim.scheduler import Engine
from sim.timed import config_for, deployment, timer_for


def test_chunks_take_the_budget_left_until_the_prompt_is_done():
    left = np.array([5, 3, 3, 8, 8, 8])
    chunks, complete = chunk_plan(left, 0, 14, 6)
    assert chunks.tolist() == [5, 3, 3, 3] and complete  # 5 + 3 + 3 + 3 = 14
    chunks, complete = chunk_plan(left, 1, 20, 4)  # the window ends first: part-way
    assert chunks.tolist() == [3, 3, 8] and not complete


def test_prompt_steps_count_a_chunk_once_per_step_and_its_context():
    admits = Admits()
    admits.add(7, 1, 3, np.array([4, 0, 6]))  # nothing in step 2: the decodes took the budget
    admits.add(8, 3, 3)  # a whole 5-token prompt after its last chunk, in the same step
    J, tj, sj, spans = admits.upto(5)
    pre = prompt_steps(5, tj, sj, np.array([10, 5]), spans, bs=4)
    assert pre["tok"].tolist() == [0, 4, 0, 11, 0]
    assert pre["cnt"].tolist() == [0, 1, 0, 2, 0]
    assert pre["kv"].tolist() == [0, 0, 0, 4, 0]  # the second chunk reads the first's 4 tokens
    assert pre["attn"].tolist() == [0, 10, 0, 6 * 4 + 21 + 15, 0]
    assert pre["blk"].tolist() == [0, 1, 0, 2 + 2, 0]  # blocks of 4: 4 -> 10 tokens, and 5
    assert pre["waiting_first"].tolist() == [0, 1, 1, 0, 0]


def _count_single_steps(monkeypatch) -> dict:
    counts = {"single": 0, "preempting": 0}
    original = Engine._general_step

    def counted(self):
        original(self)
        counts["single"] += 1
        counts["preempting"] += int(self.log.rows[-1][7] > 0)

    monkeypatch.setattr(Engine, "_general_step", counted)
    return counts


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_overloaded_run_chunks_inside_windows_exactly(asynchronous, monkeypatch):
    dep = deployment("L4", "Llama-3.1-8B")
    wl = from_spec("poisson:n=400,rate=3,prompt=lognormal:1500:0.7,output=uniform:20:300,seed=4")
    cfg = config_for(dep, async_scheduling=asynchronous)
    timer = timer_for(dep, async_scheduling=asynchronous)
    slow = Engine(cfg, wl, timer=timer, batch_quiet_runs=False).run()
    counts = _count_single_steps(monkeypatch)
    fast = Engine(cfg, wl, timer=timer).run()
    chunked = int(np.count_nonzero(wl.prompt_tokens > cfg.max_num_batched_tokens))
    assert chunked > 20  # prompts longer than the whole budget: always chunked
    # single steps only where a request runs short of blocks (and a few part-way prompts after)
    assert counts["single"] - counts["preempting"] < chunked // 4
    assert fast.num_steps == slow.num_steps
    for name in ("num_scheduled_tokens", "num_scheduled_seqs", "kv_read_tokens", "attn_pairs"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for name in ("num_running", "num_waiting", "kv_blocks_used", "num_preempted"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for name in ("first_scheduled_step", "first_token_step", "finish_step", "token_step"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    np.testing.assert_array_equal(fast.token_req, slow.token_req)
    np.testing.assert_allclose(fast.step_ms, slow.step_ms, rtol=0, atol=1e-9)


def test_chunked_windows_record_each_step_as_single_steps_do():
    dep = deployment("L4", "Llama-3.1-8B")
    wl = from_spec("poisson:n=60,rate=2,prompt=lognormal:1800:0.6,output=uniform:5:80,seed=8")
    cfg = config_for(dep)
    timer = timer_for(dep)
    fast = Engine(cfg, wl, timer=timer, record_detail=True).run()
    slow = Engine(cfg, wl, timer=timer, record_detail=True, batch_quiet_runs=False).run()
    assert len(fast.detail) == len(slow.detail) == fast.num_steps
    fields = ("scheduled_req", "scheduled_tokens", "new", "sampled", "running", "waiting")
    for a, b in zip(fast.detail, slow.detail, strict=True):
        for name in fields:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert a.kv_blocks_used == b.kv_blocks_used


@pytest.mark.parametrize("limit", ["max_num_queued_reqs", "max_num_queued_tokens"])
def test_arrivals_behind_the_queue_are_checked_against_the_limits_in_windows(limit):
    """FCFS with a waiting queue: the window lands arrivals behind it and checks each against
    vLLM's limits afterwards (window._checked_arrivals); the queue also runs dry at times."""
    dep = deployment("H100-SXM", "Llama-3.1-8B")
    spec = "poisson:n=1500,rate=30,prompt=lognormal:800:0.8,output=lognormal:200:0.8,seed=3"
    wl = from_spec(spec)
    value = {"max_num_queued_reqs": 450, "max_num_queued_tokens": 60_000}[limit]
    cfg = config_for(dep, **{limit: value})
    timer = timer_for(dep)
    fast = Engine(cfg, wl, timer=timer, max_steps=100_000).run()
    slow = Engine(cfg, wl, timer=timer, batch_quiet_runs=False, max_steps=100_000).run()
    refused = np.count_nonzero(fast.rejected)
    assert 0 < refused < wl.num_requests // 2  # the limit binds, and not always
    assert fast.num_steps == slow.num_steps
    np.testing.assert_array_equal(fast.rejected, slow.rejected)
    for name in ("num_scheduled_tokens", "num_waiting", "first_token_step", "finish_step"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    np.testing.assert_allclose(fast.step_ms, slow.step_ms, rtol=0, atol=1e-9)


def test_a_window_that_drains_the_queue_with_a_limit_set_admits_no_arrival_early():
    """With a limit set (binding or not) and the queue running dry inside a window, the window
    ends before the first arrival's guessed and true landing steps: admitted at a guessed step,
    a request would be running before it arrived, and later arrive a second time."""
    dep = deployment("H100-SXM", "Llama-3.1-8B")
    spec = "poisson:n=3000,rate=22,prompt=lognormal:800:0.8,output=lognormal:200:0.8,seed=3"
    wl = from_spec(spec)
    cfg = config_for(dep, max_num_queued_reqs=2048)
    timer = timer_for(dep)
    fast = Engine(cfg, wl, timer=timer, max_steps=50_000).run()  # raises rather than hang
    slow = Engine(cfg, wl, timer=timer, batch_quiet_runs=False, max_steps=50_000).run()
    assert fast.num_steps == slow.num_steps
    np.testing.assert_array_equal(fast.first_scheduled_step, slow.first_scheduled_step)
    np.testing.assert_array_equal(fast.finish_step, slow.finish_step)
    np.testing.assert_array_equal(fast.num_output_tokens, wl.output_tokens)


def test_async_arrivals_at_a_step_start_are_checked_as_single_steps_check_them():
    """Async: an arrival at the very start of step k is checked before the output of step k - 1
    is processed, so a window leaves its checks to single steps (found by a review: the
    checked windows counted step k - 1's finishes)."""
    from sim.config import SchedulerConfig
    from sim.workload import Workload

    def timer(q, s, kv, attn):
        return np.full(np.shape(q), 15.625)  # 2**-6 s a step: arrivals land on step starts

    n = 40
    cfg = SchedulerConfig(
        max_num_batched_tokens=256,
        max_num_seqs=2,
        max_model_len=2048,
        num_gpu_blocks=400,
        async_scheduling=True,
        max_num_queued_reqs=6,
    )
    wl = Workload.build(
        prompt_tokens=np.full(n, 100),
        output_tokens=np.full(n, 3),
        arrival_s=np.arange(n) * 0.015625,
    )
    fast = Engine(cfg, wl, timer=timer).run()
    slow = Engine(cfg, wl, timer=timer, batch_quiet_runs=False).run()
    assert np.count_nonzero(slow.rejected) > 0
    assert fast.num_steps == slow.num_steps
    np.testing.assert_array_equal(fast.rejected, slow.rejected)
    np.testing.assert_array_equal(fast.finish_step, slow.finish_step)
