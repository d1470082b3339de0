"""Windows of steps computed at once ("Vectorize over steps too", ARCHITECTURE.md).

From a state where every running request is decoding, a window follows the simple story for up
to T steps: each running request decodes one token per step until it finishes (its blocks are
freed in that step's output processing); the waiting queue's head is admitted at the first step
where vLLM's waiting loop would admit it, with its whole prompt (or whole recompute) in that step,
and decodes from the next step on, or, if the prompt is longer than the budget the decodes leave,
in chunks of the budget left in each step until its last chunk samples its first token
(sim/admits.py); arrivals join the queue in their step (a timed window lands them by its step
times).

Per-step quantities are arrays over the window: running count, decode block needs (a strided
cumulative sum per residue modulo block_size), admissions' tokens and blocks, blocks freed by
finishes, free blocks (one cumulative sum). The steps where nothing changes cost nothing; each
admission is one event: a vectorized search for its first admissible step over the remaining
steps (max_num_seqs, budget, full-sequence KV check and watermark, against the free blocks left
after that step's decode allocations), then slice updates. A step where the running requests are
short of blocks is a preemption: under FCFS (synchronous, no long-prefill threshold, open loop)
the window plans it too when every running request decodes in it (sim/victims.py: the shortest
tail of the running list goes to the queue's head, nothing is admitted that step, and the
victims come back later as prompts of all their tokens). Otherwise the window is cut before the
first step where the story breaks (such a preemption; a prompt capped by
long_prefill_token_threshold); the general step code does that step. A window may end with its
last admission part-way through its prompt; single steps finish it. So each window is exact
step for step. (Prefix caching keeps the shorter quiet runs in scheduler.py: its block pool is
order dependent.) The plan, the admissions and preemptions, is sim/plan.py; this module prices
a plan's steps, lands a timed window's arrivals and applies the window to the engine's state.

Under async scheduling (`lag` = 1) the token counts are the same; a request that produced its
last token in step f is skipped in step f + 1 but stays in `running` (it counts against
max_num_seqs) and holds its blocks until that step's output processing, so its free, its
finish record and its leaving the running list all move one step later; the output of the
window's last step stays in flight (`pending`). In a closed loop each finish at step f sends a
request that arrives in step f + 1 (`_plan(closed=True)`, sim/closed_loop.py).
"""

from __future__ import annotations

import bisect

import numpy as np

from sim.admits import NEVER, prompt_steps
from sim.kv import cdiv
from sim.landing import landings
from sim.plan import PlanMixin
from sim.run import StepDetail
from sim.step_arrays import boundary_counts, decoding, running_kv_read, step_major

_EMPTY = np.zeros(0, dtype=np.int64)
# Rounds of a timed window's landing-step iteration. Each round fixes at least the first arrival
# it had wrong (an arrival's landing step depends only on the arrivals before it), and the next
# guess goes on from there in arrival order (`_relanded`); a window that has not converged
# keeps the steps before the first disagreement.
ROUNDS = 6


