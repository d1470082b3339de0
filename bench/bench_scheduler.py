"""Scheduler speed (issue 3): a 1,000-request step replay against the plain-Python reference, a
10,000-request timed simulation as a whole process, a 32-budget sweep, and peak memory.

Targets: the 1,000-request replay (budget 8192, 256 sequences, a pool that forces about a hundred
preemptions, about 5,000 steps) <= 0.1 s in process and >= 5x faster than
tests.reference_scheduler on the same scenario, measured in the same run; the 10,000-request
timed run (H100-SXM, Llama-3.1-8B, CSV trace) <= 3 s as a process, start-up included. Medians
of 5. Both engines must give identical steps (checked here, not assumed).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sim.replay import config_from_settings, replay, workload_from_requests
from sim.scheduler import run_steps
from sim.sweep import sweep_values

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5


def trace_scenario(n: int = 1000, seed: int = 0, gap: float = 3.5, blocks: int = 3800) -> dict:
    """A seeded 1,000-request trace in the oracle schema: exponential arrival gaps (mean 3.5
    steps), lognormal prompts (median ~665) and outputs (median ~150); budget 8192, 256
    sequences, a 3,800-block pool (about a hundred preemptions, about 5,000 steps)."""
    rng = np.random.default_rng(seed)
    arrivals = 1 + np.cumsum(rng.exponential(gap, n)).astype(int)
    prompts = np.clip(rng.lognormal(6.5, 0.8, n).astype(int), 16, 8000)
    outputs = np.clip(rng.lognormal(5.0, 0.8, n).astype(int), 1, 2000)
    settings = {
        "max_num_batched_tokens": 8192,
        "max_num_seqs": 256,
        "max_model_len": 8192,
        "block_size": 16,
        "num_gpu_blocks": blocks,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": False,
        "policy": "fcfs",
        "long_prefill_token_threshold": 0,
        "watermark": 0.0,
        "scheduler_reserve_full_isl": True,
        "async_scheduling": False,
        "max_steps": 200_000,
    }
    requests = [
        {
            "id": f"t{i:04d}",
            "prompt_len": int(prompts[i]),
            "output_len": int(outputs[i]),
            "arrival_step": int(arrivals[i]),
            "priority": 0,
        }
        for i in range(n)
    ]
    return {"settings": settings, "requests": requests}


def _median_time(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _write_trace(path: Path, n: int = 10_000, seed: int = 1, rate_per_s: float = 20.0) -> None:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "arrival_s": np.cumsum(rng.exponential(1.0 / rate_per_s, n)),
            "prompt_tokens": np.clip(rng.lognormal(6.5, 0.8, n).astype(int), 16, 8000),
            "output_tokens": np.clip(rng.lognormal(5.0, 0.8, n).astype(int), 1, 2000),
        }
    )
    frame.to_csv(path, index=False)


_PROBE = (
    "import resource, runpy, sys\n"
    "sys.argv = ['sim'] + sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_module('sim', run_name='__main__')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    "else:\n"
    "    code = 0\n"
    "sys.stderr.write('MAXRSS_KB %d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    "raise SystemExit(code)\n"
)


def _replay_process(scenario: Path, *flags: str) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "sim", "replay", str(scenario), *flags],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=True,
    )
    return time.perf_counter() - started, proc.stdout


def _simulate_process(trace: Path) -> tuple[float, int, dict]:
    # the series' configuration: synchronous, no prefix caching (`simulate` defaults to vllm
    # serve's async scheduling and prefix caching since issue 39)
    args = [
        *("--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--workload", str(trace)),
        *("--no-enable-prefix-caching", "--no-async-scheduling"),
    ]
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "simulate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=True,
    )
    seconds = time.perf_counter() - started
    rss = int(proc.stderr.split("MAXRSS_KB")[1].split()[0])
    return seconds, rss, json.loads(proc.stdout)


def run() -> str:
    from tests import reference_scheduler as reference

    lines = ["## Scheduler (sim/engine, compiled)", ""]
    # ---- 1,000-request replay vs the plain-Python reference
    scenario = trace_scenario()
    config = config_from_settings(scenario["settings"])
    workload = workload_from_requests(scenario["requests"])
    same = replay(scenario)["steps"] == reference.replay(scenario)["steps"]
    ours = run_steps(config, workload)
    t_ours = _median_time(lambda: run_steps(config, workload))
    t_ref = _median_time(lambda: reference.replay(scenario))
    steps = ours.num_steps
    lines += [
        "### 1,000-request trace (budget 8192, 256 sequences, 3,800-block pool)",
        "",
        f"{steps} steps, {ours.total_preemptions} preemptions; identical steps in both "
        f"engines: {'yes' if same else 'NO'}.",
        "",
        "| engine | median of 5 | steps per second |",
        "|---|---|---|",
        f"| Stepwise (compiled, sim/engine) | {t_ours * 1e3:.1f} ms | {steps / t_ours:,.0f} |",
        f"| reference (plain Python) | {t_ref * 1e3:.1f} ms | {steps / t_ref:,.0f} |",
        "",
        f"Speed-up {t_ref / t_ours:.1f}x (target >= 50x, issue 38); in-process time target "
        f"<= 100 ms: {'met' if t_ours <= 0.1 else 'not met'}.",
        "",
    ]
    # ---- the same scenario through the command line, a fresh process each time
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace1000.json"
        path.write_text(json.dumps(scenario), encoding="utf-8")
        summaries = [_replay_process(path, "--summary") for _ in range(REPEATS)]
        full = [_replay_process(path) for _ in range(REPEATS)]
    cli_sched = statistics.median(json.loads(out)["scheduler_seconds"] for _, out in summaries)
    summary_s = statistics.median(t for t, _ in summaries)
    full_s = statistics.median(t for t, _ in full)
    full_mb = len(full[0][1]) / 1e6
    lines += [
        "The same scenario through the command line, a fresh process each time (median of 5): "
        f"`python -m sim replay trace1000.json --summary` reports scheduler_seconds = "
        f"{cli_sched * 1e3:.1f} ms (whole process {summary_s:.2f} s); the full replay, which "
        f"prints every step and request in the recordings' schema ({full_mb:.1f} MB of JSON), "
        f"takes {full_s:.2f} s as a process.",
        "",
    ]
    # ---- 32 budgets: one sweep call vs 32 separate runs
    budgets = [int(b) for b in np.linspace(512, 16384, 32) // 16 * 16]
    t_sweep = _median_time(
        lambda: sweep_values(config, "max_num_batched_tokens", budgets, workload)
    )
    t_sep = _median_time(
        lambda: [
            run_steps(dataclasses.replace(config, max_num_batched_tokens=b), workload)
            for b in budgets
        ]
    )
    t_bare = _median_time(
        lambda: sweep_values(config, "max_num_batched_tokens", budgets, workload, metrics=False)
    )
    t_all = _median_time(
        lambda: sweep_values(config, "max_num_batched_tokens", budgets, workload, share=False)
    )
    frame = sweep_values(config, "max_num_batched_tokens", budgets, workload, keep_runs=True)
    own = frame.index[frame["run_of"] == frame.index]
    first_shared = int(frame["max_num_batched_tokens"].iloc[own[-1]])
    peak = int(frame.attrs["runs"][own[-1]].num_scheduled_tokens.max())
    lines += [
        "### Sweep: 32 budgets (512 to 16,384) over the same trace",
        "",
        "| how | median of 5 |",
        "|---|---|",
        f"| `sweep_values` with sim.metrics.summarize per row | {t_sweep:.2f} s |",
        f"| `sweep_values(..., metrics=False)` | {t_bare:.2f} s |",
        f"| `sweep_values(..., share=False)` (every budget runs) | {t_all:.2f} s |",
        f"| 32 separate `run_steps` calls | {t_sep:.2f} s |",
        "",
        f"Speed-up of the sweep over separate runs: {t_sep / t_sweep:.1f}x. The sweep ran "
        f"{len(own)} of the 32 budgets: the run at budget {first_shared:,} never scheduled more "
        f"than {peak:,} tokens in a step, so it answers for every larger budget "
        "(sim/dominance.py; tests/test_sweep.py checks shared rows against separate runs). "
        "The workload, its arrival order and the policy keys are prepared once.",
        "",
    ]
    # ---- 10,000-request timed run as a process
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.csv"
        _write_trace(trace)
        results = [_simulate_process(trace) for _ in range(REPEATS)]
    wall = statistics.median(r[0] for r in results)
    rss_mb = max(r[1] for r in results) / 1024
    summary = results[0][2]
    lines += [
        "### 10,000-request timed simulation (H100-SXM, Llama-3.1-8B, CSV trace)",
        "",
        "`python -m sim simulate --gpu H100-SXM --model Llama-3.1-8B --workload trace.csv`, "
        "Poisson arrivals at 20/s, lognormal lengths, vLLM's default limits for the GPU.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| wall time, whole process (median of 5) | {wall:.2f} s (target <= 3 s: "
        f"{'met' if wall <= 3 else 'not met'}) |",
        f"| steps simulated | {summary['num_steps']:,} ({summary['num_steps'] / wall:,.0f} per "
        "second of wall time) |",
        f"| requests finished | {summary['num_finished']:,} |",
        f"| peak memory (max RSS) | {rss_mb:.0f} MB |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(run())
