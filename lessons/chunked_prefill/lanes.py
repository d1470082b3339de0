"""A lane of the chunked-prefill lesson: one timed run of the scenario, and what the lesson reads
off it (`measure`): its numbers, from sim.metrics and sim.cost, and what its charts draw, cut to
sizes a browser draws well: step bars (neighbours of one kind merged past MAX_STEP_BARS), token
ticks (at most one per pixel-sized bin), the animation's live worst-gap counter, and the GPU-use
step lines (steps whose use stays within USE_TOLERANCE_PCT merged).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.chunked_prefill.readout import DECODE, LaneView
from sim.cost import Deployment, factors_for, step_costs
from sim.metrics import inter_token_gaps
from sim.run import Run

FRAMES = 40  # animation frames, even in time over the window
USERS_SHOWN = 5  # streaming users drawn as rows in each lane
TICK_BINS = 400  # token ticks closer than window/TICK_BINS (about 2 px) are drawn as one
MAX_STEP_BARS = 400  # beyond this, consecutive steps of one kind are drawn as one bar
USE_TOLERANCE_PCT = 0.25
KINDS = 3
EPS_S = 1e-6  # a step ends "at" a time within a microsecond (float sums; early arrival)


def time_unit(span_s: float) -> tuple[str, float]:
    """The time axis unit for a window of `span_s` seconds: ms, or s beyond 5 s."""
    return ("s", 1.0) if span_s > 5.0 else ("ms", 1e3)


def users_shown(users: int) -> tuple[int, ...]:
    """Which users get a row: up to USERS_SHOWN, spread evenly from the first to the last."""
    picked = np.linspace(0, users - 1, min(USERS_SHOWN, users)).round().astype(np.int64)
    return tuple(int(u) for u in np.unique(picked))


def step_bars(
    kind: np.ndarray, start: np.ndarray, end: np.ndarray, steps: np.ndarray, merge: bool
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """(starts, ends) of the bars of each kind of step among `steps`; runs merged when `merge`."""
    kinds, starts, ends = kind[steps], start[steps], end[steps]
    if merge and steps.size:
        cut = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]])
        last = np.r_[cut[1:], steps.size] - 1
        kinds, starts, ends = kinds[cut], starts[cut], ends[last]
    return (
        tuple(starts[kinds == k] for k in range(KINDS)),
        tuple(ends[kinds == k] for k in range(KINDS)),
    )


def ticks(
    token_req: np.ndarray, token_s: np.ndarray, shown: tuple[int, ...], w0: float, w1: float
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Token ticks of the shown users in the window, one per pixel-sized bin at most:
    (times, rows, whether some were merged)."""
    m = np.isin(token_req, shown) & (token_s >= w0) & (token_s <= w1)
    req, t = token_req[m], token_s[m]
    row = np.searchsorted(np.asarray(shown), req)
    bins = np.floor((t - w0) / (w1 - w0) * TICK_BINS).astype(np.int64)
    _, keep = np.unique(row * (TICK_BINS + 1) + bins, return_index=True)
    keep.sort()
    return t[keep], row[keep], bool(keep.size < t.size)


def live_worst_gap(
    gap_s: np.ndarray, gap_end_s: np.ndarray, times_s: np.ndarray, since_s: float
) -> np.ndarray:
    """At each time t (ms): the longest wait between tokens any user has had since `since_s`.

    Counts the finished gaps that ended in [since_s, t] and the waits still open at t (t minus
    the start of a gap that spans t), so the counter climbs while a long step is running.
    `times_s` must be increasing.
    """
    gap_start_s = gap_end_s - gap_s
    keep = gap_end_s >= since_s
    order = np.argsort(gap_end_s[keep], kind="stable")
    ends, vals = gap_end_s[keep][order], gap_s[keep][order]
    done = np.zeros(times_s.shape)
    if vals.size:
        best = np.maximum.accumulate(vals)
        idx = np.searchsorted(ends, times_s, side="right") - 1
        done = np.where(idx >= 0, best[np.maximum(idx, 0)], 0.0)
    # Open waits: a gap [start, end) covers the frames in it; keep the earliest start per frame.
    lo = np.searchsorted(times_s, gap_start_s, side="left")
    hi = np.searchsorted(times_s, gap_end_s, side="left")
    counts = np.maximum(hi - lo, 0)
    earliest = np.full(times_s.shape, np.inf)
    if counts.sum():
        gap_of = np.repeat(np.arange(counts.size), counts)
        offsets = np.cumsum(counts) - counts
        frame = lo[gap_of] + np.arange(gap_of.size) - offsets[gap_of]
        np.minimum.at(earliest, frame, gap_start_s[gap_of])
    open_wait = np.where(np.isfinite(earliest), times_s - earliest, 0.0)
    return 1e3 * np.maximum(done, np.where(times_s >= since_s, open_wait, 0.0))


def step_line(
    first_start: float, step_end: np.ndarray, values: np.ndarray, tol: float = USE_TOLERANCE_PCT
) -> tuple[np.ndarray, np.ndarray]:
    """A per-step value as a step line (x: the first start, then each kept step's end; y: the
    value from that x on), merging runs of steps that stay within `tol` of the run's first."""
    ends, kept = [], []
    start = 0
    for i in range(1, values.size + 1):
        if i == values.size or abs(values[i] - values[start]) > tol:
            ends.append(step_end[i - 1])
            kept.append(values[start])
            start = i
    y = np.asarray(kept)
    return np.r_[first_start, ends], np.r_[y[:1], y]


