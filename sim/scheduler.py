"""vLLM v1's scheduler, step for step, with its state as NumPy arrays indexed by request.

One step = arrivals, one `schedule()` (running requests first, then the waiting queue), one output
update (sample, stop, free), exactly as SCHEDULER.md (a)-(d), (f) describe vLLM 0.33.0. Inside a
step the work is array operations over the running list or the waiting queue: cumulative sums of
the tokens asked for against the budget, cumulative block needs against the free blocks, and the
first index where either runs out. A preemption is an event: the pass stops at the request that
cannot get blocks, the victims are chosen by the policy (sim/policy.py), and the pass resumes
from there (SCHEDULER f1's cursor rule).

Most steps never come here: sim/window.py computes whole windows of steps at once (decodes,
finishes, admissions of whole or chunked prompts, arrivals), still exactly step by step, and
hands back to the general step below only where its simple story breaks (a preemption, a
prompt capped by long_prefill_token_threshold).
With prefix caching, block bookkeeping goes through vLLM's block-level LRU pool (sim/kv.py) and
admissions go one at a time (each one's cache hits depend on the blocks the previous one hashed
or evicted); shorter quiet runs (sim/quiet.py) replace the windows.

`SchedulerConfig.async_scheduling` makes the same engine vLLM's `AsyncScheduler` (SCHEDULER.md g):
output placeholders, the output of step k-1 processed after step k is scheduled, finishes and
frees one step later (sim/async_sched.py; the windows and quiet runs follow it). A closed-loop
workload (`Workload.concurrency`) gets its arrival times from the run's finishes
(sim/closed_loop.py).

Public: `run_steps` (arrivals in steps, for replays and lessons). Timed runs: `sim.timed`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sim.admission import admit_in_order
from sim.async_sched import AsyncMixin
from sim.blocks import BlockTraceLog
from sim.closed_loop import ClosedLoopMixin
from sim.config import SchedulerConfig
from sim.detail import DetailLog
from sim.errors import SimInputError
from sim.gateway import GatewayMixin
from sim.kv import PrefixCachePool, cdiv
from sim.policy import Policy, make_policy
from sim.quiet import QuietRunMixin
from sim.run import PrefixCacheStats, Run, StepDetail
from sim.window import WindowMixin
from sim.workload import Workload

NOT_ARRIVED, WAITING, RUNNING, FINISHED = 0, 1, 2, 3
DEFAULT_MAX_STEPS = 5_000_000
PROGRESS_EVERY_S = 0.25  # how often a long run calls its `progress(done, total)` (wall time)
_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY32 = np.zeros(0, dtype=np.int32)

# A step-time model for timed runs: arrays over steps in, step durations in ms out.
StepTimer = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]

_FIELDS = (
    "num_scheduled_tokens",
    "num_scheduled_seqs",
    "kv_read_tokens",
    "attn_pairs",
    "num_running",
    "num_waiting",
    "kv_blocks_used",
    "num_preempted",
    "num_finished",
)


class _StepLog:
    """Per-step records: single steps as Python rows, quiet runs as array blocks."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.blocks: list[np.ndarray] = []
        self.times: list[np.ndarray] = []
        self.time_rows: list[tuple[float, float]] = []

    def _flush(self) -> None:
        if self.rows:
            self.blocks.append(np.array(self.rows, dtype=np.int64).reshape(-1, len(_FIELDS)))
            self.times.append(np.array(self.time_rows, dtype=np.float64).reshape(-1, 2))
            self.rows = []
            self.time_rows = []

    def add_row(self, row: tuple, start_s: float, ms: float) -> None:
        self.rows.append(row)
        self.time_rows.append((start_s, ms))

    def add_block(self, block: np.ndarray, start_s: np.ndarray, ms: np.ndarray) -> None:
        self._flush()
        self.blocks.append(block)
        self.times.append(np.stack((start_s, ms), axis=1))

    def arrays(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        self._flush()
        if self.blocks:
            table = np.concatenate(self.blocks)
            times = np.concatenate(self.times)
        else:
            table = np.zeros((0, len(_FIELDS)), dtype=np.int64)
            times = np.zeros((0, 2))
        cols = {name: np.ascontiguousarray(table[:, i]) for i, name in enumerate(_FIELDS)}
        return cols, np.ascontiguousarray(times[:, 0]), np.ascontiguousarray(times[:, 1])


@dataclass(frozen=True, eq=False)
class Prepared:
    """What a run derives from its workload alone (shared by the runs of a sweep)."""

    arrival_order: np.ndarray  # request indices in arrival order (list order within a tie)
    arrival_sorted: np.ndarray  # their arrival keys (seconds or steps)
    policy: Policy


def prepare(workload: Workload, policy: str, timed: bool) -> Prepared:
    """Arrival order and the policy's keys for `workload` (see Prepared)."""
    n = workload.num_requests
    if workload.concurrency is not None:
        if not timed:
            raise SimInputError(
                "a concurrency (closed-loop) workload needs a timed run: its requests arrive "
                "when earlier ones finish, in seconds, which a step replay does not have"
            )
        # the first `concurrency` at 0 s; the others get their times during the run
        arrival_key = np.full(n, np.inf)
        arrival_key[: workload.concurrency] = 0.0
        arrival_time = np.arange(n) * 1e-6  # they arrive in list order
    elif timed:
        if workload.arrival_s is None:
            raise SimInputError("a timed run needs arrival_s (seconds) in the workload")
        arrival_key = np.asarray(workload.arrival_s, dtype=np.float64)
        # The policies read arrival_time only to order requests. vLLM stamps each request with
        # its own time.time() in the order it receives them, so requests that arrive "at the same
        # time" (a burst, a trace's equal times) still have distinct, list-ordered times: their
        # rank in (arrival_s, list order). Exact ties would make vLLM's PRIORITY victim rule pick
        # among equals by running order, which can preempt two chunked prefills in turn forever.
        arrival_time = np.empty(n, dtype=np.float64)
        arrival_time[np.argsort(arrival_key, kind="stable")] = np.arange(n)
    else:
        if workload.arrival_step is None:
            raise SimInputError("a step replay needs arrival_step in the workload")
        arrival_key = np.asarray(workload.arrival_step, dtype=np.int64)
        # The recordings' arrival_time: arrival_step + i * 1e-6 (SCHEDULER f6).
        arrival_time = arrival_key.astype(np.float64) + np.arange(n) * 1e-6
    order = np.argsort(arrival_key, kind="stable")
    pol = make_policy(
        policy,
        priority=workload.priority,
        arrival_time=arrival_time,
        request_ids=workload.request_ids,
        job_tokens=workload.prompt_tokens + workload.output_tokens,
        tenant=workload.tenant,
    )
    return Prepared(order, arrival_key[order], pol)


class Engine(WindowMixin, QuietRunMixin, AsyncMixin, ClosedLoopMixin, GatewayMixin):
    """The scheduler state of one run and the step loop. Use `run_steps` / `sim.timed.run_timed`."""

    def __init__(
        self,
        config: SchedulerConfig,
        workload: Workload,
        *,
        timer: StepTimer | None = None,
        record_detail: bool = False,
        max_steps: int | None = None,
        batch_quiet_runs: bool = True,
        stop_at_max_steps: bool = False,
        prepared: Prepared | None = None,
        trace_blocks: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        if not isinstance(config, SchedulerConfig):
            raise SimInputError("config must be a SchedulerConfig")
        if not isinstance(workload, Workload):
            raise SimInputError("workload must be a sim.workload.Workload")
        self.cfg = config
        self.wl = workload
        self.timer = timer
        self.timed = timer is not None
        # trace_blocks: every step one at a time through the block pool, its tables recorded
        self.trace_blocks = trace_blocks
        self.progress = progress  # progress(requests done, requests in all), for a page's bar
        self.record_detail = record_detail or trace_blocks
        self.batch_quiet_runs = batch_quiet_runs and not trace_blocks  # False: step by step
        self.window_len = 64  # planning length of the next window (adapts, sim/window.py)
        self.stop_at_max_steps = stop_at_max_steps
        self.max_steps = DEFAULT_MAX_STEPS if max_steps is None else int(max_steps)
        n = workload.num_requests
        self.n = n
        self.bs = config.block_size
        self.budget_max = config.max_num_batched_tokens
        self.mml = config.max_model_len
        self.max_seqs = config.max_num_seqs
        self.thr = config.long_prefill_token_threshold
        self.chunked = config.enable_chunked_prefill
        self.reserve_full = config.scheduler_reserve_full_isl
        self.wm_blocks = config.watermark_blocks
        self.usable = config.kv_blocks_usable
        self.async_sched = config.async_scheduling
        self.lag = int(self.async_sched)  # steps a finished request stays in `running`

        self.prompt = np.asarray(workload.prompt_tokens, dtype=np.int64)
        self.max_out = np.asarray(workload.output_tokens, dtype=np.int64)
        too_long = np.flatnonzero(self.prompt >= self.mml)
        if too_long.size:
            i = int(too_long[0])
            raise SimInputError(
                f"request {workload.request_ids[i]!r} has a {int(self.prompt[i])}-token prompt, "
                f"not shorter than max_model_len={self.mml} (vLLM rejects it)"
                + (f"; {too_long.size} such requests" if too_long.size > 1 else "")
            )
        if prepared is None:
            prepared = prepare(workload, config.policy, self.timed)
        self.arrival_order = prepared.arrival_order
        self.arrival_sorted = prepared.arrival_sorted
        self.arrival_ptr = 0
        self.policy = prepared.policy
        self.closed = workload.concurrency  # closed loop: sim/closed_loop.py
        if self.closed is not None:
            self.arrival_sorted = self.arrival_sorted.copy()  # filled in as requests finish
            self.unsent = min(self.closed, n)

        self.num_tokens = self.prompt.copy()
        self.computed = np.zeros(n, dtype=np.int64)
        self.num_output = np.zeros(n, dtype=np.int64)
        self.blocks = np.zeros(n, dtype=np.int64)
        self.status = np.zeros(n, dtype=np.int8)
        self.num_preemptions = np.zeros(n, dtype=np.int64)
        self.recomputed = np.zeros(n, dtype=np.int64)
        self.hit_tokens = np.zeros(n, dtype=np.int64)
        self.first_sched = np.zeros(n, dtype=np.int64)
        self.first_token = np.zeros(n, dtype=np.int64)
        self.finish = np.zeros(n, dtype=np.int64)
        self.sched = np.zeros(n, dtype=np.int64)  # tokens scheduled in the current step
        # async scheduling (sim/async_sched.py): placeholders, outputs in flight, lost work
        self.ph = np.zeros(n, dtype=np.int64)
        self.lost = np.zeros(n, dtype=np.int64)
        self.pending = _EMPTY
        self.final_output = (0, _EMPTY)
        self.running = _EMPTY
        self.waiting = _EMPTY
        self.free = self.usable
        self.num_finished = 0
        # admission control (sim/admission.py): refused requests never run
        self.rejected = np.zeros(n, dtype=np.int8)
        self.num_rejected = 0
        self.num_admitted = 0
        self.admitted_prompt = 0
        # a gateway's queue timeout (sim/gateway.py): never-started requests cut off in time
        self.timeout_s = config.gateway_timeout_s
        self.timed_out = np.zeros(n, dtype=bool)
        self.num_timed_out = 0
        if self.timeout_s is not None:
            if not self.timed or self.closed is not None:
                raise SimInputError(
                    "gateway_timeout_s needs a timed run of an open-loop workload (arrivals in "
                    "seconds)"
                )
            self.deadline_s = np.asarray(workload.arrival_s, dtype=np.float64) + self.timeout_s
        if config.admission_control and self.closed is not None:
            raise SimInputError(
                "admission limits apply to open-loop workloads (a concurrency workload's clients "
                "would resend a refused request at once)"
            )
        self.pool = (
            PrefixCachePool(
                config.num_gpu_blocks,
                self.bs,
                np.asarray(workload.prefix_id, dtype=np.int64),
                np.asarray(workload.prefix_tokens, dtype=np.int64),
                hashing=config.enable_prefix_caching,
            )
            if config.enable_prefix_caching or trace_blocks
            else None
        )
        self.traced = BlockTraceLog() if trace_blocks else None
        # vLLM's PrefixCacheStats so far (sim/run.py): queries and hits of requests never
        # preempted, then of preempted ones
        self.lookups = [0, 0, 0, 0]
        self._stop = None  # the arrival that ends the quiet run being made (sim/quiet.py)

        self.step = 0  # number of steps done
        self.now_s = 0.0
        self.log = _StepLog()
        self.tok_req: list[np.ndarray] = []
        self.tok_step: list[np.ndarray] = []
        self.detail: DetailLog | None = DetailLog() if self.record_detail else None
        self.arrived_now = _EMPTY
        self.seconds = 0.0  # spent in `advance` so far

    # ----------------------------------------------------------------------------- arrivals
    def _next_arrival(self):
        if self.arrival_ptr >= self.n:
            return None
        return self.arrival_sorted[self.arrival_ptr]

    def _add_arrivals(self, upto) -> None:
        """Add every request whose arrival key is <= upto (list order within a tie)."""
        end = int(np.searchsorted(self.arrival_sorted, upto, side="right"))
        if end > self.arrival_ptr:
            new = self.arrival_order[self.arrival_ptr : end]
            # Arrivals join in list order (stable sort keeps list order within one key).
            if self.cfg.admission_control:
                new = self._admission(new, upto)
            self.arrival_ptr = end
            self.status[new] = WAITING
            self.waiting = self.policy.enqueue(self.waiting, new)
            self.arrived_now = new
        else:
            self.arrived_now = _EMPTY

    def _admission(self, new: np.ndarray, upto) -> np.ndarray:
        """vLLM's admission limits (sim/admission.py) on this step's arrivals; returns those let
        in. An arrival sees the outputs processed before it: in a timed run one that came
        during the last step does not see that step's, one at this very moment (or in a step
        replay, at the step's start) does."""
        if self.timed:
            during = int(np.searchsorted(self.arrival_sorted[self.arrival_ptr :], upto, "left"))
            parts = ((new[:during], self.step - 1), (new[during:], self.step))
        else:
            parts = ((new, self.step),)
        kept = [part[: self._admit_part(part, seen)] for part, seen in parts if part.shape[0]]
        return np.concatenate(kept) if kept else _EMPTY

    def _admit_part(self, part: np.ndarray, seen: int, outputs=None) -> int:
        """Check the arrivals `part` (one state: the outputs of steps 1..seen) against the
        limits, count the admitted ones in and record why the others are refused; returns how
        many of the first are admitted (sim/window.py's checked windows call it too, with
        `outputs`: the finishes and first tokens by step, `_outputs_by_step`)."""
        taken, reason = self._check_admission(part, seen, outputs)
        self.rejected[part[taken:]] = reason
        self.num_rejected += part.shape[0] - taken
        self.num_admitted += taken
        self.admitted_prompt += int(self.prompt[part[:taken]].sum())
        return taken

    def _check_admission(self, ids: np.ndarray, seen: int, outputs=None) -> tuple[int, int]:
        """`admit_in_order` for the arrivals `ids` against the outputs of steps 1..seen: the
        requests let in and not finished by then, the prompts without a first token."""
        if outputs is None:
            done = int(np.count_nonzero((self.finish > 0) & (self.finish <= seen)))
            first = (self.first_token > 0) & (self.first_token <= seen)
            first_prompt = int(self.prompt[first].sum())
        else:
            fin, ft, cum = outputs
            done = int(np.searchsorted(fin, seen, side="right"))
            first_prompt = int(cum[np.searchsorted(ft, seen, side="right")])
        return admit_in_order(
            self.prompt[ids],
            self.num_admitted - done,
            self.admitted_prompt - first_prompt,
            self.cfg.max_num_queued_reqs,
            self.cfg.max_num_queued_tokens,
        )

    def _outputs_by_step(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The finish steps in order, the first-token steps in order and the prompt tokens of
        the requests with a first token by then (a cumulative sum, 0 first): what
        `_check_admission` reads, for many checks against one state."""
        fin = np.sort(self.finish[self.finish > 0])
        has = np.flatnonzero(self.first_token > 0)
        order = np.argsort(self.first_token[has], kind="stable")
        ft = self.first_token[has][order]
        cum = np.concatenate(([0], np.cumsum(self.prompt[has][order])))
        return fin, ft, cum

    def _surely_admitted(self, ptr: int, count: int) -> int:
        """How many of the `count` arrivals from position `ptr` of the arrival order vLLM's
        limits let in whatever happens before they come: finishes and first tokens only lower
        the counts, so the counts of every output recorded so far bound those any arrival
        after now sees. An arrival not after now (it came during the last step) gets none."""
        if self.arrival_sorted[ptr] <= self.now_s:
            return 0
        return self._check_admission(self.arrival_order[ptr : ptr + count], self.step)[0]

    # ----------------------------------------------------------------------------- one step
    def _sort_waiting(self) -> None:
        """A dynamic policy's order of the waiting queue, from the prefix cache as it is now
        (sorting twice on an unchanged cache changes nothing: the sort is stable)."""
        if self.policy.dynamic and self.pool is not None and self.waiting.shape[0] > 1:
            W = self.waiting
            self.waiting = self.policy.reorder(W, self.pool.hit_blocks(W, self.num_tokens[W]))

    def _schedule(self):
        """One `schedule()` call. Returns (scheduled requests, tokens, preempted, admitted)."""
        self._sort_waiting()
        R = self.running
        W = self.waiting
        thr_on = self.thr > 0 and (R.shape[0] + W.shape[0]) > 1
        budget = self.budget_max
        free = self.free
        sched = self.sched
        computed = self.computed
        blocks = self.blocks
        bs = self.bs
        pool = self.pool
        preempted: list[int] = []
        pos = 0
        # ---------------- RUNNING loop (a3), vectorized between preemption events
        while pos < R.shape[0] and budget > 0:
            idx = R[pos:]
            comp = computed[idx]
            if self.async_sched:
                w = self._async_new_tokens(idx, comp)
            else:
                w = self.num_tokens[idx] - comp
            if thr_on:
                np.minimum(w, self.thr, out=w)
            np.minimum(w, self.mml - comp - 1, out=w)
            np.maximum(w, 0, out=w)
            cs = np.cumsum(w)
            c = np.clip(budget - (cs - w), 0, w)
            need = cdiv(comp + c, bs) - blocks[idx]
            need[c == 0] = 0
            cn = np.cumsum(need)
            fail = cn > free
            if not fail[-1]:
                sched[idx] = c
                blocks[idx] += need
                if pool is not None:
                    self._pool_alloc(idx, c, need)
                budget -= int(c.sum())
                free -= int(cn[-1])
                break
            f = int(np.argmax(fail))
            if f:
                head = idx[:f]
                sched[head] = c[:f]
                blocks[head] += need[:f]
                if pool is not None:
                    self._pool_alloc(head, c[:f], need[:f])
                budget -= int(c[:f].sum())
                free -= int(cn[f - 1])
            r = int(idx[f])
            cur = pos + f
            c_r = int(c[f])
            need_r = int(need[f])
            while True:  # the preemption loop (c1-c4), one iteration per victim
                vp = self.policy.victim(R)
                v = int(R[vp])
                R = np.delete(R, vp)
                if pool is None:
                    free += int(blocks[v])
                else:
                    pool.free(v)
                    free = pool.num_free
                blocks[v] = 0
                self.recomputed[v] += computed[v]
                self.lost[v] = computed[v]
                computed[v] = 0
                self.ph[v] = 0  # an output in flight for v is stale now (g6)
                if vp < cur:  # already scheduled in this step: give its tokens back (f1)
                    budget += int(sched[v])
                    sched[v] = 0
                    cur -= 1
                self.num_preemptions[v] += 1
                self.status[v] = WAITING
                preempted.append(v)
                if v == r:  # preempted itself: the cursor stays, the list moved up
                    pos = cur
                    break
                if need_r <= free:
                    sched[r] = c_r
                    blocks[r] += need_r
                    if pool is not None:
                        self._pool_alloc(np.array([r]), np.array([c_r]), np.array([need_r]))
                    free -= need_r
                    budget -= c_r
                    pos = cur + 1
                    break
        # ---------------- WAITING loop (a4), only if nobody was preempted
        admitted = _EMPTY
        if not preempted and W.shape[0] and budget > 0 and R.shape[0] < self.max_seqs:
            kmax = min(W.shape[0], self.max_seqs - R.shape[0], budget)
            if pool is None:
                f, c, alloc = self._admit_counts(W[:kmax], R.shape[0], budget, free, thr_on)
                admitted = W[:f]
                if f:
                    sched[admitted] = c
                    blocks[admitted] = alloc
                    budget -= int(c.sum())
                    free -= int(alloc.sum())
            else:
                admitted, budget, free = self._admit_pool(W[:kmax], R.shape[0], budget, thr_on)
            if admitted.shape[0]:
                self.status[admitted] = RUNNING
                R = np.concatenate((R, admitted))
                W = W[admitted.shape[0] :]
                fs = self.first_sched[admitted]
                self.first_sched[admitted] = np.where(fs == 0, self.step + 1, fs)
        pre = np.array(preempted, dtype=np.int64) if preempted else _EMPTY
        if preempted:
            W = self.policy.requeue(W, pre)
        self.running = R
        self.waiting = W
        self.free = free if pool is None else pool.num_free
        return pre, admitted

    def _admit_counts(self, cand, num_running, budget, free, thr_on):
        """Waiting loop without prefix caching: how many of `cand` (queue order) are admitted."""
        bs = self.bs
        nt = self.num_tokens[cand]
        nn = nt.copy()  # num_computed_tokens is 0 for every waiting request here
        if thr_on:
            np.minimum(nn, self.thr, out=nn)
        cs = np.cumsum(nn)
        left = budget - (cs - nn)  # budget left when each candidate is reached
        if self.chunked:
            ok = left > 0
            c = np.minimum(nn, left)
        else:
            ok = nn <= left  # head-of-line: a prompt that does not fit ends the loop
            c = nn
        c = np.maximum(c, 0)
        alloc = cdiv(c, bs)
        free_before = free - (np.cumsum(alloc) - alloc)
        check = cdiv(nt, bs) if self.reserve_full else alloc
        wm = np.full(cand.shape[0], self.wm_blocks, dtype=np.int64)
        if num_running == 0:
            wm[0] = 0  # the watermark applies only while someone runs (b4, f4)
        ok &= (check + wm <= free_before) & (alloc + wm <= free_before)
        f = cand.shape[0] if ok.all() else int(np.argmin(ok))
        return f, c[:f], alloc[:f]

    def _admit_pool(self, cand, num_running, budget, thr_on):
        """Waiting loop with prefix caching: one admission at a time through the block pool."""
        pool = self.pool
        bs = self.bs
        out: list[int] = []
        for r in cand.tolist():
            if budget <= 0:
                break
            nt = int(self.num_tokens[r])
            hits, evictable = pool.lookup(r, nt)
            hit_tok = len(hits) * bs
            nn = nt - hit_tok
            if thr_on:
                nn = min(nn, self.thr)
            if not self.chunked and nn > budget:
                break
            c = min(nn, budget)
            wm = self.wm_blocks if (num_running + len(out)) > 0 else 0
            free = pool.num_free
            alloc = cdiv(hit_tok + c, bs) - len(hits)
            if self.reserve_full and cdiv(nt, bs) - len(hits) + evictable + wm > free:
                break
            if alloc + evictable + wm > free:
                break
            if pool.hashing:  # vLLM records the lookup at admission only (PrefixCacheStats)
                i = 2 if self.num_preemptions[r] else 0
                self.lookups[i] += nt
                self.lookups[i + 1] += hit_tok
            pool.take_hits(r, hits)
            pool.allocate(r, alloc)
            pool.cache(r, (hit_tok + c) // bs)
            self.computed[r] = hit_tok
            self.hit_tokens[r] += hit_tok
            self.blocks[r] = len(hits) + alloc
            self.sched[r] = c
            budget -= c
            out.append(r)
        return np.array(out, dtype=np.int64), budget, pool.num_free

    def _pool_alloc(self, idx, c, need, full=None) -> None:
        """Mirror allocations in the prefix-cache pool, request by request: `c` tokens and `need`
        new blocks for each of `idx` (a step's running loop, or a quiet run's m decodes).

        Blocks are hashed up to `full` full blocks: by default those of the tokens computed by the
        end of the step that are known (vLLM caps at `request.num_tokens`, which under async
        scheduling leaves out the placeholders). Only requests that get blocks or hash a block
        are visited: a step that does neither changes nothing in the pool."""
        pool = self.pool
        comp = self.computed[idx]
        if full is None:
            full = np.minimum(comp + c, self.num_tokens[idx]) // self.bs
        if not pool.hashing:  # block ids only (sim/blocks.py): allocate, hash nothing
            for r, nr in zip(idx[need > 0].tolist(), need[need > 0].tolist(), strict=True):
                pool.allocate(r, nr)
            return
        touch = np.flatnonzero((c > 0) & ((need > 0) | (full > pool.num_cached[idx])))
        for r, nr, nf in zip(
            idx[touch].tolist(), need[touch].tolist(), full[touch].tolist(), strict=True
        ):
            if nr:
                pool.allocate(r, nr)
            pool.cache(r, nf)

    def _general_step(self) -> None:
        """One full step: schedule, update, sample, stop, free. Appends one record.

        Synchronous: the output of this step is processed at once. Async (SCHEDULER g): the
        sampled requests get a placeholder and the output processed is the previous step's,
        so the record's finishes and KV after output belong to the previous step (async_sched.py
        moves them back one row at the end of the run)."""
        k = self.step + 1
        arrived = self.arrived_now
        pre, admitted = self._schedule()
        R = self.running
        W = self.waiting
        sched = self.sched
        tok = sched[R]
        mask = tok > 0
        scheduled = R[mask]
        tok = tok[mask]
        ctx = self.computed[scheduled]
        used_after_schedule = self.usable - self.free
        kv_read = int(ctx.sum())
        attn = int((tok * ctx + tok * (tok + 1) // 2).sum())
        total = int(tok.sum())
        self.computed[scheduled] = ctx + tok
        sched[scheduled] = 0
        if self.async_sched:
            sampled, last = self._async_sample(scheduled)
            fin = self._process_output(k - 1)
            self.pending = sampled
        else:
            done = self.computed[scheduled] == self.num_tokens[scheduled]
            sampled = scheduled[done]
            self.num_output[sampled] += 1
            self.num_tokens[sampled] += 1
            stop = (self.num_output[sampled] >= self.max_out[sampled]) | (
                self.num_tokens[sampled] >= self.mml
            )
            fin = last = sampled[stop]
            if fin.shape[0]:
                self._finish(fin, k)
        ft = self.first_token[sampled]
        self.first_token[sampled] = np.where(ft == 0, k, ft)
        # time
        start_s = self.now_s
        ms = float("nan")
        if self.timed:
            price = self._pricer()  # the cost model in Python numbers, the same times
            shape = (int(total), int(scheduled.shape[0]), int(kv_read), int(attn))
            if price is not None:
                ms = float(price(*shape))
            else:
                ms = float(self.timer(*(np.array([x]) for x in shape))[0])
            self.now_s = start_s + ms / 1e3
            if self.closed is not None and last.shape[0]:
                self._release(last.shape[0], self.now_s)
        if sampled.shape[0]:
            self.tok_req.append(sampled)
            self.tok_step.append(np.full(sampled.shape[0], k, dtype=np.int64))
        self.log.add_row(
            (
                total,
                scheduled.shape[0],
                kv_read,
                attn,
                R.shape[0],
                W.shape[0],
                self.usable - self.free,
                pre.shape[0],
                fin.shape[0],
            ),
            start_s,
            ms,
        )
        if self.detail is not None:
            resumed_mask = self.num_preemptions[admitted] > 0
            self.detail.append(
                StepDetail(
                    step=k,
                    arrived=arrived,
                    scheduled_req=scheduled,
                    scheduled_tokens=tok,
                    new=admitted[~resumed_mask],
                    resumed=admitted[resumed_mask],
                    preempted=pre,
                    sampled=sampled,
                    finished=fin,
                    running=R,
                    waiting=W,
                    kv_blocks_used_after_schedule=used_after_schedule,
                    kv_blocks_used=self.usable - self.free,
                )
            )
        self.step = k
        if self.traced is not None:  # the end of the turn: this schedule and output processed
            used = self.usable - self.pool.num_free
            self.traced.add(self.pool, self.blocks, self.computed, used, self.lookups)
        if fin.shape[0] and not self.async_sched:
            self.running = R[self.status[R] == RUNNING]
        if total == 0 and R.shape[0] == 0 and W.shape[0] and pre.shape[0] == 0:
            self._deadlock()

    def _finish(self, fin: np.ndarray, k: int) -> None:
        self.status[fin] = FINISHED
        self.finish[fin] = k
        self.free += int(self.blocks[fin].sum())
        self.blocks[fin] = 0
        if self.pool is not None:
            for r in fin.tolist():
                self.pool.free(r, finished=True)
            self.free = self.pool.num_free
        self.num_finished += fin.shape[0]

    def _deadlock(self) -> None:
        """Nothing runs and the head of the queue cannot be admitted into an empty pool."""
        r = int(self.waiting[0])
        need = int(cdiv(self.num_tokens[r], self.bs))
        raise SimInputError(
            f"request {self.wl.request_ids[r]!r} needs {need} KV blocks for its "
            f"{int(self.num_tokens[r])} tokens but the pool has {self.usable} usable blocks: "
            "it can never be scheduled"
        )

    # ----------------------------------------------------------------------------- the loop
    def run(self) -> Run:
        """Run to the end (or to max_steps with stop_at_max_steps); the Run."""
        self.advance()
        t0 = time.perf_counter()
        if self.async_sched:
            self._async_final_output()
        return self._result(self.seconds + time.perf_counter() - t0)

    def hold(self, r: int) -> None:
        """Keep request r, the last to arrive, from arriving until `pin_arrival` gives it a
        time: for a run whose arrival the steps before it decide (sim/scenarios.py
        `timed_run`). Call it before the run starts; r's workload arrival orders it only."""
        if not (self.timed and self.step == 0 and self.n and int(self.arrival_order[-1]) == r):
            raise ValueError(f"request {r} is not the last arrival of a timed run not started")
        self.arrival_sorted = self.arrival_sorted.copy()  # it may be a sweep's shared array
        self.arrival_sorted[-1] = np.inf

    def pin_arrival(self, r: int, arrival_s: float) -> None:
        """Request r, held back so far (`hold`), arrives at `arrival_s`, which must be no
        earlier than the arrivals before it: for a run paused with `advance` at the step where
        r is to arrive."""
        pos = self.arrival_ptr
        ok = (
            pos < self.n
            and int(self.arrival_order[pos]) == r
            and np.isinf(self.arrival_sorted[pos])
        )
        if not ok or (pos and arrival_s < self.arrival_sorted[pos - 1]):
            raise ValueError(f"request {r} is not a held-back next arrival for {arrival_s} s")
        self.arrival_sorted[pos] = arrival_s
        arrivals = np.array(self.wl.arrival_s, dtype=np.float64)
        arrivals[r] = arrival_s
        self.wl = dataclasses.replace(self.wl, arrival_s=arrivals)

    def advance(self, until_step: int | None = None) -> None:
        """The step loop: until every request is done, or max_steps with stop_at_max_steps, or
        (timed) until nothing runs, nothing waits and no request is due to arrive (a held-back
        request, `pin_arrival`); with `until_step`, also once that many steps are done (no
        window or quiet run goes past it). It can be called again to go on."""
        cap = self.max_steps, self.stop_at_max_steps
        if until_step is not None and until_step < self.max_steps:
            self.max_steps, self.stop_at_max_steps = until_step, True
        try:
            self._loop()
        finally:
            self.max_steps, self.stop_at_max_steps = cap

    def _loop(self) -> None:
        t0 = time.perf_counter()
        n = self.n
        report_at = t0 + PROGRESS_EVERY_S
        while self.num_finished + self.num_rejected + self.num_timed_out < n:
            if self.progress is not None and time.perf_counter() >= report_at:
                self.progress(self.num_finished + self.num_rejected + self.num_timed_out, n)
                report_at = time.perf_counter() + PROGRESS_EVERY_S
            if self.step >= self.max_steps:
                if self.stop_at_max_steps:
                    break  # the recording harness's cap: stop, leave the rest unfinished
                raise SimInputError(
                    f"the run did not finish within max_steps={self.max_steps} steps "
                    f"({n - self.num_finished - self.num_rejected - self.num_timed_out} requests "
                    "unfinished)"
                )
            if self.timed and self.running.shape[0] == 0 and self.waiting.shape[0] == 0:
                nxt = float(self._next_arrival())
                if np.isinf(nxt):
                    break  # idle, and the rest are held back until pinned
                self.now_s = max(self.now_s, nxt)
            if self.batch_quiet_runs and self.pool is None:
                if self._window():
                    continue
                self._add_arrivals(self.now_s if self.timed else self.step + 1)
                if self._expire():
                    continue  # nothing left to run now: the loop's top jumps to the next arrival
                self._general_step()
                continue
            self._add_arrivals(self.now_s if self.timed else self.step + 1)
            if self._expire():
                continue
            quiet = self.batch_quiet_runs
            quiet = quiet and not (self.timeout_s is not None and self._expiring().shape[0])
            # a dynamic policy sorts the queue by the cache's hits: sorted now, the order holds
            # through a quiet run that evicts no hashed block (no waiting request's hits change)
            keep_hashes = bool(self.policy.dynamic and self.waiting.shape[0])
            if quiet and keep_hashes:
                self._sort_waiting()
            m = self._quiet_length(keep_hashes) if quiet else 0
            if m >= 2 or (m >= 1 and self.running.shape[0] == 0):
                self._quiet_run(m)
            else:
                self._general_step()
        self.seconds += time.perf_counter() - t0

    def _result(self, seconds: float) -> Run:
        cols, start_s, step_ms = self.log.arrays()
        if self.async_sched:
            self._async_shift(cols)
        # int32 as the pieces are joined (one copy, not an int64 join and a cast)
        tok_req, tok_step = (
            np.concatenate(parts, dtype=np.int32, casting="unsafe") if parts else _EMPTY32
            for parts in (self.tok_req, self.tok_step)
        )
        nan = np.full(self.n, np.nan)
        if self.timed:
            end_s = start_s + step_ms / 1e3
            if self.closed is not None:  # the realized arrivals (NaN: never sent)
                arrival_s = np.full(self.n, np.nan)
                arrival_s[self.arrival_order] = self.arrival_sorted
                arrival_s[np.isinf(arrival_s)] = np.nan
            else:
                arrival_s = np.asarray(self.wl.arrival_s, dtype=np.float64)
            first_token_s = np.where(self.first_token > 0, end_s[self.first_token - 1], np.nan)
            finish_s = np.where(self.finish > 0, end_s[self.finish - 1], np.nan)
        else:
            arrival_s, first_token_s, finish_s = nan, nan.copy(), nan.copy()
        return Run(
            config=self.cfg,
            workload=self.wl,
            kv_blocks_usable=self.usable,
            num_steps=self.step,
            timed=self.timed,
            step_start_s=start_s,
            step_ms=step_ms,
            token_req=tok_req,
            token_step=tok_step,
            first_scheduled_step=self.first_sched,
            first_token_step=self.first_token,
            finish_step=self.finish,
            num_preemptions=self.num_preemptions,
            num_output_tokens=self.num_output,
            num_recomputed_tokens=self.recomputed,
            num_prefix_hit_tokens=self.hit_tokens,
            arrival_s=arrival_s,
            first_token_s=first_token_s,
            finish_s=finish_s,
            scheduler_seconds=seconds,
            detail=self.detail,
            rejected=self.rejected,
            timed_out=self.timed_out if self.timeout_s is not None else None,
            blocks=None if self.traced is None else self.traced.trace(self.cfg),
            prefix_cache=PrefixCacheStats(*self.lookups),
            **cols,
        )


def run_steps(
    config: SchedulerConfig,
    workload: Workload,
    *,
    record_detail: bool = False,
    max_steps: int | None = None,
) -> Run:
    """Replay a workload whose arrivals are step numbers (`arrival_step`), step for step.

    Step k adds the requests with arrival_step == k, then runs one schedule() and one output
    update; idle steps count. The run ends after the step in which the last request finishes.
    `max_steps` (default 5,000,000) is a safety cap: exceeding it raises SimInputError.
    """
    return Engine(config, workload, record_detail=record_detail, max_steps=max_steps).run()
