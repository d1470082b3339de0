"""The memory lesson's block grid: what one selection costs to compute and to send.

Issue 10 asks that the grid stay smooth at 1,000 blocks or more and that the payload per frame
be measured. For the opening selection (1,970 blocks) and a 4,000-block pool: the traced run and
the grid's figures (lesson.build), the comparison runs (lesson.comparison), building the animated
figure, serializing it as the page does (Plotly's JSON, with orjson) and its size per frame.
Medians of REPEATS fresh computations (the lesson's caches cleared each time).
"""

from __future__ import annotations

import statistics
import time

import plotly.io as pio

from lessons.memory import figures, lesson
from ui.charts import _Spec

REPEATS = 5
CASES = [
    ("opening (L4, gpu_memory_utilization 90%)", lesson.Params()),
    ("pool set to 4,000 blocks", lesson.Params(pool_from="blocks", num_gpu_blocks=4000, rate=16)),
]


def _clear() -> None:
    lesson._traced_run.cache_clear()
    lesson._comparison.cache_clear()
    lesson.workload.cache_clear()
    figures._pool.cache_clear()


def _one(p: lesson.Params) -> dict:
    _clear()
    t0 = time.perf_counter()
    r = lesson.build(p)
    t1 = time.perf_counter()
    lesson.comparison(p)
    t2 = time.perf_counter()
    fig = figures.pool(r, 1)
    t3 = time.perf_counter()
    payload = pio.to_json(_Spec(fig), validate=False)
    t4 = time.perf_counter()
    return {
        "blocks": r.num_gpu_blocks,
        "frames": len(fig["frames"]),
        "steps": r.num_steps,
        "build": (t1 - t0) * 1e3,
        "compare": (t2 - t1) * 1e3,
        "figure": (t3 - t2) * 1e3,
        "json": (t4 - t3) * 1e3,
        "bytes": len(payload),
    }


def run() -> str:
    rows = []
    for name, p in CASES:
        runs = [_one(p) for _ in range(REPEATS)]

        def med(key: str, runs=runs) -> float:
            return statistics.median(r[key] for r in runs)

        first = runs[0]
        rows.append(
            f"| {name} | {first['blocks']:,} | {first['steps']:,} | {first['frames']} | "
            f"{med('build'):.0f} | {med('compare'):.0f} | {med('figure'):.0f} | "
            f"{med('json'):.0f} | {first['bytes'] / 1e6:.2f} | "
            f"{first['bytes'] / first['frames'] / 1e3:.1f} |"
        )
    return "\n".join(
        [
            "## The memory lesson's block grid (lessons/memory)",
            "",
            f"Median of {REPEATS} fresh computations each (caches cleared). *build*: the traced "
            "run, its frames and victims; *comparisons*: the runs of the other policy, prefix "
            "caching, scheduling mode and the fixes; *figure*: the animated grid; *JSON*: the "
            "figure serialized as `st.plotly_chart` sends it.",
            "",
            "| selection | KV blocks | steps | frames | build (ms) | comparisons (ms) | "
            "figure (ms) | JSON (ms) | payload (MB) | per frame (kB) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
