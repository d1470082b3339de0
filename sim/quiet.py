"""Quiet runs with prefix caching: decode-only runs of steps computed at once, block pool aware.

With prefix caching on, the block pool's order matters (sim/kv.py), so the long windows of
sim/window.py are not used; instead a quiet run covers the steps where only decodes run, nobody
can be admitted (empty queue, max_num_seqs, or a head that does not fit and will not fit while
blocks only get fewer), no request arrives, and the free blocks cover every decode's new block.
It ends at the first finish (included), the next arrival or the first step that could run short;
its records come from cumulative sums over its steps, its pool updates go request by request.

Arrivals end a quiet run, unless they can only join the queue (`_arrival_stop`): when no seat
or token is free for anyone (the waiting loop does not run), or when they queue behind a head
that stays blocked (FCFS, or a rank fixed at arrival that sorts them after it). Then the run goes
on and they join the queue before the step they arrive at, as the loop would add them.
"""

from __future__ import annotations

import numpy as np

from sim.detail import QuietSteps
from sim.kv import cdiv

_EMPTY = np.zeros(0, dtype=np.int64)
_LOOK_AHEAD = 256  # arrivals checked for one that would sort before a blocked head


class QuietRunMixin:
    """Adds `_quiet_length()` and `_quiet_run(m)` to the Engine (scheduler.py)."""

    def _quiet_length(self, keep_hashes: bool = False) -> int:
        """How many steps from now are quiet (0 if this step is not). See module docstring.
        `keep_hashes`: only steps whose new blocks evict no cached block that a waiting request
        could hit (sim/kv.py `harmless_allocations`)."""
        R = self.running
        nR = R.shape[0]
        W = self.waiting
        nxt = self._next_arrival()
        if nR == 0:
            if W.shape[0] or self.timed or nxt is None:
                return 0
            return int(nxt) - (self.step + 1)  # idle steps until the next arrival
        if nR > self.budget_max:
            return 0
        comp = self.computed[R]
        if self.async_sched:
            # async: every running request decodes with one output in flight (no lingering
            # finished request, no chunk): the run then processes one output per step
            if not (np.all(self.ph[R] == 1) and np.all(self.num_tokens[R] + 1 - comp == 1)):
                return 0
        elif not np.all(self.num_tokens[R] - comp == 1):
            return 0
        bs = self.bs
        hist = np.bincount((-comp) % bs, minlength=bs)
        admissible = W.shape[0] and nR < self.max_seqs and self.budget_max - nR > 0
        if admissible and not self._head_blocked(W, nR, self.free - int(hist[0])):
            return 0
        remain = np.minimum(self.max_out[R] - self.num_output[R], self.mml - self.num_tokens[R])
        m = int(remain.min()) - (1 if self.async_sched else 0)  # async: beyond the one in flight
        if m < 1:
            return 0
        m = min(m, self.max_steps - self.step)
        self._stop = self._arrival_stop(nR, W, nxt)
        if not self.timed and self._stop is not None:
            m = min(m, int(self._stop) - (self.step + 1))
        if m < 2:
            return m if m == 1 else 0
        per = np.resize(hist, m)  # blocks newly needed at each step of the run
        cum = np.cumsum(per)
        room = self.free
        if keep_hashes:
            room = min(room, self.pool.harmless_allocations(W, int(cum[-1])))
        if cum[-1] > room:
            m = int(np.argmax(cum > room))
        return m

    def _arrival_stop(self, nR: int, W: np.ndarray, nxt):
        """The arrival (its key: time, or step) at which a quiet run must stop; None: none.
        An arrival only joins the waiting queue, and the run goes on, if no admission limit,
        gateway or closed loop acts on it, the queue's order is fixed at arrival, and either no
        seat (or no token of the budget) is free, so the waiting loop does not run, or it
        queues behind the head, which stays blocked through the run (see `_quiet_length`)."""
        if nxt is None:
            return None
        if self.cfg.admission_control or self.closed is not None or self.timeout_s is not None:
            return nxt
        if self.policy.dynamic:
            return nxt
        if nR >= self.max_seqs or self.budget_max - nR <= 0:
            return None
        if not W.shape[0]:
            return nxt
        rank = getattr(self.policy, "queue_rank", None)  # sim/policy.py _Ranked
        if rank is None:
            return None if self.policy.name == "fcfs" else nxt  # FCFS: behind everyone
        ptr = self.arrival_ptr
        later = self.arrival_order[ptr : ptr + _LOOK_AHEAD]
        ahead = np.flatnonzero(rank[later] < rank[W[0]])  # would sort before the head
        if ahead.shape[0]:
            return self.arrival_sorted[ptr + int(ahead[0])]
        end = ptr + later.shape[0]
        return self.arrival_sorted[end] if end < self.n else None

    def _head_blocked(self, W, nR, free) -> bool:
        """True if the waiting queue's head cannot be admitted with `free` blocks left (with
        fewer free blocks later in a quiet run it stays blocked)."""
        r = int(W[0])
        nt = int(self.num_tokens[r])
        left = self.budget_max - nR
        hit_blocks = 0
        evictable = 0
        if self.pool is not None:
            hits, evictable = self.pool.lookup(r, nt)
            hit_blocks = len(hits)
        nn = nt - hit_blocks * self.bs
        if self.thr > 0:
            nn = min(nn, self.thr)
        if not self.chunked and nn > left:
            return True
        c = min(nn, left)
        alloc = cdiv(hit_blocks * self.bs + c, self.bs) - hit_blocks + evictable
        check = cdiv(nt, self.bs) - hit_blocks + evictable if self.reserve_full else alloc
        return max(check, alloc) + self.wm_blocks > free

    def _quiet_run(self, m: int) -> int:
        """Apply m quiet steps at once (every running request decodes one token per step).
        Returns the number of steps applied (a timed run may stop early at an arrival)."""
        R = self.running
        nR = R.shape[0]
        k0 = self.step + 1
        comp0 = self.computed[R]
        if nR:
            per = np.resize(np.bincount((-comp0) % self.bs, minlength=self.bs), m)
        else:
            per = np.zeros(m, dtype=np.int64)
        t = np.arange(m, dtype=np.int64)
        kv_read = int(comp0.sum()) + t * nR
        attn = kv_read + nR
        tokens = np.full(m, nR, dtype=np.int64)
        later = self.arrival_sorted[self.arrival_ptr :]  # not arrived yet
        stop = self._stop if nR else self._next_arrival()  # see _arrival_stop
        if self.timed:
            ms = np.asarray(self.timer(tokens, tokens, kv_read, attn), dtype=np.float64)
            ends = self.now_s + np.cumsum(ms) / 1e3
            starts = np.concatenate(([self.now_s], ends[:-1]))
            if stop is not None:
                m = int(np.searchsorted(starts, stop, side="left"))  # steps starting before it
                per, t, kv_read, attn, tokens = per[:m], t[:m], kv_read[:m], attn[:m], tokens[:m]
                ms, starts, ends = ms[:m], starts[:m], ends[:m]
            self.now_s = float(starts[-1] + ms[-1] / 1e3)  # = Run.finish_s of its last step
            # arrivals that join before each step: those by its start (the loop adds them so)
            joined = np.searchsorted(later, starts, side="right")
        else:
            ms = np.full(m, np.nan)
            starts = np.full(m, np.nan)
            joined = np.searchsorted(later, k0 + t, side="right")
        W0 = self.waiting
        joining = _EMPTY
        waiting_n = np.full(m, W0.shape[0])
        if joined[-1]:
            joining = self.arrival_order[self.arrival_ptr : self.arrival_ptr + int(joined[-1])]
            self.arrival_ptr += int(joined[-1])
            self.status[joining] = 1  # WAITING
            self.waiting = self.policy.enqueue(W0, joining)
            waiting_n = waiting_n + joined
        cum = np.cumsum(per)
        used0 = self.usable - self.free
        # state after m decodes
        if nR:
            if self.pool is not None:  # m tokens each, before num_computed_tokens moves on
                need = cdiv(comp0 + m, self.bs) - cdiv(comp0, self.bs)
                # hashed: every computed token known by the end (async: all but the last)
                full = (comp0 + m - self.lag) // self.bs
                self._pool_alloc(R, np.full(nR, m, dtype=np.int64), need, full)
            self.computed[R] = comp0 + m
            self.num_output[R] += m
            self.num_tokens[R] += m
            self.blocks[R] = cdiv(comp0 + m, self.bs)
            self.free -= int(cum[-1])
            ft = self.first_token[R]
            self.first_token[R] = np.where(ft == 0, k0, ft)
            self.tok_req.append(np.tile(R, m))
            self.tok_step.append(np.repeat(k0 + t, nR))
        kv_used = used0 + cum
        stop = (self.num_output[R] >= self.max_out[R]) | (self.num_tokens[R] >= self.mml)
        fin = R[stop]  # async: none (the last step's output is in flight, `pending`)
        if self.async_sched:
            self.pending = R
            p = self.ph[R]
            last = R[
                (self.num_output[R] + p >= self.max_out[R]) | (self.num_tokens[R] + p >= self.mml)
            ]
        else:
            last = fin
        if self.closed is not None and last.shape[0]:
            self._release(last.shape[0], self.now_s)
        k_last = k0 + m - 1
        num_fin = np.zeros(m, dtype=np.int64)
        if fin.shape[0]:
            self._finish(fin, k_last)
            kv_used[-1] = self.usable - self.free
            num_fin[-1] = fin.shape[0]
        block = np.stack(
            (
                tokens,
                tokens,
                kv_read,
                attn,
                np.full(m, nR),
                waiting_n,
                kv_used,
                np.zeros(m, dtype=np.int64),
                num_fin,
            ),
            axis=1,
        )
        self.log.add_block(block, starts, ms)
        if self.detail is not None:  # one record for the m steps (sim/detail.py)
            self.detail.add_quiet(
                QuietSteps(k0, R, W0, self.arrived_now, fin, used0 + cum, kv_used)
                if not joining.shape[0]
                else QuietSteps(
                    k0,
                    R,
                    W0,
                    self.arrived_now,
                    fin,
                    used0 + cum,
                    kv_used,
                    joining=joining,
                    joined=joined,
                    enqueue=self.policy.enqueue,
                )
            )
        self.step = k_last
        if fin.shape[0]:
            self.running = R[self.status[R] == 2]  # still RUNNING
        return m
