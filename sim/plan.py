"""A window's plan (sim/window.py): what the running requests do over its steps, and the
waiting queue's admissions, one event each, up to the first step where the simple story breaks.

`_plan` walks the queue: the head's first admissible step is a vectorized search over the
remaining steps (max_num_seqs, budget, full-sequence KV check and watermark, against the free
blocks left after that step's decode allocations); its prompt (whole or in chunks, sim/admits.py)
and its decodes then update the per-step arrays by slices. Under FCFS it also plans a step where
the running requests run short of blocks (sim/victims.py). `_plan_immediate` is the fast story
of an empty queue: every arrival admitted in its arrival step, checked for all at once.
"""

from __future__ import annotations

import bisect

import numpy as np

from sim.admits import NEVER, Admits, chunk_plan
from sim.kv import cdiv
from sim.step_arrays import boundary_counts, decoding
from sim.victims import tail_victims, withdraw


class PlanMixin:
    """Adds the window's planning to the Engine (through WindowMixin)."""

    def _running_part(self, T: int, R: np.ndarray, comp0: np.ndarray) -> tuple:
        """What the running requests R do over T steps, whatever the admissions: each decodes
        until it finishes. Returns (finishing step, final blocks, count per step, new blocks
        needed per step, blocks freed per step); the same for every plan of a window."""
        rem0 = self._remaining(R)
        fin0 = rem0 - 1
        run_cnt = -np.bincount(np.minimum(fin0 + 1, T), minlength=T + 1)
        run_cnt[0] += R.shape[0]
        run_cnt = np.cumsum(run_cnt)[:T]
        dec_need = boundary_counts(np.zeros(R.shape[0], dtype=np.int64), fin0, comp0, self.bs, T)
        final0 = cdiv(comp0 + rem0, self.bs)
        # a request is freed (and leaves `running`) in step fin + lag: lag 1 under async
        out = fin0 + self.lag
        inw = out < T
        freed = np.bincount(out[inw], weights=final0[inw], minlength=T)[:T].astype(np.int64)
        ling = np.zeros(T, dtype=np.int64)
        if self.lag:
            ling = np.bincount(out[inw], minlength=T)[:T]
        return fin0, final0, run_cnt, dec_need, freed, ling

    def _remaining(self, R: np.ndarray) -> np.ndarray:
        """Tokens each running request has still to sample (beyond any in flight)."""
        rem = np.minimum(self.max_out[R] - self.num_output[R], self.mml - self.num_tokens[R])
        return rem - self.ph[R] if self.async_sched else rem

    def _plan(self, T, R, comp0, arr_ids, arr_t, running=None, closed=False):
        """The admissions of a window of up to T steps and where its story breaks (`running`:
        `_running_part(T, R, comp0)` if already computed). `closed`: a closed loop, where
        besides `arr_ids` (sent already) each finish at step f sends the next unsent request,
        which arrives in step f + 1 (sim/closed_loop.py).
        Returns (stop, the admissions (sim/admits.py), finishing steps and final blocks of R)."""
        bs = self.bs
        B = self.budget_max
        ptr = self.arrival_ptr
        self._plan_shapes = None  # set by _plan_immediate (the admissions' step shapes)
        # ---------------- running requests: decode until they finish
        if running is None:
            running = self._running_part(T, R, comp0)
        fin0, final0, run_cnt, dec_need, freed, ling = running
        victims = self._plans_victims() and not closed
        adm_fin: list[int] = []  # each admission's last decode step (for victims)
        over: dict[int, tuple[int, int]] = {}  # a victim's (num_tokens, num_output) then
        fcfs_like = self.policy.name == "fcfs" or bool(np.all(np.diff(arr_t) > 0))
        # arrivals join the queue's tail (and the threshold's lone-request rule does not count
        # the queue)
        behind = self.policy.name == "fcfs" and not closed and self.thr == 0
        queued = self.waiting.shape[0] > 0  # requests wait: plan past admissions' finishes
        # closed loop: finishing steps whose release lands inside the window (a heap), how many
        # requests are still to send, how many the window sent
        fins = sorted(fin0[(fin0 >= 0) & (fin0 < T - 1)].tolist()) if closed else []
        to_send = self.n - self.unsent if closed else 0
        sent = 0
        if self.waiting.shape[0] == 0 and arr_ids.shape[0] and fcfs_like and not closed:
            res = self._plan_immediate(T, running, arr_ids, arr_t)
            if res is not None:
                stop, adm_ids, adm_t, busy, all_in = res
                everyone = all_in and ptr + arr_ids.shape[0] == self.n
                admits = Admits.whole(
                    adm_ids, adm_t, self.num_tokens[adm_ids], self.num_output[adm_ids]
                )
                return self._plan_end(stop, admits, busy, fin0, final0, everyone)
        # Per step, before this window's admissions: requests already running (busy), budget
        # left after their decodes (left) and free blocks left after their allocations (avail).
        free_start = np.empty(T + 1, dtype=np.int64)
        free_start[0] = self.free
        np.cumsum(freed - dec_need, out=free_start[1:])
        free_start[1:] += self.free
        busy = run_cnt + ling  # len(running): async keeps a finished request one more step
        left = B - run_cnt
        avail = free_start[:T] - dec_need
        stair = np.arange(T, dtype=np.int64) // bs + 1  # blocks a decoder adds, per bs steps

        def first_bad(lo, hi):
            """First step in [lo, hi) where the running loop runs short of blocks (a preemption),
            else hi. (The budget cannot run short: running <= max_num_seqs <= budget.)"""
            bad = avail[lo:hi] < 0
            j = int(bad.argmax()) if hi > lo else 0
            return lo + j if hi > lo and bad[j] else hi

        limit = first_bad(0, T)
        lo = 0  # the admissions before it have finished (or been preempted) by now

        def preempt(t: int) -> bool:
            """Plan step t's preemptions if every running request decodes in it (else the
            general step decides): the victims leave the plan's arrays and go to the queue's
            head; nothing is admitted in step t."""
            nonlocal fin0, queue, limit, t_prev, lo
            if not (victims and t < T and avail[t] < 0):
                return False
            r_i = np.flatnonzero(fin0 >= t)  # running at t, in running order
            while lo < len(adm_fin) and adm_fin[lo] < t:  # admissions before lo are done
                lo += 1
            tj = np.asarray(admits.t[lo:], dtype=np.int64)
            sj = np.asarray(admits.s[lo:], dtype=np.int64)
            j_i = np.flatnonzero((tj < t) & (np.asarray(adm_fin[lo:], dtype=np.int64) >= t))
            if (sj[j_i] >= t).any():
                return False  # a prompt part-way at t
            nt_j = np.asarray(admits.nt[lo:], dtype=np.int64)[j_i]
            sj = sj[j_i]
            j_i = j_i + lo
            comp = np.concatenate((comp0[r_i] + t, nt_j + (t - sj - 1)))
            k = tail_victims(int(avail[t]), comp % bs == 0, cdiv(comp, bs))
            n_r = r_i.shape[0]
            vj = j_i[max(0, j_i.shape[0] - k) :]  # the tail: admissions, then running ones
            vr = r_i[n_r - (k - vj.shape[0]) :]
            c_r, c_j = comp[n_r - vr.shape[0] : n_r], comp[comp.shape[0] - vj.shape[0] :]
            last = np.concatenate((fin0[vr], np.asarray(adm_fin, dtype=np.int64)[vj]))
            withdraw(busy, left, avail, t, last, np.concatenate((c_r, c_j)), bs)
            if vr.shape[0]:
                admits.cut_running(vr, t, fin0[vr], c_r)
                fin0 = fin0.copy()
                fin0[vr] = t - 1
                for r, c in zip(R[vr].tolist(), c_r.tolist(), strict=True):
                    over[r] = (c + 1, int(self.num_output[r]) + t)
            for j, c in zip(vj.tolist(), c_j.tolist(), strict=True):
                adm_fin[j] = t - 1
                admits.pre[j] = t
                over[admits.ids[j]] = (c + 1, admits.out[j] + t - admits.s[j])
            gone = np.concatenate((R[vr], np.asarray(admits.ids, dtype=np.int64)[vj]))
            queue = np.concatenate((gone, queue))  # FCFS: at the head, in running order
            t_prev = t + 1
            limit = first_bad(t + 1, T)
            return True

        # ---------------- admissions, one event each
        queue = self.waiting
        ai = 0  # next arrival not yet in the queue
        n_arr = arr_ids.shape[0]
        t_prev = 0
        admits = Admits()
        S = self.max_seqs
        wmb = self.wm_blocks
        while True:
            # arrivals up to t_prev join the queue (policy order)
            if ai < n_arr and arr_t[ai] <= t_prev:
                aj = int(np.searchsorted(arr_t, t_prev, side="right"))
                queue = self.policy.enqueue(queue, arr_ids[ai:aj])
                ai = aj
            t_next_arr = int(arr_t[ai]) if ai < n_arr else T
            if closed:
                # a later admission finishes after t_prev: releases landing by t_prev are final
                k = 0
                while k < len(fins) and sent + k < to_send and fins[k] + 1 <= t_prev:
                    k += 1
                if k:
                    first = self.unsent + sent
                    queue = self.policy.enqueue(queue, np.arange(first, first + k))
                    sent += k
                    del fins[:k]
                if fins and sent < to_send:
                    t_next_arr = min(t_next_arr, fins[0] + 1)
            if t_prev >= limit:
                if preempt(limit):
                    continue
                break
            if queue.shape[0] == 0:
                if t_next_arr >= limit:
                    if preempt(limit):
                        continue
                    break
                t_prev = t_next_arr
                continue
            h = int(queue[0])
            # FCFS: the arrivals join behind the head, so its first fit does not depend on
            # them; other policies may put an arrival first
            hi = limit if behind else min(limit, t_next_arr)
            nt, out_h = over.get(h) or (int(self.num_tokens[h]), int(self.num_output[h]))
            blk = int(-(-nt // bs))
            b_sl = busy[t_prev:hi]
            l_sl = left[t_prev:hi]
            nn = nt
            if self.thr > 0 and nt > self.thr:
                # capped (a chunk) wherever more than one request exists: not the simple story
                nn = np.where(b_sl + queue.shape[0] > 1, self.thr, nt)
            ok = (b_sl < S) & (l_sl > 0)
            if not self.chunked:
                ok &= nn <= l_sl
            need = blk if self.reserve_full else -(-np.minimum(nn, l_sl) // bs)
            if wmb:
                need = need + np.where(b_sl > 0, wmb, 0)
            ok &= avail[t_prev:hi] >= need
            i = int(ok.argmax()) if ok.shape[0] else 0
            if not (ok.shape[0] and ok[i]):
                idle = b_sl == 0
                if idle.any():  # nothing runs and the head never fits: the general step says so
                    limit = t_prev + int(np.argmax(idle))
                    break
                if hi == limit:
                    if preempt(limit):
                        continue
                    break
                t_prev = t_next_arr
                continue
            t_h = t_prev + i
            chunked = nt > int(l_sl[i])
            capped = nt > self.thr and b_sl[i] + queue.shape[0] > 1
            if self.thr > 0 and (capped or chunked):
                # capped at the threshold now, or its later chunks once others exist: the
                # general step does it
                limit = t_h
                break
            t_s = t_h  # the step h samples its first token in
            queue = queue[1:]
            if chunked:
                # chunked (sim/admits.py): the budget left in each step until its last chunk
                chunks, complete = chunk_plan(left, t_h, nt, limit)
                held = cdiv(np.cumsum(chunks), bs)
                short = avail[t_h + 1 : t_h + chunks.shape[0]] < held[1:]
                if short.any():  # a chunk runs short of blocks: a preemption, general step
                    cut = 1 + int(short.argmax())
                    chunks, held, complete = chunks[:cut], held[:cut], False
                n_c = chunks.shape[0]
                if not complete:  # part-way when the window ends, at the running list's tail
                    # (its `s` is the window's end: no first token inside it; `left` needs no
                    # update, nothing is admitted after it)
                    busy[t_h : t_h + n_c] += 1
                    avail[t_h : t_h + n_c] -= held
                    admits.add(h, t_h, t_h + n_c, chunks, nt, out_h)
                    adm_fin.append(NEVER)
                    limit = t_h + n_c
                    break
                t_s = t_h + n_c - 1
                busy[t_h:t_s] += 1
                left[t_h:t_s] -= chunks[:-1]
                avail[t_h:t_s] -= held[:-1]
                admits.add(h, t_h, t_s, chunks, nt, out_h)
                left[t_s] -= chunks[-1]
            else:
                # its whole num_tokens at t_h: it samples, then decodes from t_h + 1
                admits.add(h, t_h, t_h, None, nt, out_h)
                left[t_s] -= nt
            busy[t_s] += 1
            avail[t_s] -= blk
            rem = int(min(self.max_out[h] - out_h, self.mml - nt))
            adm_fin.append(t_s + rem - 1)
            fin = min(t_s + rem - 1, T - 1)
            if fin > t_s:
                busy[t_s + 1 : fin + 1] += 1
                left[t_s + 1 : fin + 1] -= 1
                avail[t_s + 1 : fin + 1] -= blk
                t0 = t_s + 1 + (-nt) % bs
                if t0 <= fin:
                    avail[t0 : fin + 1] -= stair[: fin + 1 - t0]
            if closed and t_s + rem < T:
                bisect.insort(fins, t_s + rem - 1)  # its release lands in step t_s + rem
            gone = t_s + rem  # async: the step in which it is skipped, still holding its blocks
            if self.lag and gone < T:
                busy[gone] += 1
                avail[gone] -= -(-(nt + rem - 1) // bs)
                fin = gone
            # avail only fell on [t_h, fin], and nothing before limit was short: look there.
            # Where nothing is short, a plan that started with an empty queue ends after this
            # admission's finish anyway: with arrivals landing as they come, a long plan is
            # planned again in every round that lands them, and the next window goes on from
            # here as cheaply (a choice of length, never of outcome)
            hi = min(limit, fin + 1)
            if t_s + 1 < hi:
                bad = first_bad(t_s + 1, hi)
                limit = bad if bad < hi or not queued else limit
            t_prev = t_h

        everyone = queue.shape[0] == 0 and ai == n_arr and ptr + n_arr + sent == self.n
        return self._plan_end(limit, admits, busy, fin0, final0, everyone)

    def _plan_end(self, stop, admits, busy, fin0, final0, everyone):
        """Common end of a plan: a run ends with its last finish; a timed engine never idles."""
        if everyone:
            fins = [int(fin0.max()) if fin0.shape[0] else -1]
            if len(admits):
                h_arr = np.asarray(admits.ids)
                t_arr = np.asarray(admits.s)
                nt, out, pre = admits.state(len(admits))
                rem_h = np.minimum(self.max_out[h_arr] - out, self.mml - nt)
                fins.append(int(np.minimum(t_arr + rem_h - 1, pre - 1).max()))
            stop = min(stop, max(fins) + 1 + self.lag)  # async: one output later (g1)
        if self.timed and stop > 0:
            idle = busy[:stop] == 0
            if idle.any():  # a timed engine does not step while idle: it jumps to the arrival
                stop = int(np.argmax(idle))
        return stop, admits, fin0, final0

    def _plan_immediate(self, T, running, J, tj):
        """The waiting queue is empty: try the story where every arrival is admitted in its
        arrival step with its whole prompt, checked for all of them at once (vectorized).
        Returns (stop, admitted ids, steps, busy per step, all arrivals admitted) or None."""
        bs = self.bs
        B = self.budget_max
        _, _, run_cnt, dec_need, freed, ling = running
        pj = self.num_tokens[J]
        remj = np.minimum(self.max_out[J] - self.num_output[J], self.mml - pj)
        finj = tj + remj - 1
        blkj = cdiv(pj, bs)
        dec = finj > tj
        # what the cost model prices (see _step_shapes), but for the admissions: an arrival
        # admitted at or after a step adds nothing to it, so these hold for any cut of the plan
        cnt_j, kv_j = decoding(tj + 1, finj, pj, T)
        run_tot = run_cnt + cnt_j
        dec_tot = dec_need + boundary_counts(tj[dec] + 1, finj[dec], pj[dec], bs, T)
        outj = finj + self.lag  # the step in which it is freed (and leaves `running`)
        inw = outj < T
        freed_tot = freed + np.bincount(
            outj[inw], weights=cdiv(pj[inw] + finj[inw] - tj[inw], bs), minlength=T
        )[:T].astype(np.int64)
        if self.lag:
            ling = ling + np.bincount(outj[inw], minlength=T)[:T]
        adm_cnt = np.bincount(tj, minlength=T)[:T]
        adm_blk = np.bincount(tj, weights=blkj, minlength=T)[:T].astype(np.int64)
        delta = freed_tot - dec_tot - adm_blk
        free_start = self.free + np.concatenate(([0], np.cumsum(delta)[:-1]))
        avail = free_start - dec_tot
        bad = (run_tot > B) | (avail < 0)
        # each arrival, after those of its step before it
        first = np.searchsorted(tj, tj, side="left")
        m = np.arange(tj.shape[0]) - first
        cp = np.cumsum(pj)
        cb = np.cumsum(blkj)
        tok_incl = cp - np.where(first > 0, cp[first - 1], 0)
        blk_excl = cb - np.where(first > 0, cb[first - 1], 0) - blkj
        rc = run_tot[tj] + ling[tj]  # len(running) when the step's admissions start
        wm = np.where(rc + m > 0, self.wm_blocks, 0)
        jbad = (rc + m >= self.max_seqs) | (tok_incl > B - rc)
        jbad |= blkj + wm > avail[tj] - blk_excl
        if self.thr > 0:
            jbad |= (pj > self.thr) & (rc + adm_cnt[tj] > 1)
        bad[tj[jbad]] = True
        stop = int(np.argmax(bad)) if bad.any() else T
        if stop == 0:
            return None
        keep = tj < stop
        adm_tok = np.bincount(tj, weights=pj, minlength=T)[:T].astype(np.int64)
        adm_attn = np.bincount(tj, weights=pj * (pj + 1) // 2, minlength=T)[:T].astype(np.int64)
        self._plan_shapes = (run_tot, kv_j, adm_cnt, adm_tok, adm_attn)
        return stop, J[keep], tj[keep], run_tot + adm_cnt + ling, bool(keep.all())
