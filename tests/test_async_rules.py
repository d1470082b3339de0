"""Async scheduling (SCHEDULER.md g) on small cases worked out by hand, for both schedulers.

Each case is computed from the rules in the comments, then checked against the engine
(`sim.replay`) and the plain reference (tests/reference_scheduler.py), and against the
synchronous engine where the point is the difference. The recordings (test_scheduler_oracle.py)
cover the common path; these cover the corners: the skipped last step, the late free, and the
preempted request whose stale in-flight token is its last one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sim.replay as engine
from sim.config import SchedulerConfig
from sim.scheduler import run_steps
from sim.timed import run_with_timer
from sim.workload import Workload
from tests import reference_scheduler as reference
from tests.scenarios import base_settings

BOTH = pytest.mark.parametrize("replay", [engine.replay, reference.replay], ids=["sim", "ref"])


def _scenario(requests: list[tuple], asynchronous: bool = True, **settings: Any) -> dict:
    rows = [
        {"id": rid, "prompt_len": p, "output_len": o, "arrival_step": a, "priority": 0}
        for rid, p, o, a in requests
    ]
    return {"settings": base_settings(async_scheduling=asynchronous, **settings), "requests": rows}


@BOTH
def test_a_lone_request_skips_its_wasted_last_step(replay) -> None:
    """16-token prompt, 3 outputs. Steps 1-3 sample tokens 1-3 (step 2 computes position 16,
    the second block). At step 4 the token in flight is the last (18 + 2 - 1 >= 16 + 3): not
    scheduled; its output is processed after that empty schedule(), so the finish (step 3) and
    the freed blocks are seen in step 4, and the run has 4 steps, one more than synchronously."""
    out = replay(_scenario([("a", 16, 3, 1)]))
    steps = out["steps"]
    assert len(steps) == 4
    assert [s["num_scheduled_tokens"] for s in steps] == [{"a": 16}, {"a": 1}, {"a": 1}, {}]
    assert [s["sampled_req_ids"] for s in steps] == [["a"], ["a"], ["a"], []]
    assert [s["finished_req_ids"] for s in steps] == [[], [], ["a"], []]
    assert [s["running_after_schedule"] for s in steps] == [["a"]] * 4
    # after output k = after schedule k + 1: 2 blocks from step 2 on, 0 once freed
    assert [s["kv_blocks_used"] for s in steps] == [2, 2, 0, 0]
    assert [s["kv_blocks_used_after_schedule"] for s in steps] == [1, 2, 2, 2]
    assert out["per_request"]["a"] == {
        "first_scheduled_step": 1,
        "first_token_step": 1,
        "finish_step": 3,
        "num_preemptions": 0,
        "num_output_tokens": 3,
    }
    assert len(replay(_scenario([("a", 16, 3, 1)], asynchronous=False))["steps"]) == 3


@BOTH
def test_a_finish_frees_its_blocks_one_step_later(replay) -> None:
    """2 usable blocks. `a` (16 tokens, 1 output) runs in step 1; `c` (32 tokens) arrives in
    step 2 and needs both blocks. Synchronously `a` is freed at the end of step 1 and `c` is
    admitted in step 2; async, `a` still holds its block at step 2's schedule (it is only
    skipped), so `c` waits until step 3."""
    requests = [("a", 16, 1, 1), ("c", 32, 1, 2)]
    sync = replay(_scenario(requests, asynchronous=False, num_gpu_blocks=3))
    asyn = replay(_scenario(requests, num_gpu_blocks=3))
    assert sync["per_request"]["c"]["first_scheduled_step"] == 2
    assert asyn["per_request"]["c"]["first_scheduled_step"] == 3
    assert asyn["steps"][1]["num_scheduled_tokens"] == {}
    assert asyn["steps"][1]["waiting_after_schedule"] == ["c"]
    assert asyn["steps"][0]["finished_req_ids"] == ["a"]
    assert [len(s["steps"]) for s in (sync, asyn)] == [2, 4]


@BOTH
def test_a_finished_request_holds_its_max_num_seqs_slot_one_step(replay) -> None:
    """max_num_seqs 1: `b` arriving in step 2 waits one step longer under async, because `a`
    (finished by step 1's output) is still in the running list at step 2's schedule."""
    requests = [("a", 16, 1, 1), ("b", 16, 1, 2)]
    sync = replay(_scenario(requests, asynchronous=False, max_num_seqs=1))
    asyn = replay(_scenario(requests, max_num_seqs=1))
    assert sync["per_request"]["b"]["first_scheduled_step"] == 2
    assert asyn["per_request"]["b"]["first_scheduled_step"] == 3
    assert asyn["steps"][1]["num_running"] == 1 and asyn["steps"][1]["num_waiting"] == 1


@BOTH
def test_preempted_with_its_last_token_in_flight(replay) -> None:
    """2 usable blocks. `b` (16 tokens, 17 outputs: 2 blocks at most) and `a` (16 tokens, 1
    output) are admitted in step 1, one block each. In step 2, `b`'s decode computes position
    16 and needs a second block: none is free, so the FCFS victim, the last of `running`, is
    `a`, whose only token is still in flight. Then step 1's output arrives: `a`'s stale token
    is appended and is its last, so `a` finishes (step 1) from the waiting queue, never
    resumed (g6). Synchronously `a` is freed at the end of step 1 and nobody is preempted."""
    requests = [("b", 16, 17, 1), ("a", 16, 1, 1)]
    asyn = replay(_scenario(requests, num_gpu_blocks=3, max_model_len=256))
    s1, s2 = asyn["steps"][0], asyn["steps"][1]
    assert s1["finished_req_ids"] == ["a"] and s1["kv_blocks_used"] == 2
    assert s2["preempted_req_ids"] == ["a"]
    assert s2["num_scheduled_tokens"] == {"b": 1}
    assert s2["running_after_schedule"] == ["b"] and s2["waiting_after_schedule"] == ["a"]
    assert all(s["waiting_after_schedule"] == [] for s in asyn["steps"][2:])
    assert asyn["per_request"]["a"] == {
        "first_scheduled_step": 1,
        "first_token_step": 1,
        "finish_step": 1,
        "num_preemptions": 1,
        "num_output_tokens": 1,
    }
    sync = replay(_scenario(requests, asynchronous=False, num_gpu_blocks=3, max_model_len=256))
    assert sum(r["num_preemptions"] for r in sync["per_request"].values()) == 0


def test_a_stale_finish_recomputes_nothing() -> None:
    """The request above lost its computed tokens to preemption but never recomputes them."""
    config = SchedulerConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=128,
        max_model_len=256,
        num_gpu_blocks=3,
        async_scheduling=True,
    )
    wl = Workload.build([16, 16], [17, 1], arrival_step=[1, 1], request_ids=["b", "a"])
    run = run_steps(config, wl)
    assert run.num_preemptions.tolist() == [0, 1]
    assert run.num_recomputed_tokens.tolist() == [0, 0]
    assert int(run.num_scheduled_tokens.sum()) == 16 + 17 - 1 + 16


def test_timed_async_tokens_leave_at_the_end_of_their_step() -> None:
    """A timed async run: a token's time is the end of the step that sampled it, as in the
    synchronous engine; the step that only sees the last finish schedules nothing."""
    config = SchedulerConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=128,
        max_model_len=4096,
        num_gpu_blocks=400,
        async_scheduling=True,
    )
    wl = Workload.build([100, 300], [5, 3], arrival_s=[0.0, 0.004])

    def timer(q, s, kv, attn):
        return 1.0 + 0.01 * q  # ms

    run = run_with_timer(config, wl, timer)
    ends = run.step_start_s + run.step_ms / 1e3
    np.testing.assert_allclose(run.finish_s, ends[run.finish_step - 1])
    assert run.num_steps == run.finish_step.max() + 1
    assert run.num_scheduled_tokens[-1] == 0 and run.num_finished[-1] == 0
    sync = run_with_timer(
        SchedulerConfig(**{**config.__dict__, "async_scheduling": False}), wl, timer
    )
    np.testing.assert_array_equal(sync.num_scheduled_tokens, run.num_scheduled_tokens[:-1])
    np.testing.assert_allclose(sync.finish_s, run.finish_s)
