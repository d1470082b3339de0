"""Shared test helpers: loading the recordings, comparing replays, and random scenario generators.

Why: the oracle test, the seed-number test and the differential test all compare one replay with
another (or with a recording) field by field and must report the *first* difference clearly;
the differential test also needs random-but-valid scenarios, both as hypothesis strategies and
as seeded NumPy traces of 1,000 requests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

DATA_DIR = Path(__file__).parent / "data"

STEP_KEYS = (
    "step",
    "arrived",
    "num_scheduled_tokens",
    "total_scheduled_tokens",
    "new_req_ids",
    "resumed_req_ids",
    "preempted_req_ids",
    "sampled_req_ids",
    "finished_req_ids",
    "running_after_schedule",
    "waiting_after_schedule",
    "num_running",
    "num_waiting",
    "kv_blocks_used_after_schedule",
    "kv_blocks_free_after_schedule",
    "kv_blocks_used",
    "kv_blocks_free",
)
PER_REQUEST_KEYS = (
    "first_scheduled_step",
    "first_token_step",
    "finish_step",
    "num_preemptions",
    "num_output_tokens",
)


def load_recording(name: str) -> dict[str, Any]:
    """One recording from tests/data by file stem."""
    return json.loads((DATA_DIR / f"{name}.json").read_text())


def recording_names() -> list[str]:
    """Stems of every recording in tests/data."""
    return sorted(p.stem for p in DATA_DIR.glob("*.json"))


def vllm_error_text(config_error: str) -> str:
    """The message part of a recorded pydantic error: after "Value error, " up to " [type="."""
    match = re.search(r"Value error, (.*?) \[type=", config_error, flags=re.S)
    assert match, f"unexpected config_error format: {config_error!r}"
    return match.group(1).strip()


def first_difference(
    got: dict[str, Any], want: dict[str, Any], keys: tuple[str, ...] = STEP_KEYS
) -> str | None:
    """Describe the first difference between two replays (`steps`, `per_request`), or None.

    Steps are compared in order, key by key (dicts of token counts compare by content; every
    list compares in order, since order is part of the rule). Then the number of steps, then
    per-request records.
    """
    g_steps, w_steps = got["steps"], want["steps"]
    for g, w in zip(g_steps, w_steps, strict=False):
        for key in keys:
            if key not in g or key not in w:
                return f"step {w.get('step')}: field {key!r} missing on one side"
            if g[key] != w[key]:
                return f"step {w['step']}: {key} differs: got {g[key]!r}, want {w[key]!r}"
    if len(g_steps) != len(w_steps):
        return f"number of steps differs: got {len(g_steps)}, want {len(w_steps)}"
    g_req, w_req = got["per_request"], want["per_request"]
    if set(g_req) != set(w_req):
        return f"per_request ids differ: got {sorted(g_req)}, want {sorted(w_req)}"
    for rid, w in w_req.items():
        for key in PER_REQUEST_KEYS:
            if g_req[rid].get(key) != w.get(key):
                return (
                    f"per_request[{rid!r}].{key} differs: got {g_req[rid].get(key)!r}, "
                    f"want {w.get(key)!r}"
                )
    return None


# --------------------------------------------------------------------------------------------
# Random scenarios
# --------------------------------------------------------------------------------------------


def base_settings(**overrides: Any) -> dict[str, Any]:
    """Settings in the oracle schema with the harness's defaults, overridden as given."""
    settings: dict[str, Any] = {
        "max_num_batched_tokens": 2048,
        "max_num_seqs": 128,
        "max_model_len": 8192,
        "block_size": 16,
        "num_gpu_blocks": 2000,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": False,
        "policy": "fcfs",
        "long_prefill_token_threshold": 0,
        "watermark": 0.0,
        "scheduler_reserve_full_isl": True,
        "async_scheduling": False,
        "max_steps": 20000,
    }
    settings.update(overrides)
    return settings


