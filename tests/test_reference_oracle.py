"""The reference scheduler against vLLM's own recordings (tests/data/*.json), step by step.

Why: the differential test trusts tests/reference_scheduler.py as the second reading of the
rules; this test is what earns it that trust. Every recorded field must match: token counts,
preemptions, finishes, KV blocks, the number of steps, and also new/resumed/sampled ids, the
running and waiting order, and the per-request records. A rejected configuration must be
rejected with vLLM's message. `preempted_req_ids` is compared as the recordings list it (sorted
by request id: vLLM's `SchedulerOutput` holds the ids as a set); the reference lists them in
preemption order (tests/test_scheduler_oracle.py shows the difference).
"""

from __future__ import annotations

import pytest

from tests.reference_scheduler import ConfigRejected, replay
from tests.scenarios import (
    STEP_KEYS,
    first_difference,
    load_recording,
    recording_names,
    vllm_error_text,
)

RECORDINGS = recording_names()
REPLAYED = [n for n in RECORDINGS if "config_error" not in load_recording(n)]
REJECTED = [n for n in RECORDINGS if "config_error" in load_recording(n)]


def test_all_recordings_are_here() -> None:
    """The fourteen recordings the oracle ships (two of vLLM's AsyncScheduler, four with shared
    prefixes and prefix caching, two of those async), one of them a rejected configuration."""
    assert len(RECORDINGS) == 14, RECORDINGS
    assert REJECTED == ["no_chunk"]
    assert [n for n in RECORDINGS if n.endswith("_async")] == ["fig82_async", "preempt_fcfs_async"]
    assert [n for n in RECORDINGS if n.startswith("prefix_shared_")] == [
        "prefix_shared_async_a",
        "prefix_shared_async_c",
        "prefix_shared_sync_a",
        "prefix_shared_sync_b",
    ]


def _as_recorded(replayed: dict) -> dict:
    """A replay with each step's preempted ids in the recordings' order (sorted by id)."""
    steps = [dict(s, preempted_req_ids=sorted(s["preempted_req_ids"])) for s in replayed["steps"]]
    return dict(replayed, steps=steps)


@pytest.mark.parametrize("name", REPLAYED)
def test_reference_matches_recording(name: str) -> None:
    """Every step and every per-request record equals vLLM's, field by field."""
    rec = load_recording(name)
    got = replay({"settings": rec["settings"], "requests": rec["requests"]})
    assert set(got["steps"][0]) == set(STEP_KEYS) == set(rec["steps"][0])
    diff = first_difference(_as_recorded(got), rec)
    assert diff is None, f"{name}: {diff}"
    assert len(got["steps"]) == rec["num_steps"]
    preemptions = sum(len(s["preempted_req_ids"]) for s in got["steps"])
    assert preemptions == rec["total_preemptions"]


@pytest.mark.parametrize("name", REJECTED)
def test_reference_rejects_like_vllm(name: str) -> None:
    """A configuration vLLM refuses is refused with vLLM's own message."""
    rec = load_recording(name)
    with pytest.raises(ConfigRejected) as info:
        replay({"settings": rec["settings"], "requests": rec["requests"]})
    assert str(info.value) == vllm_error_text(rec["config_error"])


def test_reference_comparison_can_fail() -> None:
    """The comparison itself notices a one-token change (so the tests above can fail)."""
    rec = load_recording("fig82")
    got = replay({"settings": rec["settings"], "requests": rec["requests"]})
    got["steps"][3]["num_scheduled_tokens"]["long"] -= 1
    assert first_difference(got, rec) == (
        "step 4: num_scheduled_tokens differs: got "
        f"{got['steps'][3]['num_scheduled_tokens']!r}, "
        f"want {rec['steps'][3]['num_scheduled_tokens']!r}"
    )


def test_prompt_at_max_model_len_is_rejected() -> None:
    """A prompt of max_model_len tokens leaves no room for an output token: refused."""
    rec = load_recording("fig82")
    requests = [dict(rec["requests"][0], prompt_len=rec["settings"]["max_model_len"])]
    with pytest.raises(ConfigRejected, match="max_model_len"):
        replay({"settings": rec["settings"], "requests": requests})


def test_budget_below_max_num_seqs_is_rejected_with_vllms_message() -> None:
    """vLLM: max_num_batched_tokens < max_num_seqs is an error, worded as vLLM words it."""
    rec = load_recording("fig82")
    settings = dict(rec["settings"], max_num_batched_tokens=100, max_num_seqs=128)
    with pytest.raises(ConfigRejected) as info:
        replay({"settings": settings, "requests": rec["requests"]})
    assert str(info.value) == (
        "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (128)."
    )


# --------------------------------------------------------------------------------------------
# Rules the recordings do not exercise (prefix caching, threshold, watermark), computed by hand
# from SCHEDULER.md b4, b5, b6, a2 and f3, f4.
# --------------------------------------------------------------------------------------------


