"""Your own trace (issue 12): a 100,000-request CSV trace read and simulated in process, as the
playground runs it (lessons/trace_lab: read_trace_csv, then one side's timed run, the
synchronous scheduler, vLLM's defaults for the GPU). Target: under 10 s. Peak memory is the
process's max RSS after the run (it includes NumPy, pandas and the trace). Median of 3."""

from __future__ import annotations

import io
import resource
import statistics
import time

N = 100_000
RATE_PER_S = 12.0
REPEATS = 3


def run() -> str:
    from lessons.trace_lab import tool
    from sim.generators import poisson_workload
    from sim.trace import write_trace_csv

    workload = poisson_workload(
        N, RATE_PER_S, prompt="lognormal:800:0.8", output="lognormal:200:0.8", seed=5,
        prompt_max=32_000,
    )  # fmt: skip
    buffer = io.StringIO()
    write_trace_csv(workload, buffer)
    data = buffer.getvalue().encode("utf-8")
    p = tool.Params()
    read_s, run_s, steps = [], [], 0
    for _ in range(REPEATS):
        tool._CACHE.clear()
        t0 = time.perf_counter()
        trace = tool.load(data, "trace.csv", tool.max_model_len(p))
        t1 = time.perf_counter()
        side = tool.run_side(p, "a", trace)
        t2 = time.perf_counter()
        read_s.append(t1 - t0)
        run_s.append(t2 - t1)
        steps = side.summary["num_steps"]
    total = statistics.median(r + s for r, s in zip(read_s, run_s, strict=True))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    met = "met" if total < 10 else "not met"
    return "\n".join(
        [
            "## Your own trace: 100,000 requests (lessons/trace_lab)",
            "",
            f"A CSV trace of {N:,} requests (Poisson at {RATE_PER_S:g} per second, lognormal "
            f"prompts of median 800 tokens and answers of median 200; {len(data) / 1e6:.1f} MB) "
            "read and run as the playground's configuration A does (H100-SXM, Llama-3.1-8B, "
            f"vLLM's defaults). Median of {REPEATS}.",
            "",
            "| read (s) | simulate (s) | total (s) | steps | peak memory (MB) | target <= 10 s |",
            "|---:|---:|---:|---:|---:|---|",
            f"| {statistics.median(read_s):.2f} | {statistics.median(run_s):.2f} | {total:.2f} | "
            f"{steps:,} | {rss_mb:,.0f} | {met} |",
        ]
    )
