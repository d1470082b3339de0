"""One run's engine state as arrays (sim/engine/layout.py), built from a config and a workload.

`EngineState` owns the arrays the compiled loop reads and writes, fills in what a run derives
from its workload alone (arrival order, the policy's declared queue and victim rules, the block
identity groups of prefix caching, block-table offsets) and grows the logs when the loop asks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.config import SchedulerConfig
from sim.engine import layout as L
from sim.kv import cdiv
from sim.policy import Policy
from sim.workload import Workload

_HASH_MIN = 1024


def identity_groups(
    prompt: np.ndarray, prefix_id: np.ndarray, prefix_tokens: np.ndarray, block_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(shared blocks, prefix group, tail group) per request (sim/engine/pool.py's identity).

    Requests with the same prefix_id share their first min(prefix_tokens, prompt) tokens: the
    full blocks inside it belong to the prefix's group. A request whose prompt is exactly that
    shared part generates what every request with the same prompt generates (greedy decoding),
    so its later blocks belong to a group of its own prompt; any other request's later blocks
    are its own."""
    n = prompt.shape[0]
    pid = np.asarray(prefix_id, dtype=np.int64)
    shared_tokens = np.where(pid >= 0, np.minimum(prefix_tokens, prompt), 0).astype(np.int64)
    shared_blocks = shared_tokens // block_size
    prefixes = np.unique(pid[pid >= 0])
    pgroup = np.full(n, -1, dtype=np.int64)
    if prefixes.size:
        pgroup[pid >= 0] = np.searchsorted(prefixes, pid[pid >= 0])
    base = int(prefixes.size)
    whole = (pid >= 0) & (shared_tokens == prompt)
    tgroup = base + np.arange(n, dtype=np.int64)  # after the prompt groups, one each
    if whole.any():
        keys = np.stack((pid[whole], prompt[whole]), axis=1)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        tgroup = tgroup + uniq.shape[0]
        tgroup[whole] = base + inv.reshape(-1)
    return shared_blocks, pgroup, tgroup


@dataclass(eq=False)
class EngineState:
    """The arrays of one run (names as in sim/engine/layout.py)."""

    req: np.ndarray
    cfg: np.ndarray
    cfgf: np.ndarray
    blk: np.ndarray
    hmap: np.ndarray
    table: np.ndarray
    st: np.ndarray
    stf: np.ndarray
    run: np.ndarray
    wait: np.ndarray
    pend: np.ndarray
    log: np.ndarray
    tlog: np.ndarray
    tok: np.ndarray
    det: np.ndarray
    didx: np.ndarray
    trc: np.ndarray
    tidx: np.ndarray
    arr_order: np.ndarray
    arr_key: np.ndarray
    deadline: np.ndarray

    def grow_log(self) -> None:
        cap = self.log.shape[1] * 2
        self.log = _grown(self.log, cap)
        self.tlog = _grown(self.tlog, cap)

    def grow_detail(self) -> None:
        n = self.req.shape[1]
        need = self.det.shape[0] + 4 * n + 8 * int(self.cfg[L.C_MAX_SEQS]) + 16
        det = np.zeros(max(2 * self.det.shape[0], need), dtype=np.int64)
        det[: self.det.shape[0]] = self.det
        self.det = det
        if self.didx.shape[1] < self.log.shape[1]:
            self.didx = _grown(self.didx, self.log.shape[1])
        if self.didx.shape[1] <= int(self.st[L.S_STEP]) + 1:
            self.didx = _grown(self.didx, 2 * self.didx.shape[1])

    def grow_trace(self) -> None:
        n = self.req.shape[1]
        need = 2 * n + int(self.req[L.BLOCKS].sum()) + int(self.st[L.S_FREE]) + 1
        trc = np.zeros(max(2 * self.trc.shape[0], self.trc.shape[0] + need), dtype=np.int64)
        trc[: self.trc.shape[0]] = self.trc
        self.trc = trc
        if self.tidx.shape[1] <= int(self.st[L.S_STEP]):
            self.tidx = _grown(self.tidx, max(2 * self.tidx.shape[1], self.log.shape[1]))

    def grow_tok(self) -> None:
        self.tok = _grown(self.tok, self.tok.shape[1] * 2 + 1024)


