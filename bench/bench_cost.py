"""Benchmark: the cost model on 1,000,000 steps in one vectorized `step_costs` call."""

from __future__ import annotations

import time

import numpy as np

from sim.cost import Deployment, step_costs

N_STEPS = 1_000_000
REPEATS = 5
CASES = (
    Deployment("H100-SXM", "Llama-3.1-8B"),
    Deployment("A100-80GB", "Llama-3.1-70B", tp=4),
    Deployment("H100-SXM", "Mixtral-8x7B", tp=2),
)


def _steps(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    seqs = rng.integers(1, 257, n).astype(np.float64)
    prefill = np.where(rng.random(n) < 0.2, rng.integers(1, 2049, n), 0)
    q = seqs + prefill
    kv = seqs * rng.integers(0, 4096, n)
    return {"query_tokens": q, "num_seqs": seqs, "kv_read_tokens": kv}


def run() -> str:
    """Markdown section: median of REPEATS timed calls per deployment, and steps per second."""
    steps = _steps(N_STEPS)
    lines = [
        "## Cost model: 1,000,000 steps in one vectorized call",
        "",
        f"Median of {REPEATS} calls of `sim.cost.step_costs` on {N_STEPS:,} random steps "
        "(1-256 sequences, 20% with a prefill chunk of up to 2,048 tokens).",
        "",
        "| deployment | median s | steps/s |",
        "|---|---|---|",
    ]
    for dep in CASES:
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            step_costs(dep, **steps)
            times.append(time.perf_counter() - t0)
        med = float(np.median(times))
        lines.append(f"| {dep.gpu} {dep.model} TP{dep.tp} | {med:.3f} | {N_STEPS / med:,.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run())
