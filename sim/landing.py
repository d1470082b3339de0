"""Where a timed window's arrivals land, computed step by step with the step times exact.

A timed window (sim/window.py) must know in which step each arrival is admitted, and the step
times that decide it depend on the admissions. When the waiting queue is empty and every arrival
is admitted in the step it lands in (the immediate story), one pass over the steps settles it: a
step's shape is the running requests' decodes (known for the whole window) plus, for each
arrival landed so far, its prompt in its landing step and one decode a step after that; the
pass prices each step with the cost model in Python numbers (`sim.cost.step_pricer`), so the
next step's start is exact, and lands the arrivals that came by then. The window's plan then
checks the story (budget, max_num_seqs, blocks) and prices it in one vectorized call; the
landings agree with it unless the story breaks, where the window ends anyway.

This is a loop over steps (with the arrivals it lands), not over requests inside a step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Price = Callable[[int, int, int, int], float]


def landings(
    price: Price,
    now_s: float,
    decoding: np.ndarray,
    kv_read: np.ndarray,
    arrival_s: np.ndarray,
    prompt_tokens: np.ndarray,
    remaining: np.ndarray,
    max_tokens: int,
) -> np.ndarray:
    """The landing step (0-based, within the T = len(decoding) steps) of each arrival, in
    order, for the arrivals that land before step T or before a step would hold more than
    max_tokens tokens (the plan breaks there).

    decoding[t], kv_read[t]: the running requests' decodes and the KV tokens they read in step
    t; arrival_s: sorted arrival times; prompt_tokens, remaining: each arrival's prompt and the
    tokens it will sample (it samples its first in its landing step, then decodes one a step)."""
    T = int(decoding.shape[0])
    dec_l, kv_l = decoding.tolist(), kv_read.tolist()
    arr, prompt, rem = arrival_s.tolist(), prompt_tokens.tolist(), remaining.tolist()
    n = len(arr)
    d_cnt = [0] * (T + 1)  # admitted requests starting (+1) or ending (-1) their decodes
    d_base = [0] * (T + 1)  # the same for their KV read at step 0: prompt - landing - 1
    cnt = base = 0
    elapsed_ms = 0.0
    out: list[int] = []
    i = 0
    for t in range(T):
        if i == n:
            break
        cnt += d_cnt[t]
        base += d_base[t]
        start = now_s + elapsed_ms / 1e3
        q_new = s_new = pairs_new = 0
        while i < n and arr[i] <= start:  # arrived by the time step t starts: lands in t
            p, r = prompt[i], rem[i]
            q_new += p
            s_new += 1
            pairs_new += p * (p + 1) // 2
            if r > 1:  # decodes on steps t + 1 .. t + r - 1
                end = min(t + r, T)
                if t + 1 < end:
                    d_cnt[t + 1] += 1
                    d_cnt[end] -= 1
                    d_base[t + 1] += p - t - 1
                    d_base[end] -= p - t - 1
            out.append(t)
            i += 1
        dec = dec_l[t] + cnt
        q = dec + q_new
        if q > max_tokens:
            out = out[: len(out) - s_new]  # the plan breaks in this step
            break
        kv = kv_l[t] + base + t * cnt
        elapsed_ms += price(q, dec + s_new, kv, kv + dec + pairs_new)
    return np.asarray(out, dtype=np.int64)
