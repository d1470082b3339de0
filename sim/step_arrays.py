"""Per-step arrays of a window of steps, from per-request spans (sim/plan.py, sim/window.py).

Each turns "request i does something on steps a..b" into counts over the window's steps with
difference arrays and cumulative sums (no steps x requests mask): how many decoders need a new
block, how many decode and the KV they read, and the step-major order of their tokens.
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)


def boundary_counts(
    a: np.ndarray, b: np.ndarray, base: np.ndarray, bs: int, length: int
) -> np.ndarray:
    """Per step t < length: how many decoders need a new block at t. A decoder decodes on steps
    [a, b] and has computed base + (t - a) tokens before step t; it needs a block when that is a
    multiple of bs."""
    out = np.zeros(length, dtype=np.int64)
    if a.shape[0] == 0:
        return out
    t0 = a + (-base) % bs
    b = np.minimum(b, length - 1)
    keep = t0 <= b
    t0 = t0[keep]
    t_last = t0 + ((b[keep] - t0) // bs) * bs
    rows = -(-(length + bs) // bs)
    size = rows * bs
    d = np.bincount(t0, minlength=size)[:size] - np.bincount(t_last + bs, minlength=size)[:size]
    return np.cumsum(d.reshape(rows, bs), axis=0).ravel()[:length]


def step_major(first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(step, index) of every t in first[i]..last[i] for every i, step-major and by index
    within a step: the tokens of a window in the order the steps sample them. One sort of
    packed keys over the tokens, not a steps x requests mask (mostly empty in long windows)."""
    lens = np.maximum(last - first + 1, 0)
    total = int(lens.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    n = first.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), lens)
    offset = np.cumsum(lens) - lens
    keys = (first[rows] + np.arange(total, dtype=np.int64) - offset[rows]) * n + rows
    keys.sort(kind="stable")  # runs of consecutive steps: merged, not sorted afresh
    steps = keys // n
    return steps, keys - steps * n


def decoding(
    a: np.ndarray, b: np.ndarray, base: np.ndarray, T: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per step t < T, over requests that decode on steps a..b (none if b < a), having computed
    `base` tokens before step a: how many decode, and the KV tokens they read (base + t - a
    each). Two difference arrays and their cumulative sums; every plan and window prices its
    decodes with this."""
    dec = a <= b
    lo = np.minimum(a[dec], T)
    hi = np.minimum(b[dec] + 1, T)
    cnt = np.cumsum(np.bincount(lo, minlength=T + 1) - np.bincount(hi, minlength=T + 1))[:T]
    w = (base - a)[dec].astype(np.float64)
    d1 = np.bincount(lo, weights=w, minlength=T + 1)
    d1 -= np.bincount(hi, weights=w, minlength=T + 1)
    kv = np.rint(np.cumsum(d1)[:T]).astype(np.int64) + np.arange(T, dtype=np.int64) * cnt
    return cnt, kv


def running_kv_read(fin0: np.ndarray, comp0: np.ndarray, T: int) -> np.ndarray:
    """Per step t < T: the KV tokens the running requests read, sum of comp0 + t over those
    still decoding (fin0 >= t)."""
    return decoding(np.zeros(fin0.shape[0], dtype=np.int64), fin0, comp0, T)[1]
