"""The running list and the waiting queue, as compiled functions over index arrays.

`running` is vLLM's `self.running`: admission order, new and resumed requests appended at the
end. The waiting queue is a ring buffer (`wait`, head and length in the scalar state) that holds
either vLLM's FCFS deque (arrivals at the back, a preempted request at the head) or a queue kept
in a policy's rank order (priority's heap order, the teaching policies' keys): which one is the
policy's declared `queue_kind`, never its name.
"""

from __future__ import annotations

import numpy as np

from sim.engine.jit import njit
from sim.engine.layout import QUEUE_RANK, S_RUN_LEN, S_WAIT_HEAD, S_WAIT_LEN


@njit
def run_remove_at(run: np.ndarray, st: np.ndarray, pos: int) -> None:
    """Remove the request at `pos` of the running list (the rest move up)."""
    n = st[S_RUN_LEN]
    for i in range(pos, n - 1):
        run[i] = run[i + 1]
    st[S_RUN_LEN] = n - 1


@njit
def run_append(run: np.ndarray, st: np.ndarray, r: int) -> None:
    run[st[S_RUN_LEN]] = r
    st[S_RUN_LEN] += 1


@njit
def wait_at(wait: np.ndarray, st: np.ndarray, i: int) -> int:
    """The i-th request of the waiting queue (0 = head)."""
    return wait[(st[S_WAIT_HEAD] + i) % wait.shape[0]]


@njit
def wait_set(wait: np.ndarray, st: np.ndarray, i: int, r: int) -> None:
    wait[(st[S_WAIT_HEAD] + i) % wait.shape[0]] = r


@njit
def wait_push_back(wait: np.ndarray, st: np.ndarray, r: int) -> None:
    wait[(st[S_WAIT_HEAD] + st[S_WAIT_LEN]) % wait.shape[0]] = r
    st[S_WAIT_LEN] += 1


@njit
def wait_push_front(wait: np.ndarray, st: np.ndarray, r: int) -> None:
    st[S_WAIT_HEAD] = (st[S_WAIT_HEAD] - 1) % wait.shape[0]
    wait[st[S_WAIT_HEAD]] = r
    st[S_WAIT_LEN] += 1


@njit
def wait_pop_front(wait: np.ndarray, st: np.ndarray) -> int:
    r = wait[st[S_WAIT_HEAD]]
    st[S_WAIT_HEAD] = (st[S_WAIT_HEAD] + 1) % wait.shape[0]
    st[S_WAIT_LEN] -= 1
    return r


@njit
def wait_insert_ranked(wait: np.ndarray, st: np.ndarray, req: np.ndarray, r: int) -> None:
    """Insert r at its place in rank order (after the requests ranked before it)."""
    n = st[S_WAIT_LEN]
    lo, hi = 0, n
    rank = req[QUEUE_RANK, r]
    while lo < hi:
        mid = (lo + hi) // 2
        if req[QUEUE_RANK, wait_at(wait, st, mid)] < rank:
            lo = mid + 1
        else:
            hi = mid
    for i in range(n, lo, -1):
        wait_set(wait, st, i, wait_at(wait, st, i - 1))
    wait_set(wait, st, lo, r)
    st[S_WAIT_LEN] = n + 1


@njit
def wait_compact(wait: np.ndarray, st: np.ndarray, keep: np.ndarray) -> None:
    """Keep only the requests whose `keep[r]` is true, in queue order."""
    n = st[S_WAIT_LEN]
    out = 0
    for i in range(n):
        r = wait_at(wait, st, i)
        if keep[r]:
            wait_set(wait, st, out, r)
            out += 1
    st[S_WAIT_LEN] = out


@njit
def wait_sort_slots(
    wait: np.ndarray, st: np.ndarray, slots: np.ndarray, m: int, score: np.ndarray
) -> None:
    """Reorder the requests at queue positions slots[:m] among those positions by score[:m]
    (one per position, in slot order), highest first, stably (ties keep queue order)."""
    reqs = np.empty(m, dtype=np.int64)
    for i in range(m):
        reqs[i] = wait_at(wait, st, slots[i])
    order = np.argsort(-score[:m], kind="mergesort")
    for i in range(m):
        wait_set(wait, st, slots[i], reqs[order[i]])
