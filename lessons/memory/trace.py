"""From a run traced block by block (sim.traced) to what the memory lesson draws and quotes.

`frames_of` picks the steps the grid animation shows (every step of a short run; in a long one an
even sample that always keeps each step with a preemption, the step before it and each resumption)
and, per step, the readouts vLLM's metrics would give: running and waiting requests, KV cache
usage, `vllm:num_preemptions` so far and the prefix-cache hit rate so far as vLLM counts it
(tokens found per token looked up, by requests never preempted, at every lookup), beside the
same rate for the preempted requests' lookups, which vLLM keeps apart. `victims_of` prices every
preemption from the run: the tokens the victim had computed, when it came back, what the cache
gave back, what it computed again, and the steps and milliseconds until its cache was rebuilt.

A frame is the state at the end of one turn of the loop (sim/blocks.py); preemptions happen in
the turn's schedule(), so the victim's blocks are empty in the frame of the step that preempted it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lessons.kit.anim import sample_steps
from lessons.kit.words import id_runs, join
from lessons.memory.readout import StepReadout
from sim.blocks import BlockTrace
from sim.run import Run


@dataclass(frozen=True, eq=False)
class Victims:
    """One row per preemption, in the order they happened (arrays of equal length)."""

    request: np.ndarray  # request index
    step: np.ndarray  # the step whose schedule() preempted it
    lost_tokens: np.ndarray  # tokens it had computed: its blocks, all freed
    resume_step: np.ndarray  # the step it was admitted again (0: it never was)
    hit_tokens: np.ndarray  # of those, found in the prefix cache when it came back
    recomputed_tokens: np.ndarray  # computed a second time: lost - hits
    rebuilt_step: np.ndarray  # the first step by whose end it had computed them all again
    lost_steps: np.ndarray  # rebuilt_step - step
    lost_ms: np.ndarray  # the clock from the end of `step` to the end of `rebuilt_step`
    before_first_token: np.ndarray  # it had not produced its first token yet
    names: tuple[str, ...]
    total_scheduled: int  # every token computed in the run

    @property
    def count(self) -> int:
        return int(self.request.shape[0])

    def summary(self) -> dict:
        """The Readout fields about preemptions."""
        n = self.count
        recomputed = int(self.recomputed_tokens.sum())
        first = int(self.request[0]) if n else -1
        return {
            "preemptions": n,
            "preempted": n > 0,
            "not_preempted": n == 0,
            "first_preempt_step": int(self.step[0]) if n else 0,
            "first_victim": self.names[first] if n else "",
            "first_victim_batch": bool(n) and self.names[first].startswith("B"),
            "lost_tokens": int(self.lost_tokens.sum()),
            "hit_tokens_back": int(self.hit_tokens.sum()),
            "recomputed_tokens": recomputed,
            "recomputed_share_pct": 100.0 * recomputed / max(self.total_scheduled, 1),
            "lost_steps_max": int(self.lost_steps.max()) if n else 0,
            "lost_s_max": float(self.lost_ms.max()) / 1e3 if n else 0.0,
            "victims_delayed_first_token": int(self.before_first_token.sum()),
        }


def victims_of(run: Run) -> Victims:
    """Every preemption of a traced run, priced (see Victims)."""
    trace: BlockTrace = run.blocks
    comp = trace.num_computed_tokens
    names = run.workload.request_ids
    ends_ms = (run.step_start_s + run.step_ms / 1e3) * 1e3
    rows = []
    for d in run.detail:
        for v in d.preempted.tolist():
            rows.append((v, d.step))
    request = np.array([v for v, _ in rows], dtype=np.int64)
    step = np.array([s for _, s in rows], dtype=np.int64)
    n = len(rows)
    lost = np.zeros(n, dtype=np.int64)
    resume = np.zeros(n, dtype=np.int64)
    hits = np.zeros(n, dtype=np.int64)
    rebuilt = np.zeros(n, dtype=np.int64)
    resumed_at = {}
    for d in run.detail:
        for r in d.resumed.tolist():
            resumed_at.setdefault(r, []).append(d.step)
    for i, (v, s) in enumerate(rows):
        lost[i] = comp[s - 2, v] if s >= 2 else 0
        later = [a for a in resumed_at.get(v, []) if a > s]
        if not later:
            continue
        a = later[0]
        resume[i] = a
        d = run.detail[a - 1]
        scheduled = dict(zip(d.scheduled_req.tolist(), d.scheduled_tokens.tolist(), strict=True))
        hits[i] = max(int(comp[a - 1, v]) - scheduled.get(v, 0), 0)
        back = np.flatnonzero(comp[a - 1 :, v] >= lost[i])
        rebuilt[i] = a + int(back[0]) if back.size else 0
    done = rebuilt > 0
    lost_steps = np.where(done, rebuilt - step, 0)
    lost_ms = np.where(done, ends_ms[np.maximum(rebuilt, 1) - 1] - ends_ms[step - 1], 0.0)
    first_token = np.asarray(run.first_token_step)
    return Victims(
        request=request,
        step=step,
        lost_tokens=lost,
        resume_step=resume,
        hit_tokens=hits,
        recomputed_tokens=np.maximum(lost - hits, 0),
        rebuilt_step=rebuilt,
        lost_steps=lost_steps,
        lost_ms=lost_ms,
        before_first_token=first_token[request] > step if n else np.zeros(0, dtype=bool),
        names=tuple(names),
        total_scheduled=int(np.sum(run.num_scheduled_tokens)),
    )


def _essential(run: Run) -> np.ndarray:
    """0-based steps every animation keeps: each preemption, the step before, each resumption."""
    keep = set()
    for d in run.detail:
        if d.preempted.size:
            keep.update((d.step - 2, d.step - 1))
        if d.resumed.size:
            keep.add(d.step - 1)
    return np.array(sorted(k for k in keep if 0 <= k < run.num_steps), dtype=np.int64)


def pick_steps(run: Run, max_frames: int) -> np.ndarray:
    """0-based steps to draw: all, or the essential ones plus steps a round number apart (the
    kit's sample_steps, with the first and the last)."""
    n = run.num_steps
    if n <= max_frames:
        return np.arange(n)
    must = _essential(run)
    if must.size > max_frames - 2:  # too many events: keep an even share of them
        must = must[np.linspace(0, must.size - 1, max_frames - 2).round().astype(int)]
    even = sample_steps(n, max_frames - must.size)  # a round number of steps apart
    return np.union1d(must, even)  # at most must.size + even.size = max_frames steps


@dataclass(frozen=True, eq=False)
class Frames:
    """What the grid animation and the readouts beside it show, per step and per drawn frame."""

    steps: np.ndarray  # 0-based steps drawn, one per frame
    owners: np.ndarray  # (frames, blocks): sim.blocks.owners of each drawn step
    freed_by_preemption: tuple[np.ndarray, ...]  # per frame: blocks a victim lost in that step
    running: np.ndarray  # per step: the running list once the turn's output is processed
    waiting: np.ndarray  # per step: the waiting queue (output processing leaves it as it is)
    usage_pct: np.ndarray  # per step: KV cache usage at the end of the turn
    preemptions: np.ndarray  # per step: vllm:num_preemptions so far
    hit_rate_pct: np.ndarray  # per step: vLLM's prefix-cache hit rate so far (NaN: no lookup)
    preempted_hit_pct: np.ndarray  # per step: the same for preempted requests' lookups
    waiting_order: tuple[tuple[int, ...], ...]  # per step: the queue, in order
    preempted: tuple[tuple[int, ...], ...]
    resumed: tuple[tuple[int, ...], ...]
    finished: tuple[tuple[int, ...], ...]  # seen to finish this turn (blocks freed)
    clock_ms: np.ndarray  # per step: the clock at the end of the step
    names: tuple[str, ...]
    trace: BlockTrace
    grid_blocks: int
    peak_usage_pct: float
    peak_step: int  # 1-based
    peak_slack_slots: int  # at the peak: slots in partly filled blocks, unused
    peak_tokens: int  # at the peak: tokens held
    peak_requests: int  # at the peak: requests holding blocks

    def frame_of(self, step: int) -> int:
        return max(int(np.searchsorted(self.steps + 1, int(step), side="right")) - 1, 0)

    def summary(self) -> dict:
        return {
            "peak_usage_pct": self.peak_usage_pct,
            "peak_step": self.peak_step,
            "peak_slack_slots": self.peak_slack_slots,
            "peak_tokens": self.peak_tokens,
            "peak_requests": self.peak_requests,
            "frame_count": int(self.steps.shape[0]),
            "sampled": bool(self.steps.shape[0] < self.running.shape[0]),
            "total_ms": float(self.clock_ms[-1] - self.clock_ms[0]) if self.clock_ms.size else 0,
        }

    def table(self, k: int) -> list[tuple[int, np.ndarray]]:
        """(request, its block ids) for every request holding blocks at the end of step k + 1."""
        lens = self.trace.table_lens[k]
        return [(int(r), self.trace.table(k, int(r))) for r in np.flatnonzero(lens)]

    def at(self, step: int, victims: Victims, tables: bool = True) -> StepReadout:
        """Step `step`'s readouts; `tables=False`: without the block tables (`tables=()`)."""
        k = step - 1
        names = self.names
        comp = self.trace.num_computed_tokens[k]
        rows = tuple(
            (names[r], int(comp[r]), int(ids.size), id_runs(ids.tolist()))
            for r, ids in (self.table(k) if tables else ())
        )
        here = victims.step == step
        back = victims.resume_step == step
        rate, back_rate = self.hit_rate_pct[k], self.preempted_hit_pct[k]
        return StepReadout(
            step=step,
            num_steps=int(self.running.shape[0]),
            running=int(self.running[k]),
            waiting=int(self.waiting[k]),
            usage_pct=float(self.usage_pct[k]),
            preemptions=int(self.preemptions[k]),
            hit_rate_pct=0.0 if np.isnan(rate) else float(rate),
            looked_up=not np.isnan(rate),
            preempted_hit_pct=0.0 if np.isnan(back_rate) else float(back_rate),
            victims_looked_up=not np.isnan(back_rate),
            preempted_now=bool(here.any()),
            preempted_names=join([names[int(r)] for r in victims.request[here]]),
            freed_blocks=int(self.trace.table_lens[k - 1, victims.request[here]].sum()) if k else 0,
            lost_now=int(victims.lost_tokens[here].sum()),
            queue_head=names[self.waiting_order[k][0]] if self.waiting_order[k] else "",
            resumed_now=bool(back.any()),
            resumed_names=join([names[int(r)] for r in victims.request[back]]),
            recompute_now=int(victims.recomputed_tokens[back].sum()),
            hits_now=int(victims.hit_tokens[back].sum()),
            finished_now=bool(self.finished[k]),
            finished_names=join([names[r] for r in self.finished[k]]),
            clock_ms=float(self.clock_ms[k]),
            tables=rows,
        )


def _seen_finished(run: Run) -> list[tuple[int, ...]]:
    rows = [tuple(d.finished.tolist()) for d in run.detail]
    return [(), *rows[:-1]] if run.config.async_scheduling else rows


def running_after_output(run: Run, seen: Sequence[tuple[int, ...]]) -> np.ndarray:
    """Per step: the running requests as vLLM counts them for its metrics, once the turn's
    output is processed (the scheduler's stats are made then): the running list schedule()
    left, less the requests seen to finish in that turn."""
    return np.array(
        [
            sum(1 for q in d.running.tolist() if q not in set(done))
            for d, done in zip(run.detail, seen, strict=True)
        ],
        dtype=np.int64,
    )


def lost_blocks(trace: BlockTrace, k: int, victims: Sequence[int]) -> np.ndarray:
    """The blocks the victims preempted in step k + 1 held before it (empty for none)."""
    lost = [trace.table(k - 1, int(v)) for v in victims] if k else []
    return np.concatenate(lost) if lost else np.zeros(0, dtype=np.int32)


def frames_of(run: Run, max_frames: int) -> Frames:
    """The frames and per-step readouts of a traced run (see Frames)."""
    trace: BlockTrace = run.blocks
    steps = pick_steps(run, max_frames)
    owners = np.stack([trace.owners(int(k)) for k in steps]).astype(np.int16)
    freed = [lost_blocks(trace, k, run.detail[k].preempted.tolist()) for k in steps.tolist()]
    used = trace.used()
    usage = 100.0 * used / (trace.num_gpu_blocks - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        q, h = trace.prefix_queries, trace.prefix_hits
        rate = np.where(q > 0, 100.0 * h / q, np.nan)
        q, h = trace.preempted_queries, trace.preempted_hits
        back = np.where(q > 0, 100.0 * h / q, np.nan)
    peak = int(np.argmax(used))
    seen = _seen_finished(run)
    comp = trace.num_computed_tokens[peak]
    lens = trace.table_lens[peak]
    return Frames(
        steps=steps,
        owners=owners,
        freed_by_preemption=tuple(freed),
        running=running_after_output(run, seen),
        waiting=np.asarray(run.num_waiting),
        usage_pct=usage,
        preemptions=np.cumsum(run.num_preempted),
        hit_rate_pct=rate,
        preempted_hit_pct=back,
        waiting_order=tuple(tuple(d.waiting.tolist()) for d in run.detail),
        preempted=tuple(tuple(d.preempted.tolist()) for d in run.detail),
        resumed=tuple(tuple(d.resumed.tolist()) for d in run.detail),
        finished=tuple(seen),
        clock_ms=(run.step_start_s + run.step_ms / 1e3) * 1e3,
        names=tuple(run.workload.request_ids),
        trace=trace,
        grid_blocks=trace.num_gpu_blocks,
        peak_usage_pct=float(usage[peak]),
        peak_step=peak + 1,
        peak_slack_slots=int((lens * trace.block_size - comp).sum()),
        peak_tokens=int(comp.sum()),
        peak_requests=int(np.count_nonzero(lens)),
    )
