"""The compiled engine (sim/engine): the same decisions as the Python engine and the reference.

- Every run of the lessons' kinds (timed and by step; sync and async; prefix caching; each
  policy; admission limits, a gateway timeout, a closed loop; threshold and watermark) gives the
  Python engine's Run, field by field (step times to the last bits: the Python engine sums a
  window's step times at once, the compiled loop one step at a time), and the same per-step
  lists when asked for them.
- vLLM 0.34's cache-aware admission and its threshold rule, against the plain reference
  (tests/reference_scheduler.py), on random shared-prefix workloads and on a hand-made case.
- The same functions run uncompiled (NUMBA_DISABLE_JIT=1) and give the same replay.
- The policies declare what the engine needs; the engine never asks a policy's name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim.config import SchedulerConfig
from sim.cost import Deployment
from sim.engine.detail import FlatDetail
from sim.engine.layout import LOG_COLUMNS
from sim.generators import from_spec
from sim.replay import replay
from sim.scheduler import Engine
from sim.timed import config_for, timer_for
from tests import reference_scheduler as ref
from tests.scenarios import first_difference

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

DISCRETE = (
    *LOG_COLUMNS,  # every per-step column of the run
    "token_req",
    "token_step",
    "first_scheduled_step",
    "first_token_step",
    "finish_step",
    "num_preemptions",
    "num_output_tokens",
    "num_recomputed_tokens",
    "num_prefix_hit_tokens",
    "rejected",
)
TIMES = ("step_ms", "step_start_s", "first_token_s", "finish_s", "arrival_s")
SPEC = "prompt=lognormal:1024:0.8,output=uniform:16:512"
CASES = [
    ("H100-SXM", f"poisson:rate=20,n=300,{SPEC},seed=1", {}),
    ("L4", f"poisson:rate=6,n=200,{SPEC},seed=2", {"async_scheduling": True}),
    (
        "L4",
        f"poisson:rate=6,n=200,{SPEC},seed=3,prefix=512,prefixes=3",
        {"enable_prefix_caching": True, "async_scheduling": True},
    ),
    (
        "L4",
        f"poisson:rate=6,n=200,{SPEC},seed=4,prefix=500,prefixes=2",
        {"enable_prefix_caching": True, "policy": "prefix-aware"},
    ),
    ("L4", f"poisson:rate=8,n=200,{SPEC},seed=5,tenants=3", {"policy": "fair-share"}),
    ("L4", f"poisson:rate=8,n=200,{SPEC},seed=6", {"policy": "sjf", "async_scheduling": True}),
    ("L4", f"poisson:rate=8,n=200,{SPEC},seed=6", {"policy": "priority"}),
    (
        "L4",
        f"poisson:rate=12,n=300,{SPEC},seed=7",
        {"max_num_queued_reqs": 60, "max_num_queued_tokens": 30000},
    ),
    (
        "L4",
        f"poisson:rate=12,n=300,{SPEC},seed=8",
        {"gateway_timeout_s": 5.0, "max_num_queued_reqs": 80, "async_scheduling": True},
    ),
    ("L4", f"concurrency:clients=40,n=200,{SPEC},seed=10", {"enable_prefix_caching": True}),
    (
        "L4",
        f"poisson:rate=8,n=200,{SPEC},seed=12,prefix=600,prefixes=4",
        {
            "enable_prefix_caching": True,
            "cache_aware_admission_window": 8,
            "cache_aware_admission_threshold": 0.3,
        },
    ),
    (
        "H100-SXM",
        f"poisson:rate=20,n=200,{SPEC},seed=11",
        {"long_prefill_token_threshold": 256, "watermark": 0.01},
    ),
]


def _both(config, workload, timer, detail=False):
    """(the run priced inside the loop from the cost model's tables, the same run with the
    cost model asked step by step from Python): two ways through the loop's timing."""
    inside = Engine(config, workload, timer=timer, record_detail=detail).run()
    asked = Engine(config, workload, timer=lambda *shape: timer(*shape), record_detail=detail)
    return inside, asked.run()


def _same_run(a, b) -> None:
    assert a.num_steps == b.num_steps
    for name in DISCRETE:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in TIMES:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12, err_msg=name)
    assert a.prefix_cache == b.prefix_cache


@pytest.mark.parametrize(("gpu", "spec", "kw"), CASES, ids=[str(c[2]) or "plain" for c in CASES])
def test_every_kind_of_run_is_priced_alike_inside_and_outside_the_loop(gpu, spec, kw):
    dep = Deployment(gpu, "Llama-3.1-8B")
    config = config_for(dep, **kw)
    timer = timer_for(dep, async_scheduling=config.async_scheduling)
    inside, asked = _both(config, from_spec(spec), timer)
    assert inside.num_steps > 100
    _same_run(inside, asked)
    done = (inside.finish_step > 0) | (inside.rejected > 0)
    if inside.timed_out is not None:
        done |= inside.timed_out
    assert done.all()


