"""Stepwise's scheduler against vLLM's own recordings (tests/data/*.json), step for step.

Every step record (tokens per request, preempted, finished, new, resumed, sampled, running and
waiting order, KV blocks after schedule and after output) and every per-request record must be
equal; the Run's per-step arrays must agree with the recording too; batching quiet runs must not
change anything; the configuration vLLM rejects must be rejected with vLLM's reason. The `*_async`
recordings (vLLM's AsyncScheduler) go through the same checks with `async_scheduling` on, and
must not match with it off. The `prefix_shared_*` recordings (prefix caching on, requests sharing
a prompt prefix, some prompts exactly their prefix) go through the same checks.

`preempted_req_ids` is compared as the recordings list it: vLLM's `SchedulerOutput` carries the
preempted ids as a set, which the recording harness writes sorted by request id (the only steps
with two victims or more, in `prefix_shared_async_c`, show it); our replay lists them in the
order they were preempted, so the comparison sorts ours the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim.errors import SimInputError
from sim.replay import config_from_settings, replay, replay_run

DATA = Path(__file__).parent / "data"
SCENARIOS = sorted(p for p in DATA.glob("*.json"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


RUNNABLE = [p for p in SCENARIOS if "config_error" not in _load(p)]
REJECTED = [p for p in SCENARIOS if "config_error" in _load(p)]


PREFIX_SHARED = [p for p in RUNNABLE if p.stem.startswith("prefix_shared_")]


def _as_recorded(step: dict) -> dict:
    """One step of our replay with its preempted ids in the recordings' order (sorted by id)."""
    return dict(step, preempted_req_ids=sorted(step["preempted_req_ids"]))


def test_the_recordings_are_there():
    assert len(RUNNABLE) >= 11 and len(REJECTED) >= 1
    assert {p.stem for p in PREFIX_SHARED} == {
        f"prefix_shared_{n}" for n in ("sync_a", "sync_b", "async_a", "async_c")
    }


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_replay_matches_vllm_step_for_step(path):
    scenario = _load(path)
    out = replay(scenario)
    expected = scenario["steps"]
    assert len(out["steps"]) == len(expected) == scenario["num_steps"]
    for ours, theirs in zip(out["steps"], expected, strict=True):
        assert _as_recorded(ours) == theirs, f"step {theirs['step']} differs"
    assert out["per_request"] == scenario["per_request"]


def test_recordings_list_preempted_ids_sorted_and_ours_in_preemption_order():
    """Why the comparison above sorts our preempted ids: every recording lists them sorted, and
    where one step preempts several requests our replay lists them as the policy picked them
    (FCFS: the last of `running` first), which is not always sorted."""
    for path in RUNNABLE:
        for step in _load(path)["steps"]:
            assert step["preempted_req_ids"] == sorted(step["preempted_req_ids"]), path.stem
    scenario = _load(DATA / "prefix_shared_async_c.json")
    ours = replay(scenario)["steps"]
    several = [s["preempted_req_ids"] for s in ours if len(s["preempted_req_ids"]) > 1]
    assert len(several) == 5
    assert several[0] == ["f0008", "f0006", "f0005", "f0002", "f0009"]
    assert any(ids != sorted(ids) for ids in several)