@st.composite
def scenarios(
    draw: st.DrawFn,
    prefix_caching: bool | None = None,
    policy: str | None = None,
    max_requests: int = 40,
    async_scheduling: bool = False,
) -> dict[str, Any]:
    """A random valid scenario that always finishes (`async_scheduling`: vLLM's AsyncScheduler).

    Budgets from tiny to ample, pools from a few blocks (many preemptions) to plenty, chunked
    prefill on or off, fcfs or priority, threshold, watermark, full-sequence reservation on or
    off, block sizes 8/16/32, shared prefixes, arrival gaps.
    Each request's whole sequence fits in the pool on its own (else vLLM would spin forever),
    and every prompt is shorter than max_model_len (longer ones are rejected up front).
    """
    bs = draw(st.sampled_from([16, 16, 16, 8, 32]))
    tiny = draw(st.integers(0, 4)) == 0  # a tiny budget: keep the work small too
    chunked = True if tiny else draw(st.sampled_from([True, True, True, False]))
    if tiny:
        max_model_len = draw(st.sampled_from([32, 48, 64, 100, 128]))
        budget = draw(st.integers(1, 24))
        max_requests = min(max_requests, 8)
    else:
        max_model_len = draw(st.sampled_from([64, 128, 200, 256, 512, 1024, 2048]))
        lo = 16 if chunked else max_model_len
        budget = draw(st.integers(lo, max(lo, 2048)))
    max_num_seqs = draw(st.integers(1, min(budget, 64)))
    min_blocks = -(-max_model_len // bs)  # prompt + outputs never exceed max_model_len tokens
    pool = draw(st.sampled_from(["tiny", "tiny", "small", "ample"]))
    if pool == "tiny":  # one long sequence fills it: preemptions galore
        usable = draw(st.integers(min_blocks, min_blocks + 8))
    elif pool == "small":
        usable = draw(st.integers(min_blocks, min_blocks * 4 + 16))
    else:
        usable = draw(st.integers(min_blocks, 2000))
    settings = base_settings(
        max_num_batched_tokens=budget,
        max_num_seqs=max_num_seqs,
        max_model_len=max_model_len,
        block_size=bs,
        num_gpu_blocks=usable + 1,
        enable_chunked_prefill=chunked,
        enable_prefix_caching=draw(st.booleans()) if prefix_caching is None else prefix_caching,
        policy=policy or draw(st.sampled_from(["fcfs", "priority"])),
        long_prefill_token_threshold=draw(
            st.one_of(st.just(0), st.just(0), st.integers(1, max_model_len))
        ),
        watermark=draw(st.sampled_from([0.0, 0.0, 0.0, 0.01, 0.05, 0.1])),
        scheduler_reserve_full_isl=draw(st.sampled_from([True, True, True, False])),
        async_scheduling=async_scheduling,
    )
    n = draw(st.one_of(st.integers(1, max_requests), st.integers(max_requests // 2, max_requests)))
    # Per-request values come from a drawn seed: hypothesis still shrinks n and the settings,
    # and generating 40 requests costs one draw instead of two hundred.
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_prefixes = int(rng.integers(0, 4))
    prefix_lens = rng.integers(1, max_model_len, size=n_prefixes)
    max_output = int(rng.choice([8, 32, 64, 160]))
    max_gap = int(rng.choice([0, 3, 20]))
    requests = []
    step = 1
    for i in range(n):
        step += int(rng.integers(0, max_gap + 1)) if rng.random() < 0.7 else 0
        prompt = int(rng.integers(1, max_model_len))
        req = {
            "id": f"r{i:03d}",
            "prompt_len": prompt,
            "output_len": int(rng.integers(1, max_output + 1)),
            "arrival_step": step,
            "priority": int(rng.integers(0, 4)) if settings["policy"] == "priority" else 0,
        }
        if n_prefixes and rng.random() < 0.6:
            pid = int(rng.integers(0, n_prefixes))
            req["prefix_id"] = pid
            req["prefix_tokens"] = int(min(prefix_lens[pid], prompt))
            if rng.random() < 0.5:  # most sharers' prompts extend past the shared prefix
                longer = prefix_lens[pid] + rng.integers(1, 64)
                req["prompt_len"] = int(min(longer, max_model_len - 1))
                req["prefix_tokens"] = int(min(prefix_lens[pid], req["prompt_len"]))
        requests.append(req)
    # Keep every run a few thousand steps at most: a tiny per-step rate (budget, threshold) and
    # many long prompts would otherwise take tens of thousands of steps.
    threshold = settings["long_prefill_token_threshold"] or budget
    limit = 2000 * min(budget, threshold)
    while len(requests) > 1 and sum(r["prompt_len"] + r["output_len"] for r in requests) > limit:
        requests.pop()
    return {"settings": settings, "requests": requests}


@st.composite
def invalid_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A configuration vLLM refuses: chunked prefill off with budget < max_model_len, or
    budget < max_num_seqs."""
    max_model_len = draw(st.integers(32, 4096))
    if draw(st.booleans()):
        budget = draw(st.integers(1, max_model_len - 1))
        settings = base_settings(
            max_num_batched_tokens=budget,
            max_num_seqs=draw(st.integers(1, 300)),
            max_model_len=max_model_len,
            enable_chunked_prefill=False,
        )
    else:
        budget = draw(st.integers(1, 255))
        settings = base_settings(
            max_num_batched_tokens=budget,
            max_num_seqs=draw(st.integers(budget + 1, 512)),
            max_model_len=max_model_len,
            enable_chunked_prefill=draw(st.booleans()),
        )
    requests = [{"id": "a", "prompt_len": 8, "output_len": 4, "arrival_step": 1, "priority": 0}]
    return {"settings": settings, "requests": requests}


def random_trace(
    seed: int,
    n: int = 1000,
    policy: str = "fcfs",
    prefix_caching: bool = False,
    **settings: Any,
) -> dict[str, Any]:
    """A seeded random trace of n requests (Poisson-like arrivals, long-tailed lengths)."""
    rng = np.random.default_rng(seed)
    s = base_settings(policy=policy, enable_prefix_caching=prefix_caching, max_steps=200000)
    s.update(settings)
    mml = s["max_model_len"]
    gaps = rng.exponential(1.5, n).astype(int)
    arrivals = 1 + np.cumsum(gaps)
    prompts = np.clip(rng.lognormal(6.0, 1.0, n).astype(int), 1, mml - 1)
    outputs = np.clip(rng.lognormal(4.5, 1.0, n).astype(int), 1, 1000)
    requests = []
    for i in range(n):
        req = {
            "id": f"t{i:04d}",
            "prompt_len": int(prompts[i]),
            "output_len": int(outputs[i]),
            "arrival_step": int(arrivals[i]),
            "priority": int(rng.integers(0, 4)) if policy == "priority" else 0,
        }
        if prefix_caching and rng.random() < 0.5:
            pid = int(rng.integers(0, 3))
            req["prefix_id"] = pid
            req["prefix_tokens"] = min(256 * (pid + 1), req["prompt_len"])
        requests.append(req)
    return {"settings": s, "requests": requests}
