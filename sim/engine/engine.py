"""`Engine`: one run of vLLM's scheduler on the compiled step loop, and its `Run`.

It checks the inputs, builds the state (sim/engine/state.py), calls the loop
(sim/engine/kernel.py) until the run is over, growing a log whenever the loop asks, and reads the
arrays back into a `Run` (sim/run.py). Timed runs price their steps with the cost model's tables
inside the loop; any other step-time model (a Python function) is asked step by step. A run can
be paused after a number of steps (`advance`), and the last arrival held back and given its time
later (`hold`, `pin_arrival`: a request that arrives "just before step k" whatever the steps
before it cost, sim/scenarios.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np

from sim.blocks import BlockTrace
from sim.config import SchedulerConfig
from sim.engine import kernel
from sim.engine import layout as L
from sim.engine.detail import FlatDetail
from sim.engine.prepare import Prepared, prepare
from sim.engine.pricing import Tables, no_pricing, price_tables
from sim.engine.state import build_state
from sim.errors import SimInputError
from sim.kv import cdiv
from sim.run import PrefixCacheStats, Run
from sim.workload import Workload

DEFAULT_MAX_STEPS = 5_000_000
PROGRESS_EVERY_S = 0.25  # how often a long run calls its `progress(done, total)` (wall time)

# A step-time model for timed runs: arrays over steps in, step durations in ms out.
StepTimer = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _check_inputs(config: SchedulerConfig, workload: Workload, timed: bool) -> None:
    if not isinstance(config, SchedulerConfig):
        raise SimInputError("config must be a SchedulerConfig")
    if not isinstance(workload, Workload):
        raise SimInputError("workload must be a sim.workload.Workload")
    prompt = np.asarray(workload.prompt_tokens, dtype=np.int64)
    too_long = np.flatnonzero(prompt >= config.max_model_len)
    if too_long.size:
        i = int(too_long[0])
        raise SimInputError(
            f"request {workload.request_ids[i]!r} has a {int(prompt[i])}-token prompt, "
            f"not shorter than max_model_len={config.max_model_len} (vLLM rejects it)"
            + (f"; {too_long.size} such requests" if too_long.size > 1 else "")
        )
    closed = workload.concurrency is not None
    if config.gateway_timeout_s is not None and (not timed or closed):
        raise SimInputError(
            "gateway_timeout_s needs a timed run of an open-loop workload (arrivals in seconds)"
        )
    if config.admission_control and closed:
        raise SimInputError(
            "admission limits apply to open-loop workloads (a concurrency workload's clients "
            "would resend a refused request at once)"
        )


class Engine:
    """One run. Use `run_steps` / `sim.timed.run_timed`, or this for a paused run."""

    def __init__(
        self,
        config: SchedulerConfig,
        workload: Workload,
        *,
        timer: StepTimer | None = None,
        record_detail: bool = False,
        max_steps: int | None = None,
        stop_at_max_steps: bool = False,
        prepared: Prepared | None = None,
        trace_blocks: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.timed = timer is not None
        _check_inputs(config, workload, self.timed)
        self.cfg = config
        self.wl = workload
        self.timer = timer
        self.progress = progress
        self.max_steps = DEFAULT_MAX_STEPS if max_steps is None else int(max_steps)
        if prepared is None:
            prepared = prepare(workload, config.policy, self.timed)
        self.prepared = prepared
        dep = getattr(timer, "deployment", None)
        self.tables: Tables = no_pricing()
        if dep is not None:  # the cost model's own times, priced inside the loop
            overlap = bool(getattr(timer, "overlap", False))
            self.tables = price_tables(
                dep, config.max_num_batched_tokens, config.max_num_seqs, overlap=overlap
            )
        self.state = build_state(
            config,
            workload,
            prepared.policy,
            prepared.arrival_order,
            prepared.arrival_sorted,
            timed=self.timed,
            max_steps=self.max_steps,
            stop_at_max_steps=stop_at_max_steps,
            detail=record_detail or trace_blocks,
            trace_blocks=trace_blocks,
            price_callback=self.timed and dep is None,
        )
        self.seconds = 0.0  # spent in the loop so far

    # ------------------------------------------------------------------ the state, read out
    @property
    def step(self) -> int:
        """Steps done."""
        return int(self.state.st[L.S_STEP])

    @property
    def num_finished(self) -> int:
        """Requests finished so far."""
        return int(self.state.st[L.S_FINISHED])

    @property
    def now_s(self) -> float:
        """The clock of a timed run: the end of the last step (or an idle jump)."""
        return float(self.state.stf[0])

    # ------------------------------------------------------------------ the loop
    def _call(self, until: int) -> int:
        """The loop until `until` steps, growing logs and pricing steps as it asks."""
        s = self.state
        lin, lm, g, pc = self.tables
        while True:
            code = kernel.run_loop(
                s.req, s.cfg, s.cfgf, s.blk, s.hmap, s.table, s.st, s.stf, s.run, s.wait,
                s.pend, s.log, s.tlog, s.tok, s.det, s.didx, s.trc, s.tidx, lin, lm, g, pc,
                s.arr_order, s.arr_key, s.deadline, until,
            )  # fmt: skip
            if code == L.NEED_LOG:
                s.grow_log()
                if s.cfg[L.C_DETAIL]:
                    s.grow_detail()
            elif code == L.NEED_DET:
                s.grow_detail()
            elif code == L.NEED_TRC:
                s.grow_trace()
            elif code == L.NEED_TOK:
                s.grow_tok()
            elif code == L.NEED_PRICE:
                row = int(s.st[L.S_STEP]) - 1
                shape = (s.log[i, row : row + 1].copy() for i in (L.L_TOKENS, L.L_SEQS,
                         L.L_KV_READ, L.L_ATTN))  # fmt: skip
                ms = float(np.asarray(self.timer(*shape), dtype=np.float64)[0])
                kernel.apply_time(s.cfg, s.st, s.stf, s.tlog, s.arr_key, ms)
            else:
                return code

    def _done(self) -> int:
        st = self.state.st
        return int(st[L.S_FINISHED] + st[L.S_REJECTED] + st[L.S_TIMED_OUT])

    def advance(self, until_step: int | None = None) -> None:
        """The step loop: until every request is done, or max_steps with stop_at_max_steps,
        or (timed) until nothing runs, nothing waits and the next request is held back
        (`hold`); with `until_step`, also once that many steps are done. Call it again to go
        on."""
        t0 = time.perf_counter()
        end = self.max_steps + 1 if until_step is None else int(until_step)
        try:
            code = self._call(end) if self.progress is None else self._with_progress(end)
        finally:
            self.seconds += time.perf_counter() - t0
        self._raise_for(code)

    def _with_progress(self, end: int) -> int:
        """The loop in slices of steps, reporting (requests done, requests in all) about every
        PROGRESS_EVERY_S seconds (every step if that is 0)."""
        every_s = PROGRESS_EVERY_S
        slice_steps = 1 if every_s <= 0 else 256
        last = time.perf_counter()
        n = self.wl.num_requests
        while True:
            t = time.perf_counter()
            code = self._call(min(self.step + slice_steps, end))
            if code != L.STOPPED or self.step >= min(end, self.max_steps):
                return code
            now = time.perf_counter()
            if now - last >= every_s:
                self.progress(self._done(), n)
                last = now
            if every_s > 0 and now - t < every_s / 8:
                slice_steps = min(slice_steps * 2, 1 << 16)

    def _raise_for(self, code: int) -> None:
        if code == L.DEADLOCK:
            s = self.state
            r = int(s.st[L.S_ERROR_REQ])
            nt = int(s.req[L.NUM_TOKENS, r])
            raise SimInputError(
                f"request {self.wl.request_ids[r]!r} needs {int(cdiv(nt, self.cfg.block_size))} "
                f"KV blocks for its {nt} tokens but the pool has {self.cfg.kv_blocks_usable} "
                "usable blocks: it can never be scheduled"
            )
        if code == L.OUT_OF_STEPS:
            left = self.wl.num_requests - self._done()
            raise SimInputError(
                f"the run did not finish within max_steps={self.max_steps} steps ({left} "
                "requests unfinished)"
            )

    def run(self) -> Run:
        """Run to the end (or to max_steps with stop_at_max_steps); the Run."""
        self.advance()
        t0 = time.perf_counter()
        s = self.state
        fin_last = np.zeros(0, dtype=np.int64)
        if self.cfg.async_scheduling:  # the last output is processed once more (g1)
            fin = np.empty(max(self.wl.num_requests, 1), dtype=np.int64)
            count = kernel.final_output(
                s.req, s.cfg, s.blk, s.hmap, s.table, s.st, s.log, s.run, s.wait, s.pend, fin
            )
            fin_last = fin[:count].copy()
        self.seconds += time.perf_counter() - t0
        return self._result(fin_last)

    # ------------------------------------------------------------------ a held-back arrival
    def hold(self, r: int) -> None:
        """Keep request r, the last to arrive, from arriving until `pin_arrival` gives it a
        time: for a run whose arrival the steps before it decide (sim/scenarios.py
        `timed_run`). Call it before the run starts; r's workload arrival orders it only."""
        order = self.prepared.arrival_order
        if not (self.timed and self.step == 0 and order.shape[0] and int(order[-1]) == r):
            raise ValueError(f"request {r} is not the last arrival of a timed run not started")
        self.state.arr_key[-1] = np.inf

    def pin_arrival(self, r: int, arrival_s: float) -> None:
        """Request r, held back so far (`hold`), arrives at `arrival_s`, which must be no
        earlier than the arrivals before it: for a run paused with `advance` at the step where
        r is to arrive."""
        pos = int(self.state.st[L.S_ARRIVAL_PTR])
        key = self.state.arr_key
        ok = (
            pos < self.wl.num_requests
            and int(self.prepared.arrival_order[pos]) == r
            and np.isinf(key[pos])
        )
        if not ok or (pos and arrival_s < key[pos - 1]):
            raise ValueError(f"request {r} is not a held-back next arrival for {arrival_s} s")
        key[pos] = arrival_s
        arrivals = np.array(self.wl.arrival_s, dtype=np.float64)
        arrivals[r] = arrival_s
        self.wl = dataclasses.replace(self.wl, arrival_s=arrivals)

    # ------------------------------------------------------------------ the Run
    def _detail(self, k: int, fin_last: np.ndarray) -> FlatDetail | None:
        s = self.state
        if not s.cfg[L.C_DETAIL]:
            return None
        final = None
        if self.cfg.async_scheduling:
            final = (fin_last, self.cfg.kv_blocks_usable - int(s.st[L.S_FREE]))
        return FlatDetail(
            s.det[: int(s.st[L.S_DET_LEN])].copy(),
            s.didx[:, :k].copy(),
            s.log[L.L_KV_AFTER_SCHEDULE, :k].copy(),
            s.log[L.L_KV_USED, :k].copy(),
            k,
            final,
        )

    def _block_trace(self, k: int) -> BlockTrace:
        """The run's block tables per step (sim/blocks.py), read out of the flat snapshots."""
        s = self.state
        n = s.req.shape[1]
        trc, tidx = s.trc, s.tidx[:, :k]
        # each snapshot opens with the 4 prefix-cache counts, n lengths and n computed counts
        starts = tidx[L.TR_IDS] - 2 * n - 4
        cols = np.arange(n)
        counts = trc[starts[:, None] + np.arange(4)].reshape(k, 4)
        lens = trc[starts[:, None] + 4 + cols].astype(np.int32).reshape(k, n)
        computed = trc[starts[:, None] + 4 + n + cols].astype(np.int32).reshape(k, n)
        bounds = zip(tidx[L.TR_IDS], tidx[L.TR_CACHED], tidx[L.TR_END], strict=True)
        ids, cached = [], []
        for a, b, c in bounds:
            ids.append(trc[a:b].astype(np.int32))
            cached.append(trc[b:c].astype(np.int32))
        return BlockTrace(
            num_gpu_blocks=self.cfg.num_gpu_blocks,
            block_size=self.cfg.block_size,
            table_lens=lens,
            table_ids=tuple(ids),
            cached_free=tuple(cached),
            num_computed_tokens=computed,
            prefix_queries=counts[:, 0].copy(),
            prefix_hits=counts[:, 1].copy(),
            preempted_queries=counts[:, 2].copy(),
            preempted_hits=counts[:, 3].copy(),
            blocks_used=s.log[L.L_KV_USED, :k].copy(),  # at the end of each turn
        )

    def _result(self, fin_last: np.ndarray) -> Run:
        s, config, workload = self.state, self.cfg, self.wl
        k = self.step
        cols = {name: s.log[i, :k].copy() for i, name in enumerate(L.LOG_COLUMNS)}
        if config.async_scheduling and k:  # measured one turn later (SCHEDULER g1)
            kv_last = config.kv_blocks_usable - int(s.st[L.S_FREE])
            cols["kv_blocks_used"] = np.append(cols["kv_blocks_used"][1:], kv_last)
            cols["num_finished"] = np.append(cols["num_finished"][1:], fin_last.shape[0])
        if self.timed:
            start_s = s.tlog[L.T_START, :k].copy()
            step_ms = s.tlog[L.T_MS, :k].copy()
        else:
            start_s, step_ms = np.full(k, np.nan), np.full(k, np.nan)
        nt = int(s.st[L.S_TOK_LEN])
        req = s.req
        first_token = req[L.FIRST_TOKEN].copy()
        finish = req[L.FINISH].copy()
        n = workload.num_requests
        if self.timed:
            end_s = start_s + step_ms / 1e3
            if workload.concurrency is not None:  # the times the run sent them (NaN: never)
                arrival_s = np.full(n, np.nan)
                arrival_s[self.prepared.arrival_order] = s.arr_key
                arrival_s[np.isinf(arrival_s)] = np.nan
            else:
                arrival_s = np.asarray(workload.arrival_s, dtype=np.float64)
            first_token_s = np.where(first_token > 0, end_s[first_token - 1], np.nan)
            finish_s = np.where(finish > 0, end_s[finish - 1], np.nan)
        else:
            arrival_s, first_token_s, finish_s = (np.full(n, np.nan) for _ in range(3))
        return Run(
            config=config,
            workload=workload,
            kv_blocks_usable=config.kv_blocks_usable,
            num_steps=k,
            timed=self.timed,
            step_start_s=start_s,
            step_ms=step_ms,
            token_req=s.tok[0, :nt].astype(np.int32),
            token_step=s.tok[1, :nt].astype(np.int32),
            first_scheduled_step=req[L.FIRST_SCHED].copy(),
            first_token_step=first_token,
            finish_step=finish,
            num_preemptions=req[L.PREEMPTIONS].copy(),
            num_output_tokens=req[L.NUM_OUTPUT].copy(),
            num_recomputed_tokens=req[L.RECOMPUTED].copy(),
            num_prefix_hit_tokens=req[L.HIT_TOKENS].copy(),
            arrival_s=arrival_s,
            first_token_s=first_token_s,
            finish_s=finish_s,
            scheduler_seconds=self.seconds,
            detail=self._detail(k, fin_last),
            rejected=req[L.REJECTED].astype(np.int8),
            timed_out=req[L.TIMED_OUT].astype(bool)
            if config.gateway_timeout_s is not None
            else None,
            blocks=self._block_trace(k) if s.cfg[L.C_TRACE] else None,
            prefix_cache=PrefixCacheStats(
                int(s.st[L.S_Q_QUERIES]),
                int(s.st[L.S_Q_HITS]),
                int(s.st[L.S_Q_PRE_QUERIES]),
                int(s.st[L.S_Q_PRE_HITS]),
            ),
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