@pytest.mark.parametrize("path", PREFIX_SHARED, ids=lambda p: p.stem)
def test_shared_prefix_recordings_hit_the_cache(path):
    """The shared-prefix recordings exercise what they are here for: prompts that are exactly
    their prefix, prefixes not a whole number of blocks, and prefix-cache hits (a request
    scheduled fewer prompt tokens than its prompt in its first step)."""
    scenario = _load(path)
    assert scenario["settings"]["enable_prefix_caching"] is True
    bs = scenario["settings"]["block_size"]
    shared = [r for r in scenario["requests"] if r.get("prefix_id", -1) >= 0]
    assert any(r["prefix_tokens"] == r["prompt_len"] for r in shared)
    assert any(r["prefix_tokens"] % bs for r in shared)
    run = replay_run(scenario)
    assert int(run.num_prefix_hit_tokens.sum()) > 0


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_run_arrays_match_the_recording(path):
    scenario = _load(path)
    run = replay_run(scenario)
    steps = scenario["steps"]
    assert run.num_steps == scenario["num_steps"]
    assert run.kv_blocks_usable == scenario["kv_blocks_usable"]
    assert run.total_preemptions == scenario["total_preemptions"]

    def col(key):
        return np.array([s[key] for s in steps])

    np.testing.assert_array_equal(run.num_scheduled_tokens, col("total_scheduled_tokens"))
    np.testing.assert_array_equal(
        run.num_scheduled_seqs, [len(s["num_scheduled_tokens"]) for s in steps]
    )
    np.testing.assert_array_equal(run.kv_blocks_used, col("kv_blocks_used"))
    np.testing.assert_array_equal(run.num_running, col("num_running"))
    np.testing.assert_array_equal(run.num_waiting, col("num_waiting"))
    np.testing.assert_array_equal(run.num_preempted, [len(s["preempted_req_ids"]) for s in steps])
    np.testing.assert_array_equal(run.num_finished, [len(s["finished_req_ids"]) for s in steps])
    # every sampled token, in emission order
    ids = np.array(run.workload.request_ids)
    sampled = [(s["step"], r) for s in steps for r in s["sampled_req_ids"]]
    assert list(zip(run.token_step.tolist(), ids[run.token_req].tolist(), strict=True)) == sampled
    assert np.isnan(run.step_ms).all() and not run.timed


@pytest.mark.parametrize("path", REJECTED, ids=lambda p: p.stem)
def test_rejected_configuration_gives_vllms_reason(path):
    scenario = _load(path)
    reason = scenario["config_error"].split("Value error, ", 1)[1].split(" [type=", 1)[0]
    with pytest.raises(SimInputError) as exc:
        replay(scenario)
    assert str(exc.value) == reason
    assert scenario["steps"] == []


def test_budget_below_max_num_seqs_is_rejected_as_vllm_does():
    settings = dict(_load(RUNNABLE[0])["settings"], max_num_batched_tokens=64, max_num_seqs=128)
    with pytest.raises(SimInputError, match=r"^max_num_batched_tokens \(64\) must be greater"):
        config_from_settings(settings)


def test_unmodelled_setting_is_refused():
    scenario = _load(DATA / "fig82.json")
    scenario["settings"] = dict(scenario["settings"], num_speculative_tokens=2)
    with pytest.raises(SimInputError, match="num_speculative_tokens"):
        replay(scenario)


ASYNC = [p for p in RUNNABLE if p.stem.endswith("_async")]


def test_async_recordings_are_there_with_their_synchronous_twins():
    assert {p.stem for p in ASYNC} >= {"fig82_async", "preempt_fcfs_async"}
    for path in ASYNC:
        assert _load(path)["settings"]["async_scheduling"] is True
        assert (DATA / f"{path.stem.removesuffix('_async')}.json").exists()


@pytest.mark.parametrize("path", ASYNC, ids=lambda p: p.stem)
def test_async_setting_is_what_differs(path):
    """An async recording and its synchronous twin share requests and settings but for
    `async_scheduling`: with the setting off our replay is the twin's run, not the async one
    (the last finish is seen at least one output earlier)."""
    scenario = _load(path)
    twin = _load(DATA / f"{path.stem.removesuffix('_async')}.json")
    assert twin["requests"] == scenario["requests"]
    assert dict(twin["settings"], async_scheduling=True) == scenario["settings"]
    scenario["settings"] = dict(scenario["settings"], async_scheduling=False)
    out = replay(scenario)
    assert out["steps"] == twin["steps"] and out["per_request"] == twin["per_request"]
    assert len(out["steps"]) < _load(path)["num_steps"]


@pytest.mark.parametrize("value", ["yes", 1, 0.5])
def test_async_scheduling_must_be_a_boolean(value):
    settings = dict(_load(DATA / "fig82.json")["settings"], async_scheduling=value)
    with pytest.raises(SimInputError, match="async_scheduling must be true or false"):
        config_from_settings(settings)