class WindowMixin(PlanMixin):
    """Adds `_window()` to the Engine (scheduler.py); reads and updates its state arrays."""

    def _window(self) -> int:
        """Plan and apply a window from step self.step + 1; returns its length (0: none)."""
        R = self.running
        n0 = R.shape[0]
        k0 = self.step + 1
        comp0 = self.computed[R]
        if n0 > self.budget_max:
            return 0
        decoding = None
        if self.async_sched and n0:
            # async: decoders ask for 1 token (placeholders included); a request whose token in
            # flight is its last one is skipped, stays in `running` one step, then is freed
            p0 = self.ph[R]
            decoding = self._remaining(R) > 0
            if not np.all(self.num_tokens[R][decoding] + p0[decoding] - comp0[decoding] == 1):
                return 0
        elif n0 and not np.all(self.num_tokens[R] - comp0 == 1):
            return 0
        T = min(self.window_len, self.max_steps - self.step)
        if T <= 0:
            return 0
        first = comp0 % self.bs == 0
        if decoding is not None:
            first &= decoding
        if n0 and int(np.count_nonzero(first)) > self.free and not self._plans_victims():
            return 0  # the first step's decodes run short of blocks: a preemption step
        if self.timed and self.closed is not None:
            m = self._closed_window(T, R, comp0)  # sim/closed_loop.py
        elif self.timed:
            m = self._timed_window(T, R, comp0)
        else:
            ptr = self.arrival_ptr
            if self.cfg.admission_control and ptr < self.n:
                T = min(T, int(self.arrival_sorted[ptr]) - k0)  # end before the next arrival
                if T <= 0:
                    return 0
            end = int(np.searchsorted(self.arrival_sorted, k0 + T - 1, side="right"))
            arr_ids = self.arrival_order[ptr:end]
            arr_t = self.arrival_sorted[ptr:end] - k0
            if n0 == 0 and self.waiting.shape[0] == 0 and arr_ids.shape[0] == 0:
                return 0
            stop, admits, fin0, final0 = self._plan(T, R, comp0, arr_ids, arr_t)
            if stop <= 0:
                return 0
            arrays = self._window_arrays(stop, R, comp0, fin0, final0, admits)
            nan = np.full(stop, np.nan)
            m = self._apply_window(stop, arrays, R, comp0, fin0, arr_ids, arr_t, nan, nan)
        if m:
            # the next window plans as far as this one got, doubled (at least 32 steps)
            self.window_len = min(8192, max(32, 2 * m))
        return m

    def _timed_window(self, T: int, R: np.ndarray, comp0: np.ndarray, check: bool = True) -> int:
        """A timed window: which step each arrival lands in depends on the step times, which
        depend on the arrivals. Guess the landing steps, plan, price the steps (one vectorized
        cost call), recompute the landing steps; repeat with a better guess (`_relanded`) until
        they agree, and keep the steps before the first disagreement otherwise. `check`: with
        admission limits, a synchronous FCFS window behind a waiting queue may check its
        arrivals after the plan (`_checked_arrivals`); False plans with those surely let in."""
        ptr = self.arrival_ptr
        K = min(self.n - ptr, 4 * T + 16)
        if K and np.isinf(self.arrival_sorted[ptr + K - 1]):  # held back (Engine.hold): later
            K = int(np.searchsorted(self.arrival_sorted[ptr : ptr + K], np.inf, side="left"))
        # FCFS behind a waiting queue: arrivals that land behind it are checked against the
        # limits after the window, each against the outputs of the steps before it came
        # (`_checked_arrivals`), if the plan admits none of them
        behind = self.policy.name == "fcfs"  # arrivals join the queue's tail
        queued = self.waiting.shape[0]
        checked = (
            check
            and behind
            and queued > 0
            and not self.lag  # async: an arrival at a step's start sees the output before it
            and self.cfg.admission_control
            and self.timeout_s is None
        )
        if self.cfg.admission_control and K and not checked:
            # the window takes the arrivals the limits admit whatever happens first; the next
            # one is checked against the state it sees (scheduler._admission) after the window
            if self.arrival_sorted[ptr] <= self.now_s:
                return 0  # it came during the last step: the window would end before step 1
            K = self._surely_admitted(ptr, K)
            avg_ms = getattr(self, "avg_step_ms", 0.0)
            if K == 0 and avg_ms > 0:  # plan up to it: about twice the steps the mean gives
                ahead = (float(self.arrival_sorted[ptr]) - self.now_s) * 1e3 / avg_ms
                T = max(1, min(T, 2 * int(ahead) + 8))
        arr_ids = self.arrival_order[ptr : ptr + K]
        arr_s = self.arrival_sorted[ptr : ptr + K]
        if R.shape[0] == 0 and self.waiting.shape[0] == 0 and K == 0:
            return 0
        # First guess of the landing steps: the last window's mean step time.
        avg_ms = getattr(self, "avg_step_ms", 0.0)
        if avg_ms > 0:
            guess = np.ceil((arr_s - self.now_s) * 1e3 / avg_ms).astype(np.int64)
            guess = np.maximum(guess, 0)
            guess = guess[: int(np.searchsorted(guess, T, side="left"))]
        else:
            guess = _EMPTY
        best = None
        deadline = self._next_deadline(arr_ids)
        running = self._running_part(T, R, comp0)
        kv_r = running_kv_read(running[0], comp0, T)
        price = self._pricer()
        if price is not None and self.waiting.shape[0] == 0 and K:
            # the landings with every step priced exactly as it comes (sim/landing.py): the
            # first round then agrees unless the immediate story breaks
            guess = landings(
                price,
                self.now_s,
                running[2],
                kv_r,
                arr_s,
                self.num_tokens[arr_ids],
                self._remaining(arr_ids),
                self.budget_max,
            )
        for _ in range(ROUNDS):
            n_g = guess.shape[0]
            plan = self._plan(T, R, comp0, arr_ids[:n_g], guess, running)
            stop, admits, fin0, final0 = plan
            if stop <= 0:
                return 0
            bare_ms = None
            if self._plan_shapes is not None:
                run_tot, kv_j, adm_cnt, adm_tok, adm_attn = (a[:stop] for a in self._plan_shapes)
                kv_read = kv_r[:stop] + kv_j
                shapes = (
                    run_tot + adm_tok,
                    run_tot + adm_cnt,
                    kv_read,
                    kv_read + run_tot + adm_attn,
                )
                # the same steps without the admissions' prompts, priced in the same call
                bare = (run_tot, run_tot, kv_read, kv_read + run_tot)
                both = np.asarray(
                    self.timer(*(np.concatenate(pair) for pair in zip(shapes, bare, strict=True))),
                    dtype=np.float64,
                )
                ms, bare_ms = both[:stop], both[stop:]
            else:
                shapes = self._step_shapes(stop, running[2], kv_r, admits)
                ms = np.asarray(self.timer(*shapes), dtype=np.float64)
            ends = self.now_s + np.cumsum(ms) / 1e3
            starts = np.concatenate(([self.now_s], ends[:-1]))
            if deadline < np.inf:  # a gateway timeout (sim/gateway.py): stop before it is due
                stop = min(stop, int(np.searchsorted(starts, deadline, side="left")))
                if stop <= 0:
                    return 0
            # FCFS and only requests already waiting admitted: the arrivals join the queue
            # behind them whatever their steps, so the plan holds with the true landings
            hold = behind and len(admits) < queued
            if checked and not hold:
                # the queue runs dry: until the last request waiting now is admitted, no
                # arrival can be (the victims of preemptions join at the head), so the steps
                # before that one hold whatever the arrivals' steps
                ids = np.asarray(admits.ids, dtype=np.int64)
                hit = np.flatnonzero(ids == self.waiting[queued - 1])
                dry = int(admits.t[hit[0]]) if hit.size else 0
                if 0 < dry < stop:
                    stop, hold = dry, True
            landing = np.searchsorted(starts, arr_s, side="left")  # first step starting >= it
            n_a = int(np.searchsorted(landing, stop, side="left"))
            if hold:
                guess, n_g = landing[:n_a], n_a
            elif checked:  # it runs dry at once: plan again with the arrivals surely let in
                return self._timed_window(T, R, comp0, check=False)
            n_g = int(np.searchsorted(guess, stop, side="left"))  # guessed inside this plan
            n = min(n_a, n_g)
            diff = np.flatnonzero(landing[:n] != guess[:n])
            j = int(diff[0]) if diff.size else n
            if j == n_a == n_g:
                m = stop
            else:
                m = min(int(landing[j]) if j < n_a else stop, int(guess[j]) if j < n_g else stop)
            if n_a == K and ptr + K < self.n:  # later arrivals were not looked at
                nxt = landing[K - 1] if K else np.searchsorted(starts, self.arrival_sorted[ptr])
                m = min(m, int(nxt))
            best = (m, admits, fin0, final0, starts, ms, n_g, guess)
            if m == stop or K == 0:
                break
            if bare_ms is None:
                guess = landing[:n_a]
            else:
                known = landing[: min(j + 1, n_a)]  # landed on a timeline already right
                guess = self._relanded(arr_s, ms, bare_ms, admits, stop, known)
        m, admits, fin0, final0, starts, ms, n_g, guess = best
        if m <= 0:
            return 0
        arrays = self._window_arrays(m, R, comp0, fin0, final0, admits)
        self.now_s = float(starts[m - 1] + ms[m - 1] / 1e3)
        self.avg_step_ms = float(ms[:m].mean())
        return self._apply_window(
            m, arrays, R, comp0, fin0, arr_ids[:n_g], guess, starts[:m], ms[:m], checked
        )

    def _plans_victims(self) -> bool:
        """Whether a window plans preemptions itself (sim/victims.py): FCFS, synchronous, no
        long-prefill threshold, open loop, no gateway timeout; else it ends before them."""
        return (
            self.policy.name == "fcfs"
            and not self.lag
            and self.thr == 0
            and self.closed is None
            and self.timeout_s is None
        )

    def _pricer(self):
        """The timer's one-step pricer (`sim.timed.timer_for`), built once per run; None for a
        timer without one (the rounds then start from the mean step time)."""
        if not hasattr(self, "_price"):
            make = getattr(self.timer, "pricer", None)
            self._price = make(self.budget_max, self.max_seqs) if make is not None else None
        return self._price

    def _relanded(self, arr_s, ms, bare_ms, admits, stop, known) -> np.ndarray:
        """The next guess of the landing steps (Gauss-Seidel instead of Jacobi): the arrivals
        in order, each landing on the timeline its predecessors' prompts make.

        Recomputing every landing at once from the last round's timeline (Jacobi) fixes only a
        few arrivals a round: moving one prompt by a step moves a long step, which moves later
        arrivals, which the next round moves again. Here the last round's step times are split
        into the steps without the window's prompts (`bare_ms`, exact) plus each admitted
        prompt's share of its step's extra time, and arrival i lands on the bare steps delayed
        by the prompts of the arrivals before it that land in earlier steps. Only a guess: the
        next round prices it exactly and keeps what agrees. `known`: the first landings, exact
        already (the pass goes on from them)."""
        adm_ids = admits.ids
        tj = np.asarray(admits.t, dtype=np.int64)
        n_adm = int(np.searchsorted(tj, stop))  # admitted inside the plan (in arrival order)
        tj = tj[:n_adm]
        pre = np.zeros(arr_s.shape[0])
        if n_adm:
            w = self.num_tokens[np.asarray(adm_ids[:n_adm], dtype=np.int64)].astype(np.float64)
            extra = np.maximum(ms - bare_ms, 0.0) / 1e3
            pre[:n_adm] = extra[tj] * w / np.bincount(tj, weights=w, minlength=stop)[tj]
        # the arrivals after the plan's last step (bounded above) cannot land in it
        n = int(np.searchsorted(arr_s, self.now_s + 2 * float(ms.sum()) / 1e3, side="right"))
        arr_s, pre = arr_s[:n], pre[:n]
        bare = (self.now_s + np.concatenate(([0.0], np.cumsum(bare_ms) / 1e3))).tolist()
        k = known.shape[0]
        out: list[int] = known.tolist()
        at = out[-1] if k else -1  # the step the last arrival landed in
        before = float(pre[:k].sum())  # prompt time of the arrivals so far
        held = float(pre[: int(np.searchsorted(known, at))].sum())  # of those landing before `at`
        for a, p in zip(arr_s[k:].tolist(), pre[k:].tolist(), strict=True):
            if not (at >= 0 and a <= bare[at] + held):  # later than step `at` starts
                t = bisect.bisect_left(bare, a - before)
                at, held = max(t, at + 1), before
                if at >= stop:
                    break
            out.append(at)
            before += p
        return np.asarray(out, dtype=np.int64)

    def _step_shapes(self, m, run_cnt_r, kv_r, admits) -> tuple[np.ndarray, ...]:
        """(tokens, seqs, kv_read, attn) of the first m steps of a plan, what the cost model
        prices: the same integers as `_window_arrays`, from the running requests' per-step
        count and KV read (`running_kv_read`, the same for every plan) plus the admissions'."""
        J, tj, sj, spans = admits.upto(m)
        ntj, outj, prej = admits.state(J.shape[0])
        finj = sj + np.minimum(self.max_out[J] - outj, self.mml - ntj) - 1
        cnt, kv = decoding(sj + 1, np.minimum(finj, prej - 1), ntj, m)  # decodes sj + 1 ..
        run_cnt = run_cnt_r[:m] + cnt
        kv_read = kv_r[:m] + kv
        if admits.cut:  # running requests preempted in the window: no decodes from then on
            _, pre, last, comp = admits.cuts()
            cnt, kv = decoding(pre, last, comp, m)
            run_cnt = run_cnt - cnt
            kv_read = kv_read - kv
        pre = prompt_steps(m, tj, sj, ntj, spans, self.bs)
        attn = kv_read + run_cnt + pre["attn"]
        return run_cnt + pre["tok"], run_cnt + pre["cnt"], kv_read + pre["kv"], attn

    def _window_arrays(self, m, R, comp0, fin0, final0, admits) -> dict:
        """Per-request and per-step arrays of the first m steps of a planned window."""
        bs = self.bs
        n0 = R.shape[0]
        J, tj, sj, spans = admits.upto(m)
        ntj, outj, prej = admits.state(J.shape[0])
        remj = np.minimum(self.max_out[J] - outj, self.mml - ntj)
        # preempted inside the first m steps (sim/victims.py): its last decode is in the step
        # before, and all its blocks are freed in that step
        finj = np.where(prej < m, prej - 1, sj + remj - 1)
        when = np.full(n0, NEVER, dtype=np.int64)
        if admits.cut:
            i, p, last, _ = admits.cuts()
            fin0 = fin0.copy()
            fin0[i] = np.where(p < m, p - 1, last)
            when[i] = p
        when = np.concatenate((when, prej))
        vict = when < m
        zeros = np.zeros(n0, dtype=np.int64)
        a = np.concatenate((zeros, sj + 1))  # first decode step
        fin = np.concatenate((fin0, finj))
        base = np.concatenate((comp0, ntj))  # computed before step a
        final = np.concatenate((final0, cdiv(ntj + finj - sj, bs)))
        lost = base + when - a  # computed tokens when preempted (of the victims)
        dec = a <= fin
        run_cnt, kv_dec = decoding(a, fin, base, m)
        pre = prompt_steps(m, tj, sj, ntj, spans, bs)
        dec_need = boundary_counts(a[dec], fin[dec], base[dec], bs, m)
        out = fin + self.lag  # the step whose output processing frees it (async: one later)
        inw = (out < m) & ~vict
        freed = np.bincount(out[inw], weights=final[inw], minlength=m)[:m].astype(np.int64)
        num_fin = np.bincount(out[inw], minlength=m)[:m]
        ling = num_fin if self.lag else 0  # finished but still in `running` (async)
        free_after_sched = (
            self.free
            - np.cumsum(dec_need + pre["blk"])
            + np.concatenate(([0], np.cumsum(freed)[:-1]))
        )
        num_pre = np.zeros(m, dtype=np.int64)
        if vict.any():
            num_pre = np.bincount(when[vict], minlength=m)[:m]
            back = np.bincount(when[vict], weights=cdiv(lost[vict], bs), minlength=m)[:m]
            free_after_sched = free_after_sched + np.cumsum(back).astype(np.int64)
        kv_used_sched = self.usable - free_after_sched
        return {
            "J": J,
            "tj": tj,
            "sj": sj,
            "spans": spans,
            "ntj": ntj,
            "outj": outj,
            "finj": finj,
            "vict": vict,
            "when": when,
            "lost": lost,
            "num_pre": num_pre,
            "ids": np.concatenate((R, J)),
            "s": np.concatenate((zeros, sj)),  # first sampling step
            "fin": fin,
            "tokens": run_cnt + pre["tok"],
            "seqs": run_cnt + pre["cnt"],
            "num_running": run_cnt + pre["waiting_first"] + pre["first"] + ling,
            "kv_read": kv_dec + pre["kv"],
            "attn": kv_dec + run_cnt + pre["attn"],
            "adm_cnt": np.bincount(tj, minlength=m)[:m],  # left the waiting queue
            "num_fin": num_fin,
            "kv_used_sched": kv_used_sched,
            "kv_used": kv_used_sched - freed,
        }

    def _apply_window(
        self, m, arrays, R, comp0, fin0, arr_ids, arr_t, starts, ms, checked=False
    ) -> int:
        """Write the first m steps of a planned window into the state and the logs (`checked`:
        the arrivals are checked against vLLM's limits here, `_checked_arrivals`)."""
        bs = self.bs
        k0 = self.step + 1
        J, tj, sj = arrays["J"], arrays["tj"], arrays["sj"]
        ntj, finj = arrays["ntj"], arrays["finj"]
        nJ = J.shape[0]
        ids, s, fin = arrays["ids"], arrays["s"], arrays["fin"]
        tokens, seqs = arrays["tokens"], arrays["seqs"]
        kv_used = arrays["kv_used"]
        n_arrived = int(np.searchsorted(arr_t, m - 1, side="right")) if arr_t.shape[0] else 0
        # ---- tokens: request i samples on steps [s_i, min(fin_i, m - 1)], running order
        steps, who = step_major(s, np.minimum(fin, m - 1))
        if steps.shape[0]:
            self.tok_req.append(ids[who])
            self.tok_step.append(k0 + steps)
        # ---- state (async: the output of step m - 1 is still in flight, a placeholder each)
        lag = self.lag
        adv = np.minimum(fin0 + 1, m)
        in_flight = (fin0 >= m - 1).astype(np.int64) if lag else 0
        got = adv + self.ph[R] - in_flight if lag else adv  # outputs processed in the window
        self.computed[R] = comp0 + adv
        self.num_output[R] += got
        self.num_tokens[R] += got
        self.blocks[R] = cdiv(comp0 + adv, bs)
        if lag:
            self.ph[R] = in_flight
        ft = self.first_token[R]
        self.first_token[R] = np.where((ft == 0) & (adv > 0), k0, ft)
        vict, when = arrays["vict"], arrays["when"]
        resumed = self.num_preemptions[J] > 0
        n_vict = int(np.count_nonzero(vict))
        if n_vict:  # a request preempted earlier in the window comes back as resumed
            gone = ids[vict]
            resumed |= ((J[:, None] == gone[None, :]) & (when[vict][None, :] < tj[:, None])).any(
                axis=1
            )
        if nJ:
            # one admitted last may be part-way through its prompt (sim/admits.py): no token yet
            part = sj >= m
            computed_j = ntj.copy()
            for j, c in arrays["spans"]:
                if part[j]:
                    computed_j[j] = int(c[: m - tj[j]].sum())
            advj = np.where(part, 0, np.minimum(finj, m - 1) - sj)  # decodes after the first
            in_flight_j = ((finj >= m - 1) & ~part).astype(np.int64) if lag else 0
            got = np.where(part, 0, advj + 1 - in_flight_j)  # outputs processed
            # a request admitted twice (preempted in between): its first admission sets its
            # first steps, its last one its state
            first = last = slice(None)
            if n_vict and np.unique(J).shape[0] < nJ:
                _, first = np.unique(J, return_index=True)
                _, back = np.unique(J[::-1], return_index=True)
                last = nJ - 1 - back
            Jf, Jl = J[first], J[last]
            fs_j = self.first_sched[Jf]
            self.first_sched[Jf] = np.where(fs_j == 0, k0 + tj[first], fs_j)
            ft = self.first_token[Jf]
            self.first_token[Jf] = np.where((ft == 0) & ~part[first], k0 + sj[first], ft)
            self.status[Jl] = 2
            self.computed[Jl] = (computed_j + advj)[last]
            self.num_output[Jl] = (arrays["outj"] + got)[last]
            self.num_tokens[Jl] = (ntj + got)[last]
            self.blocks[Jl] = cdiv(computed_j + advj, bs)[last]
            if lag:
                self.ph[J] = in_flight_j
        if n_vict:  # preempted in the window (sim/victims.py): waiting, if not admitted since
            v = np.flatnonzero(vict)
            np.add.at(self.num_preemptions, ids[v], 1)
            np.add.at(self.recomputed, ids[v], arrays["lost"][v])
            later = (ids[v][:, None] == ids[None, :]) & (v[:, None] < np.arange(ids.shape[0]))
            v = v[~later.any(axis=1)]
            self.status[ids[v]] = 1
            self.computed[ids[v]] = 0
            self.blocks[ids[v]] = 0
        done = (fin + lag < m) & ~vict
        fin_ids = ids[done]
        if fin_ids.shape[0]:
            self.status[fin_ids] = 3
            self.finish[fin_ids] = k0 + fin[done]
            self.blocks[fin_ids] = 0
            self.num_finished += fin_ids.shape[0]
        # waiting queue: arrivals up to step m - 1 join, admitted leave
        queue = self.waiting
        if n_arrived:
            arr_ids, arr_t = arr_ids[:n_arrived], arr_t[:n_arrived]
            if checked:  # the limits' verdicts, now that the window's outputs are known
                kept = self._checked_arrivals(arr_ids, arr_t, k0, starts)
                arr_ids, arr_t = arr_ids[kept], arr_t[kept]
            elif self.cfg.admission_control:  # taken by _surely_admitted: count them in
                self.num_admitted += n_arrived
                self.admitted_prompt += int(self.prompt[arr_ids].sum())
            self.arrival_ptr += n_arrived
            n_arrived = arr_ids.shape[0]
            self.status[arr_ids[self.status[arr_ids] == 0]] = 1
        arrived_by = np.cumsum(np.bincount(arr_t[:n_arrived], minlength=m)[:m])
        waiting = self.waiting.shape[0] + arrived_by - np.cumsum(arrays["adm_cnt"])
        waiting = waiting + np.cumsum(arrays["num_pre"])
        self.running = ids[~done & ~vict]
        if lag:
            self.pending = ids[(s <= m - 1) & (fin >= m - 1)]
        self.free = self.usable - int(kv_used[-1])
        block = np.stack(
            (
                tokens,
                seqs,
                arrays["kv_read"],
                arrays["attn"],
                arrays["num_running"],
                waiting,
                kv_used,
                arrays["num_pre"],
                arrays["num_fin"],
            ),
            axis=1,
        ).astype(np.int64)
        self.log.add_block(block, starts, ms)
        self.step = k0 + m - 1
        if self.detail is not None or n_arrived or nJ or n_vict:
            self._window_queue_and_detail(
                m, k0, queue, arrays, resumed, arr_ids[:n_arrived], arr_t[:n_arrived]
            )
        return m

    def _checked_arrivals(self, new, land, k0, starts) -> np.ndarray:
        """vLLM's limits (scheduler._admission) for the arrivals a synchronous FCFS window
        landed behind its queue, in arrival order: one that came during the step before its
        landing step sees the outputs processed before that step, one at the very start of its
        step sees that step's too (synchronous: processed at the end of the step). The window's
        finishes and first tokens are in the state already (a check reads only those of steps
        up to what it sees). Returns the mask of those let in."""
        arr_s = self.arrival_sorted[self.arrival_ptr : self.arrival_ptr + new.shape[0]]
        seen = k0 + land - 1 - (arr_s < starts[land]).astype(np.int64)
        kept = np.zeros(new.shape[0], dtype=bool)
        cuts = np.flatnonzero(np.diff(seen)) + 1
        outputs = self._outputs_by_step()  # the arrivals add none: the window admits none
        for lo, hi in zip(np.r_[0, cuts].tolist(), np.r_[cuts, new.shape[0]].tolist(), strict=True):
            kept[lo : lo + self._admit_part(new[lo:hi], int(seen[lo]), outputs)] = True
        return kept

    def _window_queue_and_detail(self, m, k0, queue, arrays, resumed, arr_ids, arr_t) -> None:
        """The waiting queue after the window (and, if recorded, each step's detail). Queue
        updates are per admission/arrival event; the per-step detail loop runs only when
        detail is recorded (small runs). `arrays`: the window's (`_window_arrays`); those
        preempted in it (`vict`, in step `when`) go to the queue's head, FCFS in running order."""
        ids, s, fin, tj, J = (arrays[k] for k in ("ids", "s", "fin", "tj", "J"))
        ntj, spans = arrays["ntj"], arrays["spans"]
        vict, when = arrays["vict"], arrays["when"]
        used_s, used = arrays["kv_used_sched"], arrays["kv_used"]
        admitted_set = J
        gone, when = ids[vict], when[vict]
        if self.detail is None:
            q = self.policy.enqueue(queue, arr_ids) if arr_ids.shape[0] else queue
            if admitted_set.shape[0]:
                q = q[self.status[q] == 1]  # admitted ones are running (or finished) now
            if gone.shape[0]:  # still waiting: the latest preempted first
                back = gone[np.lexsort((np.arange(gone.shape[0]), -when))]
                back = back[self.status[back] == 1]
                _, first = np.unique(back, return_index=True)
                back = back[np.sort(first)]
                q = np.concatenate((back, q[~np.isin(q, back)]))
            self.waiting = q
            return
        n0 = ids.shape[0] - J.shape[0]
        is_j = np.arange(ids.shape[0]) >= n0
        ntok = np.ones(ids.shape[0], dtype=np.int64)
        ntok[n0:] = ntj
        adm_step = np.full(ids.shape[0], -1)
        adm_step[n0:] = tj
        res = np.zeros(ids.shape[0], dtype=bool)
        res[n0:] = resumed
        # tokens of request i at step t: 1 for a decode, its prompt in the step it samples first
        # (whole prompts), or its chunk (chunked ones, from their admission step)
        chunk = {n0 + j: (int(tj[j]), c) for j, c in spans}
        entered = np.full(ids.shape[0], -1)
        entered[n0:] = tj
        q = queue
        lag = self.lag  # async: a request is freed, and leaves `running`, one step later
        for t in range(m):
            arrived = arr_ids[arr_t == t]
            if arrived.shape[0]:
                q = self.policy.enqueue(q, arrived)
            joining = is_j & (adm_step == t)
            if joining.any():
                q = q[~np.isin(q, ids[joining])]
            preempted = gone[when == t]
            if preempted.shape[0]:
                q = np.concatenate((preempted, q))
            sampled_mask = (s <= t) & (fin >= t)
            toks = np.where(is_j & (s == t), ntok, 1)
            active = sampled_mask.copy()
            for i, (t0, c) in chunk.items():
                if t0 <= t < t0 + c.shape[0]:
                    toks[i] = c[t - t0]
                    active[i] = c[t - t0] > 0
            self.detail.append(
                StepDetail(
                    step=k0 + t,
                    arrived=arrived,
                    scheduled_req=ids[active],
                    scheduled_tokens=toks[active],
                    new=ids[joining & ~res],
                    resumed=ids[joining & res],
                    preempted=preempted[::-1],  # in the order they were taken
                    sampled=ids[sampled_mask],
                    finished=ids[(fin + lag == t) & ~vict],
                    running=ids[(entered <= t) & (fin >= t - lag)],
                    waiting=q,
                    kv_blocks_used_after_schedule=int(used_s[t]),
                    kv_blocks_used=int(used[t]),
                )
            )
        self.waiting = q
