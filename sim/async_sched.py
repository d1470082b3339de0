"""Async scheduling's bookkeeping (SCHEDULER.md g): output placeholders and the late output.

vLLM's `AsyncScheduler` schedules step k before it has processed the output of step k-1, so the
Engine (sim/scheduler.py) keeps, with `async_scheduling=True`, three more things per request: the
output placeholders (`ph`: tokens sure to come, not seen yet), the requests whose output is in
flight (`pending`, in scheduling order) and, for a preempted request, the computed tokens it lost
(`lost`). Token counts per step are those of the synchronous engine; what moves is everything a
finish causes: a request is seen to finish, and its blocks go back to the pool, when the output
carrying its last token is processed, after the next `schedule()`.

The per-step records are written as the engine goes, one row per `schedule()`: the finishes and
the KV blocks after output processing measured in iteration k belong to step k-1. At the end of
the run the last output is processed once more and those two columns (and the detail's
`finished` / `kv_blocks_used`) move back one row (`_async_shift`).
"""

from __future__ import annotations

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)
_WAITING, _RUNNING = 1, 2  # sim.scheduler's status codes


class AsyncMixin:
    """Adds the async rules to the Engine; reads and updates its state arrays."""

    def _async_new_tokens(self, idx: np.ndarray, comp: np.ndarray) -> np.ndarray:
        """Tokens each running request asks for (g3), 0 for one whose step in flight already
        produces its last token (g4: skipped, the running loop moves on)."""
        p = self.ph[idx]
        w = self.num_tokens[idx] + p - comp
        w[(p > 0) & (comp + 2 - p >= self.prompt[idx] + self.max_out[idx])] = 0
        return w

    def _async_sample(self, scheduled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """After `schedule()`: the scheduled requests whose chunk reaches the end of their known
        tokens plus placeholders sample (g7) and get a placeholder (g2). Returns them, and those
        of them whose token now in flight is their last one."""
        done = self.computed[scheduled] == self.num_tokens[scheduled] + self.ph[scheduled]
        sampled = scheduled[done]
        self.ph[sampled] += 1
        p = self.ph[sampled]
        last = (self.num_output[sampled] + p >= self.max_out[sampled]) | (
            self.num_tokens[sampled] + p >= self.mml
        )
        return sampled, sampled[last]

    def _process_output(self, k_out: int) -> np.ndarray:
        """Process the output of step `k_out` (the requests in `pending`): append their tokens,
        drop a placeholder each, hash newly full blocks (prefix caching), stop and free the
        finished. A preempted request's stale token is appended too but changes no counter
        that preemption reset (g6); if it was the last token the request finishes in the
        waiting queue, as vLLM's `stopped_preempted_reqs`. Returns the finished requests."""
        pend = self.pending
        self.pending = _EMPTY
        if pend.shape[0] == 0:
            return _EMPTY
        self.num_output[pend] += 1
        self.num_tokens[pend] += 1
        live = pend[self.status[pend] == _RUNNING]
        self.ph[live] -= 1
        if self.pool is not None and live.shape[0]:
            # vLLM caches num_computed_tokens - num_output_placeholders for running requests.
            full = (self.computed[live] - self.ph[live]) // self.bs
            touch = full > self.pool.num_cached[live]
            for r, f in zip(live[touch].tolist(), full[touch].tolist(), strict=True):
                self.pool.cache(r, f)
        stop = (self.num_output[pend] >= self.max_out[pend]) | (self.num_tokens[pend] >= self.mml)
        fin = pend[stop]
        if fin.shape[0]:
            stale = fin[self.status[fin] == _WAITING]
            # nothing is recomputed for a request that finishes on its stale output
            self.recomputed[stale] -= self.lost[stale]
            self._finish(fin, k_out)
            self.running = self.running[self.status[self.running] == _RUNNING]
            if stale.shape[0]:
                self.waiting = self.waiting[self.status[self.waiting] == _WAITING]
        return fin

    def _async_final_output(self) -> None:
        """After the loop: the output of the last step is processed once more (g1)."""
        fin = self._process_output(self.step)
        self.final_output = (self.usable - self.free, fin)

    def _async_shift(self, cols: dict[str, np.ndarray]) -> None:
        """Move the after-output columns (and detail fields) back one row: the value measured in
        iteration k + 1 is step k's; the last step's comes from the final processing."""
        kv_last, fin_last = self.final_output
        if self.step:
            cols["kv_blocks_used"] = np.append(cols["kv_blocks_used"][1:], kv_last)
            cols["num_finished"] = np.append(cols["num_finished"][1:], fin_last.shape[0])
        if self.detail:
            self.detail.shift_async(fin_last, kv_last)
