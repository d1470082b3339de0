"""Preemptions planned inside a window of steps (sim/window.py): FCFS and synchronous.

In a step where the running requests' decodes need more new blocks than are free, vLLM's running
loop (SCHEDULER.md c) preempts the request at the tail of the running list, again and again, until
the request asking for a block gets it or has preempted itself. When every running request
decodes in that step, the victims are therefore the shortest tail of the running list whose
blocks cover what the requests before it need (`tail_victims`). A window that plans the step
takes the victims' later steps out of its per-step arrays (`withdraw`) and puts them at the
waiting queue's head, to be admitted again like a prompt of all their tokens (recompute).
"""

from __future__ import annotations

import numpy as np

from sim.kv import cdiv


def tail_victims(avail: int, need: np.ndarray, held: np.ndarray) -> int:
    """How many requests at the tail of the running list a step preempts. `need`: each running
    request's new blocks this step (0 or 1 for a decode), `held`: its blocks before the step,
    both in running order; `avail`: the free blocks minus every request's need (negative: the
    step is short). The answer is the smallest k with need[:-k].sum() <= free + held[-k:].sum():
    the greedy loop pops victims only while the request it serves is short, and what a
    request before the tail needs never depends on which of the tail goes."""
    free = avail + int(need.sum())
    rest = int(need.sum()) - np.cumsum(need[::-1])  # needed by those before the last k
    ok = rest <= free + np.cumsum(held[::-1])
    return int(np.argmax(ok)) + 1


def withdraw(
    busy: np.ndarray,
    left: np.ndarray,
    avail: np.ndarray,
    t: int,
    last: np.ndarray,
    comp: np.ndarray,
    bs: int,
) -> None:
    """Take victims preempted in plan step t out of the plan's per-step arrays, in place. On
    steps t .. last[i] (capped at the plan's end) victim i no longer runs (`busy`), takes no
    decode token (`left`) and no longer holds the blocks it would have had after each step's
    allocation, cdiv(comp[i] + 1 + (step - t), bs) (`avail`); comp: its computed tokens at t."""
    T = busy.shape[0]
    span = np.minimum(last, T - 1) - t + 1  # steps taken back per victim (>= 1)
    d = np.arange(int(span.max()), dtype=np.int64)
    on = d[None, :] < span[:, None]
    count = on.sum(axis=0)
    end = t + d.shape[0]
    busy[t:end] -= count
    left[t:end] += count
    avail[t:end] += np.where(on, cdiv(comp[:, None] + 1 + d[None, :], bs), 0).sum(axis=0)