@dataclass(frozen=True, eq=False)
class Lane:
    """One lane's timed run, its KV pool, and its clock from the long prompt's arrival."""

    run: Run
    pool_tokens: int
    fits: bool  # vLLM's pool holds the scenario (else the run was given enough blocks)
    start_s: np.ndarray  # per step
    end_s: np.ndarray
    kind: np.ndarray  # DECODE, CHUNK or WHOLE
    token_s: np.ndarray  # per sampled token
    ttft_ms: float
    prompt_steps: np.ndarray  # 0-based steps that read the prompt


def _users_gaps(lane: Lane, users: int) -> tuple[np.ndarray, np.ndarray]:
    """The streaming users' gaps between tokens (s, sim.metrics) and when each one ends."""
    req, gap = inter_token_gaps(lane.run.token_req, lane.token_s)
    order = np.argsort(lane.run.token_req, kind="stable")  # the same grouping, with the times
    by_req = lane.run.token_req[order]
    ends = lane.token_s[order][1:][by_req[1:] == by_req[:-1]]
    mine = req < users
    return gap[mine], ends[mine]


def _use(dep: Deployment, run: Run, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step: FLOP/s and bytes/s as shares of the datasheet peaks. The cost model's roofline
    sides are the step's FLOPs and bytes at the achievable rates; times the calibrated
    efficiencies, they are FLOPs and bytes over the peaks."""
    c = step_costs(
        dep,
        query_tokens=run.num_scheduled_tokens[steps],
        num_seqs=run.num_scheduled_seqs[steps],
        kv_read_tokens=run.kv_read_tokens[steps],
        attn_pairs=run.attn_pairs[steps],
    )
    f = factors_for(dep.gpu_spec)
    return c.compute_ms * f.flops_efficiency / c.step_ms, c.memory_ms * f.bw_efficiency / c.step_ms


@dataclass(frozen=True, eq=False)
class Measured:
    """One lane's numbers (ms, tokens, % of the datasheet peaks) and what its charts draw."""

    first_chunk: int  # prompt tokens in the first step that reads the prompt
    first_step_ms: float
    step_ms_max: float  # the prompt's steps
    step_ms_min: float
    step_tokens_max: int
    decode_ms: float  # median decode-only step in the window
    worst_gap_ms: float  # after the arrival
    mean_gap_ms: float  # from the arrival to the prompt's first token
    compute_prompt_pct: float
    bw_prompt_pct: float
    compute_decode_pct: float
    bw_decode_pct: float
    thinned: bool
    view: LaneView


def measure(
    lane: Lane,
    dep: Deployment,
    users: int,
    window: tuple[float, float],
    since_s: float,
    frames: np.ndarray,
    merge: bool,
) -> Measured:
    """Read one lane's numbers and chart arrays off its run: `users` stream (requests 0..users-1),
    the charts show `window` (s from the arrival) in `frames`, the live counter counts waits from
    `since_s` on (and only once every user has its first token: the steady stream), and
    neighbouring steps of one kind are merged into one bar when `merge`."""
    w0, w1 = window
    run = lane.run
    in_win = np.flatnonzero((lane.end_s > w0) & (lane.start_s < w1))
    gap, end = _users_gaps(lane, users)
    ttft_s = lane.ttft_ms / 1e3
    after = (end > EPS_S) & (end <= w1 + EPS_S)
    while_prompt = after & (end <= ttft_s + EPS_S)
    ps = lane.prompt_steps
    compute, bandwidth = _use(dep, run, in_win)
    ms = run.step_ms[in_win]
    is_prompt = lane.kind[in_win] != DECODE

    def share(values: np.ndarray, rows: np.ndarray) -> float:
        return float(100 * np.average(values[rows], weights=ms[rows]))

    tick_s, tick_row, thinned = ticks(run.token_req, lane.token_s, users_shown(users), w0, w1)
    streaming = float(lane.end_s[int(run.first_token_step[:users].max()) - 1]) + EPS_S
    starts, ends = step_bars(lane.kind, lane.start_s, lane.end_s, in_win, merge)
    x0 = float(lane.start_s[in_win[0]])
    view = LaneView(
        starts,
        ends,
        tick_s,
        tick_row,
        ttft_s,
        live_worst_gap(gap, end, frames, max(since_s, streaming)),
        *step_line(x0, lane.end_s[in_win], 100 * compute),
        *step_line(x0, lane.end_s[in_win], 100 * bandwidth),
    )
    return Measured(
        first_chunk=int(run.num_scheduled_tokens[ps[0]]) - (int(run.num_scheduled_seqs[ps[0]]) - 1),
        first_step_ms=float(run.step_ms[ps[0]]),
        step_ms_max=float(run.step_ms[ps].max()),
        step_ms_min=float(run.step_ms[ps].min()),
        step_tokens_max=int(run.num_scheduled_tokens[ps].max()),
        decode_ms=float(np.median(ms[~is_prompt])),
        worst_gap_ms=float(gap[after].max() * 1e3),
        mean_gap_ms=float(gap[while_prompt].mean() * 1e3),
        compute_prompt_pct=share(compute, is_prompt),
        bw_prompt_pct=share(bandwidth, is_prompt),
        compute_decode_pct=share(compute, ~is_prompt),
        bw_decode_pct=share(bandwidth, ~is_prompt),
        thinned=thinned,
        view=view,
    )
