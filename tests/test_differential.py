"""Differential test: the vectorized engine (`sim.replay`) against the plain reference.

Why: the two were written independently from SCHEDULER.md; on thousands of random workloads
(hypothesis, derandomized so CI is deterministic) they must produce identical steps and
per-request records, field by field, with the synchronous scheduler and with async scheduling
(SCHEDULER.md g: placeholders, late finishes and frees, stale outputs of preempted requests).
Two more properties draw workloads made of shared prefixes (`shared_prefix_scenarios`): prompts
that are exactly their prefix (their output blocks are shared too: the reference's
`Request.block_identity`), prefixes not a whole number of blocks, prompts shorter than their
prefix, on pools small enough to preempt; those also hold the engine's Python loop to the
reference where the compiled loop would replay them.
A disagreement is reported as the first differing step and field, with the scenario hypothesis
shrank it to. The reference itself is held to vLLM's
recordings in test_reference_oracle.py. Until `sim.replay` exists, these tests are skipped with
that reason.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import reference_scheduler as ref
from tests.scenarios import first_difference, invalid_configs, random_trace, scenarios

# 250 scenarios per property (six properties, sync and async) keeps this file near three minutes
# on a shared 2-core machine;
# STEPWISE_DIFF_EXAMPLES=3000 (say) runs a deeper, still deterministic, search.
EXAMPLES = int(os.environ.get("STEPWISE_DIFF_EXAMPLES", "250"))

HYPOTHESIS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def engine() -> ModuleType:
    """The engine's `sim.replay` module (skipped with a reason while it does not exist)."""
    try:
        return importlib.import_module("sim.replay")
    except ModuleNotFoundError as exc:
        if exc.name not in ("sim.replay", "sim"):
            raise
        pytest.skip("sim.replay does not exist yet: nothing to compare the reference with")


def sim_input_error() -> type[Exception]:
    """The engine's input-error type."""
    return importlib.import_module("sim.errors").SimInputError


