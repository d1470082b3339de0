"""Stepwise's scheduler against vLLM's own recordings (tests/data/*.json), step for step.

Every step record (tokens per request, preempted, finished, new, resumed, sampled, running and
waiting order, KV blocks after schedule and after output) and every per-request record must be
equal; the Run's per-step arrays must agree with the recording too; batching quiet runs must not
change anything; the configuration vLLM rejects must be rejected with vLLM's reason. The `*_async`
recordings (vLLM's AsyncScheduler) go through the same checks with `async_scheduling` on, and
must not match with it off.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sim.errors import SimInputError
from sim.replay import config_from_settings, replay, replay_run, to_schema, workload_from_requests
from sim.scheduler import Engine

DATA = Path(__file__).parent / "data"
SCENARIOS = sorted(p for p in DATA.glob("*.json"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


RUNNABLE = [p for p in SCENARIOS if "config_error" not in _load(p)]
REJECTED = [p for p in SCENARIOS if "config_error" in _load(p)]


def test_the_recordings_are_there():
    assert len(RUNNABLE) >= 7 and len(REJECTED) >= 1


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_replay_matches_vllm_step_for_step(path):
    scenario = _load(path)
    out = replay(scenario)
    expected = scenario["steps"]
    assert len(out["steps"]) == len(expected) == scenario["num_steps"]
    for ours, theirs in zip(out["steps"], expected, strict=True):
        assert ours == theirs, f"step {theirs['step']} differs"
    assert out["per_request"] == scenario["per_request"]


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


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_quiet_run_batching_changes_nothing(path):
    scenario = _load(path)
    config = config_from_settings(scenario["settings"])
    workload = workload_from_requests(scenario["requests"])
    one_by_one = Engine(config, workload, record_detail=True, batch_quiet_runs=False).run()
    batched = replay_run(scenario)
    assert to_schema(one_by_one) == to_schema(batched)
    for name in ("num_scheduled_tokens", "kv_read_tokens", "attn_pairs", "kv_blocks_used"):
        np.testing.assert_array_equal(getattr(one_by_one, name), getattr(batched, name))


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
