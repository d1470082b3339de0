"""From a detailed run to what each frame of the step loop draws (`readout.Replay`).

The scheduled tokens are sorted into decode, prompt chunk and recompute by the budget-fill
classification (lessons.kit.timeline). The KV blocks a request holds follow from its computed
tokens: without prefix caching it holds cdiv(computed, block_size) blocks; a preemption frees
them all (its computed count restarts from 0); a finish frees them at the end of the step in
which the engine processes the output that carries the last token.

A frame shows the state at the end of one turn of the loop. The synchronous scheduler processes
step k's output in turn k; async scheduling (SCHEDULER.md g) processes it in turn k + 1, after it
has scheduled step k + 1. So under async a request is seen to finish (`finished`, `done`), leaves
the running list and gives its blocks back one step after the step that sampled its last token,
and `blocks_after` of step k is the count the run measured for step k - 1 (async records each
step's count when its output is processed, after the next schedule()). A step of an async run
may schedule nothing (the last one always does): it only processes the output of the step before.
"""

from __future__ import annotations

import numpy as np

from lessons.kit.timeline import DECODE, classify
from lessons.step_loop.readout import PerStep, Replay
from sim.kv import cdiv
from sim.metrics import token_times_s
from sim.run import Run

PER_STEP = (
    "waiting",
    "running",
    "done",
    "arrived",
    "admitted",
    "preempted",
    "continuing",
    "sampled",
    "finished",
)


def _seen(run: Run) -> list[list[int]]:
    """The requests seen to finish in each turn of the loop: those whose last token was sampled
    in this step (synchronous) or in the step before (async: its output comes one turn later)."""
    rows = [d.finished.tolist() for d in run.detail or []]
    return [[], *rows[:-1]] if run.config.async_scheduling else rows


def _blocks_and_streams(run: Run, seen: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Blocks each request holds after each schedule(), and its output tokens after each step."""
    n = run.workload.num_requests
    computed = np.zeros(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    blocks = np.zeros((run.num_steps, n), dtype=np.int64)
    streamed = np.zeros((run.num_steps, n), dtype=np.int64)
    for k, d in enumerate(run.detail or []):
        computed[d.preempted] = 0
        computed[d.scheduled_req] += d.scheduled_tokens
        live = np.zeros(n, dtype=bool)
        live[d.running] = True
        blocks[k] = np.where(live, cdiv(computed, run.config.block_size), 0)
        out[d.sampled] += 1
        streamed[k] = out
        computed[seen[k]] = 0  # its blocks go back once its last output is processed
    return blocks, streamed


def _blocks_after(run: Run) -> np.ndarray:
    """Blocks in use at the end of each turn: after its schedule() and the output it processes."""
    after = np.array([d.kv_blocks_used for d in run.detail or []])
    if run.config.async_scheduling and after.size:
        first = run.detail[0].kv_blocks_used_after_schedule  # turn 1 processes no output
        after = np.concatenate([[first], after[:-1]])
    return after


def _per_step(rows: list[list[int]]) -> PerStep:
    return tuple(tuple(int(q) for q in row) for row in rows)


def replay_of(run: Run, names: tuple[str, ...]) -> Replay:
    """Per-step state of a run recorded with detail (timed: its clock is the run's own)."""
    if run.detail is None:
        raise ValueError("the step loop needs a run recorded with record_detail=True")
    fill = classify(run)
    n, steps = run.workload.num_requests, run.num_steps
    tokens = np.zeros((steps, n), dtype=np.int64)
    kinds = np.full((steps, n), -1, dtype=np.int64)
    for k, items in enumerate(fill.items):
        for q, t, kind in items:
            tokens[k, q] += t
            kinds[k, q] = kind
    seen = _seen(run)
    held, streamed = _blocks_and_streams(run, seen)
    lag = int(run.config.async_scheduling)
    finish = np.asarray(run.finish_step)
    rows: dict[str, list[list[int]]] = {key: [] for key in PER_STEP}
    for k, d in enumerate(run.detail):
        done_now = set(seen[k])
        entered = set(d.new.tolist()) | set(d.resumed.tolist())
        rows["waiting"].append(d.waiting.tolist())
        rows["running"].append([q for q in d.running.tolist() if q not in done_now])
        rows["done"].append([q for q in range(n) if 0 < finish[q] <= k + 1 - lag])
        rows["arrived"].append(d.arrived.tolist())
        rows["admitted"].append([q for q in d.running.tolist() if q in entered])
        rows["preempted"].append(d.preempted.tolist())
        rows["continuing"].append(
            [q for q, _, kind in fill.items[k] if kind != DECODE and q not in entered]
        )
        rows["sampled"].append(d.sampled.tolist())
        rows["finished"].append(seen[k])
    ends_s = token_times_s(np.arange(1, steps + 1), run.step_start_s, run.step_ms)
    return Replay(
        names=tuple(names),
        outputs=tuple(int(o) for o in run.workload.output_tokens),
        tokens=tokens,
        kinds=kinds,
        used=fill.used,
        seqs=np.asarray(run.num_scheduled_seqs),
        held=held,
        streamed=streamed,
        blocks_used=np.array([d.kv_blocks_used_after_schedule for d in run.detail]),
        blocks_after=_blocks_after(run),
        step_ms=np.asarray(run.step_ms, dtype=np.float64),
        clock_ms=ends_s * 1e3,
        **{key: _per_step(value) for key, value in rows.items()},
    )