@pytest.mark.parametrize("case", [CASES[2], CASES[4], CASES[8]], ids=["prefix", "fair", "gate"])
def test_the_step_lists_agree_with_the_runs_columns(case):
    gpu, spec, kw = case
    dep = Deployment(gpu, "Llama-3.1-8B")
    config = config_for(dep, **kw)
    run = Engine(
        config,
        from_spec(spec),
        timer=timer_for(dep, async_scheduling=config.async_scheduling),
        record_detail=True,
    ).run()
    assert isinstance(run.detail, FlatDetail)
    assert len(run.detail) == run.num_steps
    for k, d in enumerate(run.detail):
        assert d.step == k + 1
        assert int(d.scheduled_tokens.sum()) == run.num_scheduled_tokens[k]
        assert d.scheduled_req.shape[0] == run.num_scheduled_seqs[k]
        assert d.preempted.shape[0] == run.num_preempted[k]
        assert d.finished.shape[0] == run.num_finished[k]
        assert d.running.shape[0] == run.num_running[k]
        assert d.waiting.shape[0] == run.num_waiting[k]
        assert d.kv_blocks_used == run.kv_blocks_used[k]
        assert set(d.scheduled_req.tolist()) <= set(d.running.tolist())
    assert run.detail[-1].step == run.num_steps  # negative indexing reads as a list


@pytest.mark.parametrize("path", sorted((DATA / "vllm-0.34").glob("*.json")), ids=lambda p: p.stem)
def test_vllm_034_recordings_replay_exactly(path):
    """The public recordings of vLLM 0.34.0's scheduler, step for step (preempted ids compared
    as the recordings list them, sorted: vLLM keeps them in a set)."""
    scenario = json.loads(path.read_text())
    if scenario.get("config_error"):
        with pytest.raises(ValueError, match="max_num_batched_tokens"):
            replay(scenario)
        return
    got = replay(scenario)
    for ours, theirs in zip(got["steps"], scenario["steps"], strict=True):
        ours = dict(ours, preempted_req_ids=sorted(ours["preempted_req_ids"]))
        for key in ("num_scheduled_tokens", "preempted_req_ids", "finished_req_ids"):
            assert ours[key] == theirs[key], (theirs["step"], key)
        assert ours["kv_blocks_used"] == theirs["kv_blocks_used"], theirs["step"]
    assert len(got["steps"]) == scenario["num_steps"]
    assert got["per_request"] == scenario["per_request"]


def _scenario(rng: np.random.Generator, **settings) -> dict:
    """A random workload of shared prefixes (prompts exactly their prefix included) on a pool
    small enough to fill."""
    n = int(rng.integers(20, 60))
    prefix_len = [int(x) for x in rng.integers(20, 200, size=3)]
    requests = []
    for i in range(n):
        pid = int(rng.integers(-1, 3))
        plen = prefix_len[pid] if pid >= 0 else 0
        prompt = plen if pid >= 0 and rng.random() < 0.3 else plen + int(rng.integers(1, 300))
        requests.append(
            {
                "id": f"r{i:03d}",
                "prompt_len": prompt,
                "output_len": int(rng.integers(1, 40)),
                "arrival_step": int(rng.integers(1, 60)),
                "priority": 0,
                "prefix_id": pid,
                "prefix_tokens": plen,
            }
        )
    base = {
        "max_num_batched_tokens": int(rng.choice([256, 512, 1024])),
        "max_num_seqs": int(rng.choice([4, 8, 32])),
        "max_model_len": 1024,
        "num_gpu_blocks": int(rng.integers(70, 200)),
        "enable_prefix_caching": True,
        "async_scheduling": bool(rng.random() < 0.5),
        **settings,
    }
    return {"settings": base, "requests": requests, "vllm_version": "0.34.0"}


@pytest.mark.parametrize("seed", range(40))
def test_cache_aware_admission_follows_the_reference(seed):
    rng = np.random.default_rng(seed)
    window = int(rng.choice([2, 4, 16]))
    threshold = float(rng.choice([0.0, 0.3, 0.7]))
    scenario = _scenario(
        rng, cache_aware_admission_window=window, cache_aware_admission_threshold=threshold
    )
    want = ref.replay(scenario)
    got = replay(scenario)
    assert first_difference(got, want) is None