def _req(rid: str, prompt: int, output: int, step: int, **extra: int) -> dict[str, int | str]:
    return {
        "id": rid,
        "prompt_len": prompt,
        "output_len": output,
        "arrival_step": step,
        "priority": 0,
        **extra,
    }


def _settings(**overrides: object) -> dict[str, object]:
    rec = load_recording("fig82")
    return dict(rec["settings"], **overrides)


def test_prefix_hits_are_whole_blocks_shared_and_free_of_budget() -> None:
    """B shares A's 64-token prefix: 4 blocks hit, only 16 tokens scheduled, 1 new block."""
    scenario = {
        "settings": _settings(enable_prefix_caching=True),
        "requests": [
            _req("a", 100, 5, 1, prefix_id=0, prefix_tokens=64),
            _req("b", 80, 5, 2, prefix_id=0, prefix_tokens=70),
        ],
    }
    steps = replay(scenario)["steps"]
    assert steps[0]["num_scheduled_tokens"] == {"a": 100}
    assert steps[0]["kv_blocks_used"] == 7  # cdiv(100, 16)
    assert steps[1]["num_scheduled_tokens"] == {"a": 1, "b": 80 - 64}
    assert steps[1]["kv_blocks_used"] == 7 + 1  # b holds 5 blocks, 4 of them a's


def test_prefix_hits_leave_the_last_token_to_compute() -> None:
    """A 64-token prompt fully cached still recomputes its last block (hits <= num_tokens - 1)."""
    scenario = {
        "settings": _settings(enable_prefix_caching=True),
        "requests": [
            _req("a", 64, 5, 1, prefix_id=3, prefix_tokens=64),
            _req("b", 64, 5, 2, prefix_id=3, prefix_tokens=64),
        ],
    }
    steps = replay(scenario)["steps"]
    assert steps[1]["num_scheduled_tokens"] == {"a": 1, "b": 16}


def test_freed_prefix_blocks_stay_reusable() -> None:
    """A finishes and frees its blocks; C, arriving later, still hits A's cached prefix."""
    scenario = {
        "settings": _settings(enable_prefix_caching=True),
        "requests": [
            _req("a", 40, 1, 1, prefix_id=0, prefix_tokens=32),
            _req("c", 50, 1, 3, prefix_id=0, prefix_tokens=32),
        ],
    }
    steps = replay(scenario)["steps"]
    assert steps[0]["finished_req_ids"] == ["a"] and steps[0]["kv_blocks_used"] == 0
    assert steps[2]["num_scheduled_tokens"] == {"c": 50 - 32}
    assert steps[2]["kv_blocks_used_after_schedule"] == 4  # 2 hit blocks back in use + 2 new


def test_no_prefix_hits_without_prefix_caching() -> None:
    """The same workload with caching off schedules every prompt token."""
    scenario = {
        "settings": _settings(enable_prefix_caching=False),
        "requests": [
            _req("a", 100, 5, 1, prefix_id=0, prefix_tokens=64),
            _req("b", 80, 5, 2, prefix_id=0, prefix_tokens=64),
        ],
    }
    steps = replay(scenario)["steps"]
    assert steps[1]["num_scheduled_tokens"] == {"a": 1, "b": 80}


def test_threshold_spares_a_lone_request() -> None:
    """long_prefill_token_threshold 30: alone, a prompt takes the budget; with company, 30."""
    lone = {
        "settings": _settings(
            max_num_batched_tokens=64, max_num_seqs=8, long_prefill_token_threshold=30
        ),
        "requests": [_req("a", 100, 2, 1)],
    }
    assert [s["num_scheduled_tokens"]["a"] for s in replay(lone)["steps"][:2]] == [64, 36]
    pair = {
        "settings": _settings(
            max_num_batched_tokens=64, max_num_seqs=8, long_prefill_token_threshold=30
        ),
        "requests": [_req("a", 100, 2, 1), _req("b", 100, 2, 1)],
    }
    assert replay(pair)["steps"][0]["num_scheduled_tokens"] == {"a": 30, "b": 30}


@pytest.mark.parametrize(("watermark", "b_admitted"), [(0.0, True), (0.1, False)])
def test_watermark_applies_only_while_someone_runs(watermark: float, b_admitted: bool) -> None:
    """101 blocks (100 usable), watermark 0.1 = 10 blocks: A (94 blocks) is admitted alone,
    B (5 blocks) then needs 5 + 10 > 6 free and waits; with no watermark it fits."""
    scenario = {
        "settings": _settings(num_gpu_blocks=101, watermark=watermark),
        "requests": [_req("a", 1500, 2, 1), _req("b", 80, 2, 1)],
    }
    first = replay(scenario)["steps"][0]
    assert ("b" in first["num_scheduled_tokens"]) is b_admitted
    assert first["num_scheduled_tokens"]["a"] == 1500