def _grown(a: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros((a.shape[0], cap), dtype=a.dtype)
    out[:, : a.shape[1]] = a
    return out


def build_state(
    config: SchedulerConfig,
    workload: Workload,
    policy: Policy,
    arrival_order: np.ndarray,
    arrival_sorted: np.ndarray,
    *,
    timed: bool,
    max_steps: int,
    stop_at_max_steps: bool,
    detail: bool = False,
    trace_blocks: bool = False,
    price_callback: bool = False,
) -> EngineState:
    """The state before step 1: nothing arrived, every block free."""
    n = workload.num_requests
    bs = config.block_size
    prompt = np.asarray(workload.prompt_tokens, dtype=np.int64)
    max_out = np.asarray(workload.output_tokens, dtype=np.int64)
    req = np.zeros((L.REQ_ROWS, n), dtype=np.int64)
    req[L.PROMPT] = prompt
    req[L.MAX_OUT] = max_out
    req[L.NUM_TOKENS] = prompt
    caps = policy.engine_capabilities()
    if caps.queue_rank is not None:
        req[L.QUEUE_RANK] = caps.queue_rank
    if caps.victim_rank is not None:
        req[L.VICTIM_KEY] = caps.victim_rank
    tenant = np.asarray(workload.tenant, dtype=np.int64)
    if n:
        req[L.TENANT] = np.unique(tenant, return_inverse=True)[1].reshape(-1)
    caching = bool(config.enable_prefix_caching)
    pool = caching or trace_blocks  # block ids kept
    max_blocks = int(cdiv(config.max_model_len, bs)) + 1
    if caching:
        sb, pg, tg = identity_groups(
            prompt,
            np.asarray(workload.prefix_id, dtype=np.int64),
            np.asarray(workload.prefix_tokens, dtype=np.int64),
            bs,
        )
        req[L.SHARED_BLOCKS], req[L.PREFIX_GROUP], req[L.TAIL_GROUP] = sb, pg, tg
    if pool:
        # a request holds at most the blocks of prompt + max_tokens (and of max_model_len)
        cap = np.minimum(cdiv(prompt + max_out, bs) + 1, max_blocks)
        req[L.TABLE_START] = np.concatenate(([0], np.cumsum(cap)[:-1])) if n else cap
        table = np.zeros(int(cap.sum()) if n else 1, dtype=np.int64)
    else:
        table = np.zeros(1, dtype=np.int64)
    nb = config.num_gpu_blocks
    blk = np.zeros((L.BLK_ROWS, nb), dtype=np.int64)
    size = _HASH_MIN
    while size < 2 * nb:
        size *= 2
    hmap = np.full((L.H_ROWS, size if caching else 1), -1, dtype=np.int64)
    st = np.zeros(L.ST_ROWS, dtype=np.int64)
    if pool:
        from sim.engine.pool import init_pool

        init_pool(blk, hmap, st)
    st[L.S_FREE] = config.kv_blocks_usable
    closed = workload.concurrency is not None
    if closed:
        st[L.S_UNSENT] = min(int(workload.concurrency), n)
    cfg = np.zeros(L.CFG_ROWS, dtype=np.int64)
    cfg[L.C_BUDGET] = config.max_num_batched_tokens
    cfg[L.C_MAX_SEQS] = config.max_num_seqs
    cfg[L.C_MML] = config.max_model_len
    cfg[L.C_BS] = bs
    cfg[L.C_THRESHOLD] = config.effective_long_prefill_token_threshold
    cfg[L.C_CHUNKED] = int(config.enable_chunked_prefill)
    cfg[L.C_RESERVE_FULL] = int(config.scheduler_reserve_full_isl)
    cfg[L.C_WM_BLOCKS] = config.watermark_blocks
    cfg[L.C_USABLE] = config.kv_blocks_usable
    cfg[L.C_ASYNC] = int(config.async_scheduling)
    cfg[L.C_CACHING] = int(caching)
    cfg[L.C_QUEUE] = L.QUEUE_DEQUE if caps.queue_rank is None else L.QUEUE_RANKED
    cfg[L.C_VICTIM] = caps.victim_kind
    cfg[L.C_REORDER] = int(caps.reorders_by_cache and caching)
    cfg[L.C_TIMED] = int(timed)
    cfg[L.C_CLOSED] = int(closed)
    cfg[L.C_ADM_REQS] = -1 if config.max_num_queued_reqs is None else config.max_num_queued_reqs
    cfg[L.C_ADM_TOKENS] = (
        -1 if config.max_num_queued_tokens is None else config.max_num_queued_tokens
    )
    cfg[L.C_TIMEOUT] = int(config.gateway_timeout_s is not None)
    cfg[L.C_KEY_STRIDE] = max_blocks + 1
    window = config.cache_aware_admission_window
    # vLLM applies it to the FCFS queue with prefix caching only (a queue the policy re-sorts
    # from the cache itself has no use for it)
    plain_fifo = caps.queue_rank is None and not caps.reorders_by_cache
    cfg[L.C_CA_WINDOW] = window if plain_fifo and caching else 0
    cfg[L.C_MAX_STEPS] = max_steps
    cfg[L.C_STOP_AT_MAX] = int(stop_at_max_steps)
    cfg[L.C_N] = n
    cfg[L.C_DETAIL] = int(detail)
    cfg[L.C_POOL] = int(pool)
    cfg[L.C_TRACE] = int(trace_blocks)
    cfg[L.C_PRICE_CALLBACK] = int(price_callback)
    cfgf = np.zeros(L.CFGF_ROWS)
    cfgf[L.CF_TIMEOUT_S] = config.gateway_timeout_s or 0.0
    cfgf[L.CF_CA_THRESHOLD] = config.cache_aware_admission_threshold
    if config.gateway_timeout_s is not None:
        deadline = np.asarray(workload.arrival_s, dtype=np.float64) + config.gateway_timeout_s
    else:
        deadline = np.full(max(n, 1), np.inf)
    # logs start small and double when the loop asks (a run's length is not known ahead)
    est = int(max_out.sum()) + n + 16
    steps_cap = max(1024, min(est, 1 << 13))
    tok_cap = max(1024, min(est, 1 << 15))
    return EngineState(
        req=req,
        cfg=cfg,
        cfgf=cfgf,
        blk=blk,
        hmap=hmap,
        table=table,
        st=st,
        stf=np.array([0.0, np.inf]),  # the clock (s), the earliest gateway deadline waiting
        run=np.zeros(max(n, 1), dtype=np.int64),
        wait=np.zeros(max(n, 1) + 1, dtype=np.int64),
        pend=np.zeros(max(n, 1), dtype=np.int64),
        log=np.zeros((L.LOG_ROWS, steps_cap), dtype=np.int64),
        tlog=np.zeros((L.TLOG_ROWS, steps_cap)),
        tok=np.zeros((2, tok_cap), dtype=np.int64),
        det=np.zeros(8 * (n + config.max_num_seqs) + 64 if detail else 1, dtype=np.int64),
        didx=np.zeros((L.DET_ROWS, steps_cap if detail else 1), dtype=np.int64),
        trc=np.zeros(64 * (n + nb) if trace_blocks else 1, dtype=np.int64),
        tidx=np.zeros((L.TRC_ROWS, steps_cap if trace_blocks else 1), dtype=np.int64),
        arr_order=np.array(arrival_order, dtype=np.int64),  # copies: a sweep shares them,
        arr_key=np.array(arrival_sorted, dtype=np.float64),  # and the run writes arrival keys
        deadline=deadline,
    )