def test_cache_aware_admission_admits_the_cached_prompt_first():
    """Three prompts wait behind a full cache; the one whose prefix is cached (arrived last)
    is admitted first with a window of 3, last without one."""
    requests = [
        {"id": "a", "prompt_len": 480, "output_len": 30, "arrival_step": 1, "prefix_id": 0,
         "prefix_tokens": 320},
        {"id": "b", "prompt_len": 300, "output_len": 2, "arrival_step": 3},
        {"id": "c", "prompt_len": 300, "output_len": 2, "arrival_step": 3},
        {"id": "d", "prompt_len": 400, "output_len": 2, "arrival_step": 3, "prefix_id": 0,
         "prefix_tokens": 320},
    ]  # fmt: skip
    settings = {
        "max_num_batched_tokens": 512,
        "max_num_seqs": 2,
        "max_model_len": 1024,
        "num_gpu_blocks": 60,
        "enable_prefix_caching": True,
    }
    order = {}
    for window in (0, 3):
        scenario = {
            "settings": dict(settings, cache_aware_admission_window=window),
            "requests": requests,
            "vllm_version": "0.34.0",
        }
        got = replay(scenario)
        assert first_difference(got, ref.replay(scenario)) is None
        first = {rid: rec["first_scheduled_step"] for rid, rec in got["per_request"].items()}
        order[window] = sorted("bcd", key=lambda r: first[r])
    assert order[0] == ["b", "c", "d"]
    assert order[3][0] == "d"


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_threshold_without_chunked_prefill_follows_the_release(version):
    """0.34 ignores long_prefill_token_threshold when chunked prefill is off (SCHEDULER h1)."""
    scenario = {
        "settings": {
            "max_num_batched_tokens": 2048,
            "max_num_seqs": 8,
            "max_model_len": 2048,
            "num_gpu_blocks": 400,
            "enable_chunked_prefill": False,
            "long_prefill_token_threshold": 100,
        },
        "requests": [
            {"id": "a", "prompt_len": 600, "output_len": 5, "arrival_step": 1},
            {"id": "b", "prompt_len": 700, "output_len": 5, "arrival_step": 1},
        ],
        "vllm_version": version,
    }
    got = replay(scenario)
    assert first_difference(got, ref.replay(scenario)) is None
    first = got["steps"][0]["num_scheduled_tokens"]
    assert first == ({"a": 100, "b": 100} if version == "0.33.0" else {"a": 600, "b": 700})


def test_the_same_functions_run_uncompiled():
    """NUMBA_DISABLE_JIT=1 runs the engine as plain Python, with the same decisions."""
    path = DATA / "prefix_shared_sync_b.json"
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run(
        [sys.executable, "-m", "sim", "replay", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    compiled = replay(json.loads(path.read_text()))
    assert json.loads(out.stdout) == json.loads(json.dumps(compiled))


def test_policies_declare_what_the_engine_needs():
    """The engine reads a policy's declared queue and victim rules, not its name: a policy
    registered under a new name with FCFS's rules runs exactly as FCFS."""
    from sim.policy import FCFS, POLICY_REGISTRY

    class Renamed(FCFS):
        name = "renamed-fcfs"

    POLICY_REGISTRY["renamed-fcfs"] = Renamed
    try:
        wl = from_spec(f"poisson:rate=8,n=80,{SPEC},seed=3")
        dep = Deployment("L4", "Llama-3.1-8B")
        runs = []
        for policy in ("fcfs", "renamed-fcfs"):
            config = config_for(dep, policy=policy, num_gpu_blocks=300)
            runs.append(Engine(config, wl, timer=timer_for(dep)).run())
        assert runs[0].total_preemptions > 0
        _same_run(*runs)
    finally:
        del POLICY_REGISTRY["renamed-fcfs"]


def test_a_config_names_the_release_it_follows():
    base = dict(max_num_batched_tokens=64, max_num_seqs=4, max_model_len=64, num_gpu_blocks=9)
    assert SchedulerConfig(**base).vllm_version == "0.34"
    with pytest.raises(ValueError, match="vllm_version"):
        SchedulerConfig(**base, vllm_version="0.32")


PRICED = [
    Deployment("H100-SXM", "Llama-3.1-8B"),
    Deployment("L4", "Llama-3.1-8B"),
    Deployment("H100-SXM", "Llama-3.1-70B", tp=4),
    Deployment("H100-SXM", "Mixtral-8x7B", tp=2),
]


@pytest.mark.parametrize("dep", PRICED, ids=lambda d: f"{d.gpu}-{d.model}-tp{d.tp}")
@pytest.mark.parametrize("overlap", [False, True], ids=["sync", "async"])
def test_the_loop_prices_a_step_as_the_cost_model_does(dep, overlap):
    """`price_step` on the cost model's tables gives `timer_for`'s step times to the bit."""
    from sim.engine.kernel import price_step
    from sim.engine.pricing import price_tables

    rng = np.random.default_rng(1)
    n = 400
    s = rng.integers(0, 256, n)
    q = s + rng.integers(0, 4000, n) * (rng.random(n) < 0.3)
    kv = rng.integers(0, 500_000, n)
    q[:3] = s[:3] = kv[:3] = 0  # idle steps too
    pairs = kv + q * (q + 1) // 2
    want = timer_for(dep, async_scheduling=overlap)(q, s, kv, pairs)
    lin, lm, g, pc = price_tables(dep, int(q.max()), int(s.max()), overlap=overlap)
    got = [price_step(pc, lin, lm, g, *row) for row in zip(q, s, kv, pairs, strict=True)]
    np.testing.assert_array_equal(got, want)