def assert_same(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """Both replays of the scenario are identical, or the first difference is the failure.

    The reference counts a `prefix_tokens` longer than the prompt up to the prompt; the engine's
    workload refuses one (sim/workload.py), so it is given the prompt length instead."""
    want = ref.replay(scenario)
    clamped = [
        dict(r, prefix_tokens=min(r["prefix_tokens"], r["prompt_len"]))
        if "prefix_tokens" in r
        else r
        for r in scenario["requests"]
    ]
    got = engine.replay(dict(scenario, requests=clamped))
    diff = first_difference(got, want)
    assert diff is None, f"engine vs reference: {diff}"


@st.composite
def shared_prefix_scenarios(draw: st.DrawFn, async_scheduling: bool) -> dict[str, Any]:
    """`scenarios`' settings (prefix caching on) with a workload of shared prefixes.

    Each request either has no prefix, or one of up to three prefixes (lengths often not a whole
    number of blocks, sometimes exactly whole) and a prompt that is exactly that prefix (so that
    several requests have the same prompt, whose output blocks vLLM shares once they are
    preempted and come back), longer than it, or shorter than it (`prefix_tokens` > prompt)."""
    base = draw(scenarios(prefix_caching=True, async_scheduling=async_scheduling))
    settings_ = base["settings"]
    bs, mml = settings_["block_size"], settings_["max_model_len"]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_prefixes = int(rng.integers(1, 4))
    lens = rng.integers(1, mml, size=n_prefixes)
    whole = rng.random(n_prefixes) < 0.3  # some prefixes a whole number of blocks
    lens = np.where(whole, np.maximum(lens // bs, 1) * bs, lens)
    lens = np.minimum(lens, mml - 1)
    max_output = int(rng.choice([4, 16, 48, 120]))
    requests = []
    for i, old in enumerate(base["requests"]):
        req = {**old, "id": f"s{i:03d}", "output_len": int(rng.integers(1, max_output + 1))}
        req.pop("prefix_id", None)
        req.pop("prefix_tokens", None)
        kind = rng.choice(["none", "exact", "exact", "longer", "shorter"])
        pid = int(rng.integers(0, n_prefixes))
        plen = int(lens[pid])
        if kind == "exact":
            req["prompt_len"] = plen
        elif kind == "longer" and plen < mml - 1:
            req["prompt_len"] = int(rng.integers(plen + 1, min(plen + 3 * bs, mml - 1) + 1))
        elif kind == "shorter" and plen > 1:
            req["prompt_len"] = int(rng.integers(1, plen))
        if kind != "none":
            req["prefix_id"] = pid
            req["prefix_tokens"] = plen
        requests.append(req)
    # The same bound on the work as `scenarios`: a few thousand steps at most.
    threshold = settings_["long_prefill_token_threshold"] or settings_["max_num_batched_tokens"]
    limit = 2000 * min(settings_["max_num_batched_tokens"], threshold)
    while len(requests) > 1 and sum(r["prompt_len"] + r["output_len"] for r in requests) > limit:
        requests.pop()
    return {"settings": settings_, "requests": requests}


@HYPOTHESIS
@given(scenario=scenarios(prefix_caching=False, policy="fcfs"))
def test_fcfs_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """FCFS without prefix caching: budgets, pools, chunking, threshold, watermark, arrivals."""
    assert_same(engine, scenario)


@HYPOTHESIS
@given(scenario=scenarios(prefix_caching=False, policy="priority"))
def test_priority_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """The priority policy with random priorities: admission order and preemption victims."""
    assert_same(engine, scenario)


@HYPOTHESIS
@given(scenario=scenarios(prefix_caching=True))
def test_prefix_caching_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """Prefix caching with shared prefixes, either policy: hits, sharing, LRU eviction."""
    assert_same(engine, scenario)


SHARED = HYPOTHESIS  # ~8 s per property at 250 examples


@SHARED
@given(scenario=shared_prefix_scenarios(async_scheduling=False))
def test_shared_prefix_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """Shared prefixes, prompts that are exactly their prefix or shorter: hits on prefix blocks
    and, after a preemption, on output blocks another request with the same prompt computed."""
    assert_same(engine, scenario)


@SHARED
@given(scenario=shared_prefix_scenarios(async_scheduling=True))
def test_async_shared_prefix_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """The same under async scheduling: output blocks hashed when their output is processed."""
    assert_same(engine, scenario)


def test_shared_prefix_scenarios_cover_the_cases() -> None:
    """The generator draws what it is for: prompts equal to, longer than and shorter than
    their prefix, prefixes not a whole number of blocks, and preemptions."""
    seen: set[str] = set()
    preempted = 0

    @settings(HYPOTHESIS, max_examples=60)
    @given(scenario=shared_prefix_scenarios(async_scheduling=False))
    def collect(scenario: dict[str, Any]) -> None:
        nonlocal preempted
        bs = scenario["settings"]["block_size"]
        for r in scenario["requests"]:
            if "prefix_id" not in r:
                continue
            p, t = r["prompt_len"], r["prefix_tokens"]
            seen.add("exact" if p == t else "longer" if p > t else "shorter")
            if t % bs:
                seen.add("partial")
        preempted += sum(x["num_preemptions"] for x in ref.replay(scenario)["per_request"].values())

    collect()
    assert seen == {"exact", "longer", "shorter", "partial"}
    assert preempted > 0


def test_a_blocked_head_whose_cache_hit_is_evicted_is_admitted(engine: ModuleType) -> None:
    """Found by `shared_prefix_scenarios`: at step 28 s004 decodes into a new block, taken from
    the free queue's front, which evicts the one cached prefix block s006 would hit. s006's
    chunk is cut by the budget (15 tokens), so without the hit it needs one block less and is
    admitted into the last free block; the engine must not batch that step into a quiet run
    that assumed the head stays blocked (it did, with or without prompts equal to prefixes)."""
    settings_ = {
        "max_num_batched_tokens": 16,
        "max_num_seqs": 2,
        "max_model_len": 64,
        "block_size": 16,
        "num_gpu_blocks": 5,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": True,
        "policy": "priority",
        "long_prefill_token_threshold": 0,
        "watermark": 0.0,
        "scheduler_reserve_full_isl": False,
        "async_scheduling": True,
        "max_steps": 20000,
    }
    rows = [(38, 3, 2, 0, 38), (32, 1, 2, 1, 32), (43, 1, 1), (47, 4, 0, 1, 32)]
    rows += [(32, 4, 2, 1, 32), (49, 3, 1), (35, 4, 2, 0, 38)]
    requests = []
    for i, (prompt, output, priority, *prefix) in enumerate(rows):
        req = {"id": f"s00{i}", "prompt_len": prompt, "output_len": output, "arrival_step": 1}
        req["priority"] = priority
        if prefix:
            req["prefix_id"], req["prefix_tokens"] = prefix
        requests.append(req)
    scenario = {"settings": settings_, "requests": requests}
    step = ref.replay(scenario)["steps"][27]
    assert step["num_scheduled_tokens"] == {"s004": 1, "s006": 15}
    assert_same(engine, scenario)


@HYPOTHESIS
@given(scenario=scenarios(prefix_caching=False, policy="fcfs", async_scheduling=True))
def test_async_fcfs_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """Async, FCFS: a finishing request holds its blocks and its place in `running` one step
    longer, and may be the preemption victim while its last token is in flight."""
    assert_same(engine, scenario)


@HYPOTHESIS
@given(scenario=scenarios(prefix_caching=False, policy="priority", async_scheduling=True))
def test_async_priority_random_scenarios(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """Async with the priority policy: victims chosen among requests with outputs in flight."""
    assert_same(engine, scenario)


@HYPOTHESIS
@given(scenario=scenarios(prefix_caching=True, async_scheduling=True))
def test_async_prefix_caching_random_scenarios(
    engine: ModuleType, scenario: dict[str, Any]
) -> None:
    """Async with prefix caching: blocks hashed up to the known tokens, later than in sync."""
    assert_same(engine, scenario)


@settings(HYPOTHESIS, max_examples=max(50, EXAMPLES // 2))
@given(scenario=invalid_configs())
def test_invalid_configs_rejected_identically(engine: ModuleType, scenario: dict[str, Any]) -> None:
    """A configuration vLLM refuses is refused by both, the engine with vLLM's message."""
    with pytest.raises(ref.ConfigRejected) as ref_error:
        ref.replay(scenario)
    with pytest.raises(sim_input_error()) as sim_error:
        engine.replay(scenario)
    assert str(ref_error.value) in str(sim_error.value)


def test_prompt_of_max_model_len_rejected_by_both(engine: ModuleType) -> None:
    """A prompt that leaves no room for an output token is refused by both engines."""
    scenario = random_trace(0, n=5, max_model_len=512)
    scenario["requests"][2]["prompt_len"] = 512
    with pytest.raises(ref.ConfigRejected):
        ref.replay(scenario)
    with pytest.raises(sim_input_error()):
        engine.replay(scenario)


@pytest.mark.parametrize(
    ("seed", "policy", "caching", "overrides", "preempts"),
    [
        (1, "fcfs", False, {"max_num_batched_tokens": 8192, "max_num_seqs": 256}, True),
        (2, "priority", False, {"max_num_batched_tokens": 2048, "max_num_seqs": 128}, True),
        (3, "fcfs", True, {"max_num_batched_tokens": 4096, "max_num_seqs": 64}, True),
        # bound by max_num_seqs (16 sequences never fill the pool), with a threshold
        (4, "priority", False, {"max_num_seqs": 16, "long_prefill_token_threshold": 256}, False),
        # the same kinds under async scheduling
        (5, "fcfs", False, {"max_num_batched_tokens": 8192, "async_scheduling": True}, True),
        (6, "priority", True, {"max_num_seqs": 64, "async_scheduling": True}, True),
        (7, "fcfs", False, {"max_num_seqs": 16, "async_scheduling": True}, False),
    ],
)
def test_thousand_request_traces(
    engine: ModuleType,
    seed: int,
    policy: str,
    caching: bool,
    overrides: dict[str, Any],
    preempts: bool,
) -> None:
    """Seeded 1,000-request traces: on a pool that forces preemptions, or seq-bound; sync and
    async."""
    scenario = random_trace(
        seed, n=1000, policy=policy, prefix_caching=caching, num_gpu_blocks=1500, **overrides
    )
    want = ref.replay(scenario)
    total_preemptions = sum(r["num_preemptions"] for r in want["per_request"].values())
    assert (total_preemptions > 0) == preempts
    if not preempts:
        assert max(s["num_running"] for s in want["steps"]) == overrides["max_num_seqs"]
    got = engine.replay(scenario)
    diff = first_difference(got, want)
    assert diff is None, f"trace seed {seed} ({policy}): {diff}"
