"""Overload runs (issue 11): one timed run of 5,000 requests above capacity, in process.

Target: under 0.5 s. The workload is Poisson at 1.5x the deployment's capacity (sim.overload,
computed on the same requests), lognormal prompts and outputs, vLLM's default limits for the GPU,
prefix caching off; then the same run with each of vLLM's admission limits, and the policies
lesson's five-policy comparison (lessons/policies: 150 requests each, prefix caching on), the
overload lesson's sweep (cold, and the load slider's rerun) and the watch lesson's dashboards.
Medians of 5 (3 for the lessons), caches cleared.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from sim.generators import WorkloadSpec
from sim.overload import capacity_req_per_s, poisson_at
from sim.timed import config_for, deployment, run_timed

REPEATS = 5
N = 5_000
SPEC = WorkloadSpec(
    "poisson", N, 1.0, prompt="lognormal:800:0.8", output="lognormal:200:0.8", seed=3
)


def _median_s(fn, repeats: int = REPEATS) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _overload_rows() -> list[str]:
    rows = []
    for gpu in ("H100-SXM", "L4"):
        dep = deployment(gpu, "Llama-3.1-8B")
        base = config_for(dep)
        sample = dataclasses.replace(SPEC, n=500)
        cap = capacity_req_per_s(base, poisson_at(sample, 1.0), dep)
        wl = poisson_at(SPEC, 1.5 * cap)
        for name, limits in (
            ("no limits", {}),
            (
                "max_num_queued_reqs = 2 x max_num_seqs",
                {"max_num_queued_reqs": 2 * base.max_num_seqs},
            ),
            ("max_num_queued_tokens = 64k", {"max_num_queued_tokens": 64_000}),
        ):
            config = dataclasses.replace(base, **limits)
            seconds, run = _median_s(lambda c=config, w=wl, d=dep: run_timed(c, w, d))
            refused = run.rejected_requests["total"]
            met = "met" if seconds < 0.5 else "not met"
            rows.append(
                f"| {gpu} | {cap:.2f} | {name} | {run.num_steps:,} | {refused:,} | "
                f"{seconds:.2f} | {met} |"
            )
    return rows


def _lesson_rows() -> list[str]:
    from lessons.policies import lesson

    rows = []
    for label, p in (
        ("opening (L4, 120% load)", lesson.Params()),
        ("H100-SXM, 150% load", lesson.Params(gpu="H100-SXM", load_pct=150)),
    ):

        def fresh(p=p):
            lesson.runs_for.cache_clear()
            lesson._capacity.cache_clear()
            return lesson.build(p)

        seconds, r = _median_s(fresh, 3)
        steps = sum(
            run.num_steps
            for run in lesson.runs_for(
                p.gpu, p.model, p.tp, p.dtype, p.load_pct, p.interactive_pct, p.heavy_pct, True
            ).runs.values()
        )
        rows.append(f"| {label} | {r.requests} | {steps:,} | {seconds:.2f} |")
    lesson.runs_for.cache_clear()  # bench_pages times the page's first visit cold
    lesson._capacity.cache_clear()
    return rows


def _clear_overload() -> None:
    from lessons.overload import lesson

    for fn in (lesson.probe, lesson.run_at, lesson.sweep, lesson.signals_at, lesson.gateway):
        fn.cache_clear()


def _overload_lesson_rows() -> list[str]:
    """The lesson "Too many requests": a cold build (the probe, 24 sweep runs and the gateway's
    two) and a rerun at a load not shown yet (every run cached: the load slider's cost)."""
    from lessons.overload import lesson

    rows = []
    for label, gpu in (("opening (L4)", "L4"), ("H100-SXM", "H100-SXM")):
        p = dataclasses.replace(lesson.Params(), gpu=gpu)

        def cold(p=p):
            _clear_overload()
            return lesson.build(p)

        seconds, r = _median_s(cold, 3)
        others = [load for load in lesson.LOADS if load != p.load_pct]
        reruns = []
        for load in others:
            t0 = time.perf_counter()
            lesson.build(dataclasses.replace(p, load_pct=load))
            reruns.append(time.perf_counter() - t0)
        rows.append(
            f"| {label} | {r.requests:,} | {seconds:.2f} | {statistics.median(reruns) * 1e3:.1f} |"
        )
    _clear_overload()  # bench_pages times the page's first visit cold
    return rows


def _watch_rows() -> list[str]:
    """The lesson "What to watch": a cold build of each dashboard (its run and its fix)."""
    from lessons.watch import lesson

    rows = []
    for preset in lesson.PRESETS:
        p = dataclasses.replace(lesson.Params(), preset=preset)

        def cold(p=p):
            for fn in (lesson.setup, lesson.run_for, lesson._sized):
                fn.cache_clear()
            return lesson.build(p)

        seconds, r = _median_s(cold, 3)
        rows.append(f"| {lesson.preset_name(preset)} ({preset}) | {r.requests:,} | {seconds:.2f} |")
    for fn in (lesson.setup, lesson.run_for, lesson._sized):
        fn.cache_clear()
    return rows


def run() -> str:
    lines = [
        "## Overload: 5,000 requests above capacity (sim/overload.py)",
        "",
        "One timed run, in process, of 5,000 requests arriving (Poisson) at 1.5x the capacity "
        "(computed from 500 of the same requests queued at once), lognormal prompts (median 800) "
        "and outputs (median 200), vLLM's default limits, prefix caching off. Median of 5. "
        "Target: under 0.5 s.",
        "",
        "| GPU | capacity (req/s) | admission | steps | refused | median (s) | target |",
        "|---|---:|---|---:|---:|---:|---|",
        *_overload_rows(),
        "",
        "### The policies lesson's five runs (lessons/policies)",
        "",
        "`lesson.build` with its caches cleared: the capacity run and five policies' runs of 150 "
        "requests with prefix caching on (the block pool's Python path). Median of 3.",
        "",
        "| setting | requests | steps (five runs) | build (s) |",
        "|---|---:|---:|---:|",
        *_lesson_rows(),
        "",
        "### The overload lesson (lessons/overload)",
        "",
        "`lesson.build` with its caches cleared (median of 3): the capacity probe, four sweeps of "
        "six loads (FCFS and SJF without a limit, the two sized token limits) and the gateway's "
        "two runs; then a rerun at each other load with the runs cached (median): what moving "
        "the load slider costs. Target for the rerun: under 150 ms.",
        "",
        "| setting | requests per run | cold build (s) | load slider rerun (ms) |",
        "|---|---:|---:|---:|",
        *_overload_lesson_rows(),
        "",
        "### The dashboards of the watch lesson (lessons/watch)",
        "",
        "`lesson.build` of each dashboard with its caches cleared (H100-SXM, the opening "
        "setting): the capacity probe, the run and the run with the fix. Median of 3.",
        "",
        "| dashboard | requests | cold build (s) |",
        "|---|---:|---:|",
        *_watch_rows(),
    ]
    return "\n".join(lines)
