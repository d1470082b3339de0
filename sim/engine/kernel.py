"""The step loop: vLLM's scheduler, one `schedule()` and one output update per step, compiled.

Each rule of SCHEDULER.md is written once here, in the order vLLM applies it:
- `_new_tokens`: what a running request asks for (a3, g3, g4, f5);
- `_victim`: which running request a failed allocation preempts (c2), as the policy declares;
- `_preempt`: recompute preemption (c4, g6);
- `_schedule`: the running loop, the preemption loop and its cursor (a3, c, f1), then the waiting
  loop (a4) with prefix-cache lookups, the full-sequence check and the watermark (b3-b5);
- `_process_output` / the synchronous update in `_step`: tokens appended, stops, frees (a6, g5);
- `_add_arrivals`: arrivals, vLLM's admission limits (sim/admission.py) and the queue order;
- `_expire`: a gateway's queue timeout (sim/gateway.py);
- `run_loop`: the loop itself, timed (the cost model's tables, sim/engine/pricing.py) or by step.

State is the arrays of sim/engine/layout.py; the loop stops and returns a code when a log array
is full (the caller grows it and calls again), at `until_step`, or when the run is over.
"""

from __future__ import annotations

import numpy as np

from sim.admission import QUEUED_REQS, QUEUED_TOKENS
from sim.engine import pool as kv
from sim.engine.jit import njit
from sim.engine.layout import (
    BLOCKS,
    C_ADM_REQS,
    C_ADM_TOKENS,
    C_ASYNC,
    C_BS,
    C_BUDGET,
    C_CA_WINDOW,
    C_CACHING,
    C_CHUNKED,
    C_CLOSED,
    C_DETAIL,
    C_MAX_SEQS,
    C_MAX_STEPS,
    C_MML,
    C_N,
    C_POOL,
    C_PRICE_CALLBACK,
    C_QUEUE,
    C_REORDER,
    C_RESERVE_FULL,
    C_STOP_AT_MAX,
    C_THRESHOLD,
    C_TIMED,
    C_TIMEOUT,
    C_TRACE,
    C_USABLE,
    C_VICTIM,
    C_WM_BLOCKS,
    CF_CA_THRESHOLD,
    COMPUTED,
    D_ARRIVED,
    D_END,
    D_FINISHED,
    D_NEW,
    D_PREEMPTED,
    D_RESUMED,
    D_RUNNING,
    D_SAMPLED,
    D_SCHED_REQ,
    D_SCHED_TOK,
    D_WAITING,
    DEADLOCK,
    DONE,
    FINISH,
    FINISHED,
    FIRST_SCHED,
    FIRST_TOKEN,
    HIT_TOKENS,
    IDLE_HELD,
    KEY,
    L_ATTN,
    L_FIN_STAMPED,
    L_FINISHED,
    L_FTP_STAMPED,
    L_KV_AFTER_SCHEDULE,
    L_KV_READ,
    L_KV_USED,
    L_PREEMPTED,
    L_RUNNING,
    L_SEQS,
    L_TOKENS,
    L_WAITING,
    LOST,
    MAX_OUT,
    NEED_DET,
    NEED_LOG,
    NEED_PRICE,
    NEED_TOK,
    NEED_TRC,
    NEXT,
    NOT_ARRIVED,
    NUM_OUTPUT,
    NUM_TOKENS,
    OUT_OF_STEPS,
    P_BW,
    P_COMM_ALPHA_MS,
    P_COMM_BETA,
    P_COMM_CALLS,
    P_COMM_ON,
    P_COMM_PER_TOKEN,
    P_FLOPS,
    P_GRID_STEP,
    P_LATENCY_MS,
    P_LAYERS,
    P_OVERHEAD_MS,
    P_OVERLAP,
    P_PER_KV,
    P_PER_PAIR,
    P_PER_Q,
    PLACEHOLDERS,
    PREEMPTIONS,
    PROMPT,
    QUEUE_DEQUE,
    RECOMPUTED,
    REF,
    REJECTED,
    RUNNING,
    S_ADMITTED,
    S_ADMITTED_PROMPT,
    S_ARRIVAL_PTR,
    S_DET_LEN,
    S_ERROR_REQ,
    S_FIN_TOTAL,
    S_FINISHED,
    S_FREE,
    S_FTP_TOTAL,
    S_PEND_LEN,
    S_PRICE_LAST,
    S_PRICE_PENDING,
    S_Q_HITS,
    S_Q_PRE_HITS,
    S_Q_PRE_QUERIES,
    S_Q_QUERIES,
    S_REJECTED,
    S_RUN_LEN,
    S_STEP,
    S_TIMED_OUT,
    S_TOK_LEN,
    S_TRC_LEN,
    S_TRC_PENDING,
    S_UNSENT,
    S_WAIT_LEN,
    SCHED,
    STATUS,
    STOPPED,
    T_MS,
    T_START,
    TABLE_START,
    TENANT,
    TIMED_OUT,
    TR_CACHED,
    TR_END,
    TR_IDS,
    VICTIM_KEY,
    VICTIM_LAST,
    VICTIM_RANK,
    WAITING,
)
from sim.engine.queues import (
    run_append,
    run_remove_at,
    wait_at,
    wait_compact,
    wait_insert_ranked,
    wait_pop_front,
    wait_push_back,
    wait_push_front,
    wait_sort_slots,
)


@njit
def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@njit
def price_step(
    pc: np.ndarray,
    lin: np.ndarray,
    lm: np.ndarray,
    g: np.ndarray,
    q: int,
    s: int,
    kv: int,
    pairs: int,
) -> float:
    """sim.cost's step time for one step, the same arithmetic in the same order (to the bit)."""
    if q <= 0:
        ms = lin[0] + lm[s]
    else:
        a_mem = ((kv + q) * pc[P_PER_KV] + q * pc[P_PER_Q]) / pc[P_BW] * 1e3
        a_comp = pairs * pc[P_PER_PAIR] / pc[P_FLOPS] * 1e3
        if a_mem >= a_comp:
            hi, lo = a_mem, a_comp
        else:
            hi, lo = a_comp, a_mem
        if hi > 0:
            last = g.shape[0] - 1
            step = pc[P_GRID_STEP]
            r = lo / hi
            i = int(r * last)
            if i >= last:
                smooth = hi * g[last]
            else:
                smooth = hi * ((g[i + 1] - g[i]) / step * (r - i * step) + g[i])
        else:
            smooth = 0.0
        attention = pc[P_LAYERS] * (pc[P_LATENCY_MS] + smooth)
        tp = 0.0
        if pc[P_COMM_ON] > 0:
            tp = pc[P_COMM_CALLS] * (
                pc[P_COMM_ALPHA_MS] + q * pc[P_COMM_PER_TOKEN] / pc[P_COMM_BETA] * 1e3
            )
        ms = lin[q] + attention + lm[s] + tp + pc[P_OVERHEAD_MS]
    if pc[P_OVERLAP] > 0 and q > 0:
        ms = max(ms - pc[P_OVERHEAD_MS], pc[P_OVERHEAD_MS])
    return ms


@njit
def _new_tokens(req: np.ndarray, cfg: np.ndarray, r: int, thr_on: bool, budget: int) -> int:
    """Tokens running request r asks for this step (0: skipped). Async: its placeholders
    count as known tokens, and one whose step in flight already produces its last token sits
    out (g3, g4). Capped by the threshold, the budget and max_model_len (a3, f5)."""
    ph = req[PLACEHOLDERS, r]
    comp = req[COMPUTED, r]
    if ph > 0 and comp + 2 - ph >= req[PROMPT, r] + req[MAX_OUT, r]:
        return 0
    n = req[NUM_TOKENS, r] + ph - comp
    thr = cfg[C_THRESHOLD]
    if thr_on and 0 < thr < n:
        n = thr
    n = min(n, budget)
    return min(n, cfg[C_MML] - comp - 1)


@njit
def _victim(
    req: np.ndarray, cfg: np.ndarray, run: np.ndarray, rlen: int, tcount: np.ndarray
) -> int:
    """Position in the running list of the request to preempt (c2), by the policy's declared
    victim rule: the last one (FCFS), the largest victim rank (the first such in running order),
    or the last one of the tenant holding the most running requests (fair share)."""
    kind = cfg[C_VICTIM]
    if kind == VICTIM_LAST:
        return rlen - 1
    if kind == VICTIM_RANK:
        best = 0
        for i in range(1, rlen):
            if req[VICTIM_KEY, run[i]] > req[VICTIM_KEY, run[best]]:
                best = i
        return best
    tcount[:] = 0
    for i in range(rlen):
        tcount[req[TENANT, run[i]]] += 1
    heavy = int(np.argmax(tcount))
    for i in range(rlen - 1, -1, -1):
        if req[TENANT, run[i]] == heavy:
            return i
    return rlen - 1


@njit
def _free_blocks(req, cfg, blk, table, st, r) -> None:
    """Give back all of r's blocks."""
    if cfg[C_POOL]:
        kv.free_table(req, blk, table, st, r, req[BLOCKS, r])
    else:
        st[S_FREE] += req[BLOCKS, r]
    req[BLOCKS, r] = 0


@njit
def _preempt(req, cfg, blk, table, st, v) -> None:
    """Recompute preemption (c4): all blocks freed, progress reset, a stale output ignored."""
    _free_blocks(req, cfg, blk, table, st, v)
    req[RECOMPUTED, v] += req[COMPUTED, v]
    req[LOST, v] = req[COMPUTED, v]
    req[COMPUTED, v] = 0
    req[PLACEHOLDERS, v] = 0
    req[PREEMPTIONS, v] += 1
    req[STATUS, v] = WAITING


@njit
def _enqueue(req, cfg, wait, st, r, preempted: bool) -> None:
    """Into the waiting queue: FCFS's deque takes arrivals at the back and a preempted request
    at the head; a ranked queue puts either at its place."""
    if cfg[C_QUEUE] == QUEUE_DEQUE:
        if preempted:
            wait_push_front(wait, st, r)
        else:
            wait_push_back(wait, st, r)
    else:
        wait_insert_ranked(wait, st, req, r)


@njit
def _sort_by_cache(req, cfg, hmap, wait, st, scratch, slots) -> None:
    """The prefix-aware teaching policy: the whole queue sorted by cached blocks, most first,
    queue order among equals (at the start of every schedule())."""
    wlen = st[S_WAIT_LEN]
    if wlen < 2:
        return
    for i in range(wlen):
        r = wait_at(wait, st, i)
        slots[i] = i
        scratch[i] = kv.count_hits(req, cfg, hmap, r, req[NUM_TOKENS, r])
    wait_sort_slots(wait, st, slots, wlen, scratch)


@njit
def _cache_aware_admission(req, cfg, cfgf, hmap, wait, st, scratch, slots) -> None:
    """vLLM 0.34's cache-aware admission (`_reorder_waiting_by_cached_prefix`, SCHEDULER h2),
    before the waiting loop of a step without preemption: when the KV cache is at least
    `threshold` full, the plain waiting requests (never preempted, nothing computed) among the
    first `window` are reordered among their own slots by their cached tokens, most first,
    queue order among equals; nothing else moves."""
    wlen = st[S_WAIT_LEN]
    if wlen < 2:
        return
    usable = cfg[C_USABLE]
    if usable and 1.0 - st[S_FREE] / usable < cfgf[CF_CA_THRESHOLD]:
        return
    m = 0
    for i in range(min(cfg[C_CA_WINDOW], wlen)):
        r = wait_at(wait, st, i)
        if req[PREEMPTIONS, r] == 0 and req[COMPUTED, r] == 0:
            slots[m] = i
            scratch[m] = kv.count_hits(req, cfg, hmap, r, req[NUM_TOKENS, r]) * cfg[C_BS]
            m += 1
    if m > 1:
        wait_sort_slots(wait, st, slots, m, scratch)


@njit
def _schedule(
    req, cfg, cfgf, blk, hmap, table, st, run, wait, pre, adm, hits, scratch, slots, tcount
):  # fmt: skip
    """One `schedule()` call (a3-a5). Returns (tokens left in the budget, preemptions,
    admissions); the preempted are in `pre`, the admitted (new or resumed) in `adm`."""
    if cfg[C_REORDER]:
        _sort_by_cache(req, cfg, hmap, wait, st, scratch, slots)
    bs = cfg[C_BS]
    thr_on = cfg[C_THRESHOLD] > 0 and st[S_RUN_LEN] + st[S_WAIT_LEN] > 1
    budget = cfg[C_BUDGET]
    npre = 0
    nadm = 0
    # ---------------- RUNNING loop (a3), with the preemption loop (c1-c4) and its cursor (f1)
    i = 0
    while i < st[S_RUN_LEN] and budget > 0:
        r = run[i]
        n = _new_tokens(req, cfg, r, thr_on, budget)
        if n <= 0:
            i += 1
            continue
        comp = req[COMPUTED, r]
        need = max(cdiv(comp + n, bs) - req[BLOCKS, r], 0)
        self_preempted = False
        while need > st[S_FREE]:
            vp = _victim(req, cfg, run, st[S_RUN_LEN], tcount)
            v = run[vp]
            run_remove_at(run, st, vp)
            if req[SCHED, v] > 0:  # already scheduled in this step: its tokens come back
                budget += req[SCHED, v]
                req[SCHED, v] = 0
            if vp < i:
                i -= 1
            _preempt(req, cfg, blk, table, st, v)
            pre[npre] = v
            npre += 1
            if v == r:
                self_preempted = True
                break
        if self_preempted:
            continue  # the cursor stays: it now points at the next running request
        if cfg[C_POOL]:
            kv.allocate(blk, hmap, table, st, req[TABLE_START, r], req[BLOCKS, r], need)
            if cfg[C_CACHING]:
                full = min(comp + n, req[NUM_TOKENS, r]) // bs
                kv.cache_upto(req, cfg, blk, hmap, table, r, full)
        else:
            st[S_FREE] -= need
        req[BLOCKS, r] += need
        req[SCHED, r] = n
        budget -= n
        i += 1
    # ---------------- WAITING loop (a4), only in a step without preemption
    if npre == 0:
        if cfg[C_CA_WINDOW] > 0:
            _cache_aware_admission(req, cfg, cfgf, hmap, wait, st, scratch, slots)
        thr = cfg[C_THRESHOLD]
        while st[S_WAIT_LEN] > 0 and budget > 0:
            if st[S_RUN_LEN] >= cfg[C_MAX_SEQS]:
                break
            r = wait_at(wait, st, 0)
            nt = req[NUM_TOKENS, r]
            k = 0
            evictable = 0
            if cfg[C_CACHING]:
                k = kv.lookup(req, cfg, blk, hmap, r, nt, hits)
                for j in range(k):
                    if blk[REF, hits[j]] == 0:
                        evictable += 1
            hit_tok = k * bs
            n = nt - hit_tok
            if thr_on and 0 < thr < n:
                n = thr
            if not cfg[C_CHUNKED] and n > budget:
                break  # head-of-line: nothing behind it is tried
            n = min(n, budget)
            wm = cfg[C_WM_BLOCKS] if st[S_RUN_LEN] > 0 else 0
            free = st[S_FREE]
            if cfg[C_RESERVE_FULL] and cdiv(nt, bs) - k + evictable + wm > free:
                break
            need = max(cdiv(hit_tok + n, bs) - k, 0)
            if need + evictable + wm > free:
                break
            if cfg[C_CACHING]:
                # vLLM counts a lookup once, when its request is admitted (PrefixCacheStats)
                if req[PREEMPTIONS, r] > 0:
                    st[S_Q_PRE_QUERIES] += nt
                    st[S_Q_PRE_HITS] += hit_tok
                else:
                    st[S_Q_QUERIES] += nt
                    st[S_Q_HITS] += hit_tok
                kv.take_hits(req, blk, table, st, r, hits, k)
            if cfg[C_POOL]:
                kv.allocate(blk, hmap, table, st, req[TABLE_START, r], k, need)
                if cfg[C_CACHING]:
                    kv.cache_upto(req, cfg, blk, hmap, table, r, min(hit_tok + n, nt) // bs)
            else:
                st[S_FREE] -= need
            req[COMPUTED, r] = hit_tok
            req[HIT_TOKENS, r] += hit_tok
            req[BLOCKS, r] = k + need
            req[SCHED, r] = n
            budget -= n
            wait_pop_front(wait, st)
            run_append(run, st, r)
            req[STATUS, r] = RUNNING
            if req[FIRST_SCHED, r] == 0:
                req[FIRST_SCHED, r] = st[S_STEP] + 1
            adm[nadm] = r
            nadm += 1
    for j in range(npre):
        _enqueue(req, cfg, wait, st, pre[j], True)
    return budget, npre, nadm


@njit
def _finish(req, cfg, blk, table, st, log, r, k_out) -> None:
    """r has produced its last token in step k_out: finished, its blocks freed."""
    req[STATUS, r] = FINISHED
    req[FINISH, r] = k_out
    _free_blocks(req, cfg, blk, table, st, r)
    st[S_FINISHED] += 1
    st[S_FIN_TOTAL] += 1
    if k_out >= 1:
        log[L_FIN_STAMPED, k_out - 1] += 1


@njit
def _process_output(req, cfg, blk, hmap, table, st, log, run, wait, pend, keep, fin, k_out) -> int:
    """Async (g2, g5, g6): the output of step k_out arrives. Each request in flight gets its
    token; a running one drops a placeholder and hashes its newly full blocks; a preempted
    one's stale token changes nothing preemption reset, and if it was the last the request
    finishes from the waiting queue. Returns the number finished."""
    npend = st[S_PEND_LEN]
    st[S_PEND_LEN] = 0
    nfin = 0
    stale = False
    bs = cfg[C_BS]
    for j in range(npend):
        r = pend[j]
        req[NUM_OUTPUT, r] += 1
        req[NUM_TOKENS, r] += 1
        live = req[STATUS, r] == RUNNING
        if live:
            req[PLACEHOLDERS, r] -= 1
            if cfg[C_CACHING]:
                full = (req[COMPUTED, r] - req[PLACEHOLDERS, r]) // bs
                kv.cache_upto(req, cfg, blk, hmap, table, r, full)
        if req[NUM_OUTPUT, r] >= req[MAX_OUT, r] or req[NUM_TOKENS, r] >= cfg[C_MML]:
            if not live:
                req[RECOMPUTED, r] -= req[LOST, r]  # nothing is recomputed after all
                stale = True
            _finish(req, cfg, blk, table, st, log, r, k_out)
            fin[nfin] = r
            nfin += 1
    if nfin:
        _drop_finished(req, st, run, wait, keep, stale)
    return nfin


@njit
def _drop_finished(req, st, run, wait, keep, from_waiting: bool) -> None:
    """Remove finished requests from the running list (and the waiting queue)."""
    out = 0
    for i in range(st[S_RUN_LEN]):
        r = run[i]
        if req[STATUS, r] != FINISHED:
            run[out] = r
            out += 1
    st[S_RUN_LEN] = out
    if from_waiting:
        n = keep.shape[0]
        for r in range(n):
            keep[r] = req[STATUS, r] == WAITING
        wait_compact(wait, st, keep)


@njit
def _snapshot(req, cfg, blk, table, st, trc, tidx, row) -> None:
    """Step `row + 1`'s block tables, at the end of its turn (sim/blocks.py BlockTrace): the
    prefix-cache counts so far, each request's table length and computed tokens, the tables'
    block ids in request order, and the free blocks that keep a hash in eviction order."""
    n = cfg[C_N]
    cur = st[S_TRC_LEN]
    trc[cur] = st[S_Q_QUERIES]
    trc[cur + 1] = st[S_Q_HITS]
    trc[cur + 2] = st[S_Q_PRE_QUERIES]
    trc[cur + 3] = st[S_Q_PRE_HITS]
    cur += 4
    for r in range(n):
        trc[cur + r] = req[BLOCKS, r]
        trc[cur + n + r] = req[COMPUTED, r] if req[BLOCKS, r] > 0 else 0
    cur += 2 * n
    tidx[TR_IDS, row] = cur
    for r in range(n):
        base = req[TABLE_START, r]
        for j in range(req[BLOCKS, r]):
            trc[cur] = table[base + j]
            cur += 1
    tidx[TR_CACHED, row] = cur
    if cfg[C_CACHING]:
        b = blk[NEXT, 0]
        while b != 0:
            if blk[KEY, b] != -1:
                trc[cur] = b
                cur += 1
            b = blk[NEXT, b]
    tidx[TR_END, row] = cur
    st[S_TRC_LEN] = cur


@njit
def _put(det: np.ndarray, cur: int, src: np.ndarray, m: int) -> int:
    """Append src[:m] to the detail array at `cur`; the new end."""
    for j in range(m):
        det[cur + j] = src[j]
    return cur + m


@njit
def _detail_after_schedule(req, st, run, wait, det, didx, pre, npre, adm, nadm, row) -> None:
    """A step's lists known right after schedule(): scheduled (request, tokens) in running
    order, new and resumed admissions, the preempted, the running list and the queue."""
    cur = didx[D_SCHED_REQ, row]  # the end of this step's arrivals (`_add_arrivals`)
    rlen = st[S_RUN_LEN]
    m = 0
    for i in range(rlen):
        if req[SCHED, run[i]] > 0:
            det[cur + m] = run[i]
            m += 1
    didx[D_SCHED_TOK, row] = cur + m
    for j in range(m):
        det[cur + m + j] = req[SCHED, det[cur + j]]
    cur += 2 * m
    didx[D_NEW, row] = cur
    for j in range(nadm):
        if req[PREEMPTIONS, adm[j]] == 0:
            det[cur] = adm[j]
            cur += 1
    didx[D_RESUMED, row] = cur
    for j in range(nadm):
        if req[PREEMPTIONS, adm[j]] > 0:
            det[cur] = adm[j]
            cur += 1
    didx[D_PREEMPTED, row] = cur
    cur = _put(det, cur, pre, npre)
    didx[D_RUNNING, row] = cur
    cur = _put(det, cur, run, rlen)
    didx[D_WAITING, row] = cur
    for i in range(st[S_WAIT_LEN]):
        det[cur + i] = wait_at(wait, st, i)
    didx[D_SAMPLED, row] = cur + st[S_WAIT_LEN]


@njit
def _step(
    req, cfg, cfgf, blk, hmap, table, st, stf, run, wait, pend, log, tlog, tok, det, didx,
    trc, tidx, lin, lm, g, pc, arr_key, pre, adm, fin, hits, scratch, slots, tcount, keep,
) -> bool:  # fmt: skip
    """One turn: schedule, update, sample, stop, free; one log row (and, asked for, the step's
    lists). False: a request that can never be scheduled (deadlock)."""
    k = st[S_STEP] + 1
    row = k - 1
    budget, npre, nadm = _schedule(
        req, cfg, cfgf, blk, hmap, table, st, run, wait, pre, adm, hits, scratch, slots, tcount
    )
    rlen = st[S_RUN_LEN]
    wlen = st[S_WAIT_LEN]
    log[L_KV_AFTER_SCHEDULE, row] = cfg[C_USABLE] - st[S_FREE]
    detail = cfg[C_DETAIL] != 0
    if detail:
        _detail_after_schedule(req, st, run, wait, det, didx, pre, npre, adm, nadm, row)
    total = 0
    nsched = 0
    kv_read = 0
    attn = 0
    nsampled = 0
    last = 0
    is_async = cfg[C_ASYNC] != 0
    for i in range(rlen):
        r = run[i]
        t = req[SCHED, r]
        if t <= 0:
            continue
        ctx = req[COMPUTED, r]
        total += t
        nsched += 1
        kv_read += ctx
        attn += t * ctx + t * (t + 1) // 2
        req[COMPUTED, r] = ctx + t
        req[SCHED, r] = 0
        if is_async:
            if req[COMPUTED, r] == req[NUM_TOKENS, r] + req[PLACEHOLDERS, r]:
                req[PLACEHOLDERS, r] += 1
                p = req[PLACEHOLDERS, r]
                if (
                    req[NUM_OUTPUT, r] + p >= req[MAX_OUT, r]
                    or req[NUM_TOKENS, r] + p >= cfg[C_MML]
                ):
                    last += 1
                scratch[nsampled] = r
                nsampled += 1
        elif req[COMPUTED, r] == req[NUM_TOKENS, r]:
            scratch[nsampled] = r
            nsampled += 1
    log[L_FIN_STAMPED, row] = 0
    log[L_FTP_STAMPED, row] = 0
    nfin = 0
    if is_async:
        nfin = _process_output(
            req, cfg, blk, hmap, table, st, log, run, wait, pend, keep, fin, k - 1
        )
        for j in range(nsampled):
            pend[j] = scratch[j]
        st[S_PEND_LEN] = nsampled
    else:
        for j in range(nsampled):
            r = scratch[j]
            req[NUM_OUTPUT, r] += 1
            req[NUM_TOKENS, r] += 1
            if req[NUM_OUTPUT, r] >= req[MAX_OUT, r] or req[NUM_TOKENS, r] >= cfg[C_MML]:
                _finish(req, cfg, blk, table, st, log, r, k)
                fin[nfin] = r
                nfin += 1
        last = nfin
    if detail:
        cur = _put(det, didx[D_SAMPLED, row], scratch, nsampled)
        didx[D_FINISHED, row] = cur
        cur = _put(det, cur, fin, nfin)
        didx[D_END, row] = cur
        st[S_DET_LEN] = cur
    tl = st[S_TOK_LEN]
    for j in range(nsampled):
        r = scratch[j]
        tok[0, tl + j] = r
        tok[1, tl + j] = k
        if req[FIRST_TOKEN, r] == 0:
            req[FIRST_TOKEN, r] = k
            st[S_FTP_TOTAL] += req[PROMPT, r]
            log[L_FTP_STAMPED, row] += req[PROMPT, r]
    st[S_TOK_LEN] = tl + nsampled
    start = stf[0]
    ms = np.nan
    if cfg[C_TIMED]:
        if cfg[C_PRICE_CALLBACK]:
            st[S_PRICE_PENDING] = 1
            st[S_PRICE_LAST] = last
        else:
            ms = price_step(pc, lin, lm, g, total, nsched, kv_read, attn)
            stf[0] = start + ms / 1e3
            if cfg[C_CLOSED] and last > 0:
                _release(st, arr_key, cfg[C_N], last, stf[0])
    log[L_TOKENS, row] = total
    log[L_SEQS, row] = nsched
    log[L_KV_READ, row] = kv_read
    log[L_ATTN, row] = attn
    log[L_RUNNING, row] = rlen
    log[L_WAITING, row] = wlen
    log[L_KV_USED, row] = cfg[C_USABLE] - st[S_FREE]
    log[L_PREEMPTED, row] = npre
    log[L_FINISHED, row] = nfin
    tlog[T_START, row] = start
    tlog[T_MS, row] = ms
    st[S_STEP] = k
    if nfin and not is_async:
        _drop_finished(req, st, run, wait, keep, False)
    if cfg[C_TRACE]:
        st[S_TRC_PENDING] = 1  # written by run_loop once it has made room
    if total == 0 and rlen == 0 and wlen > 0 and npre == 0:
        st[S_ERROR_REQ] = wait_at(wait, st, 0)
        return False
    return True


@njit
def _release(st, arr_key, n, count, time_s) -> None:
    """Closed loop: `count` requests finished at time_s, so as many unsent ones are sent."""
    lo = st[S_UNSENT]
    hi = min(n, lo + count)
    for i in range(lo, hi):
        arr_key[i] = time_s
    st[S_UNSENT] = hi


@njit
def _admission(req, cfg, st, log, r, seen) -> int:
    """vLLM's admission limits for one arrival, against the outputs of steps 1..seen
    (sim/admission.py `check_admission`). Returns 0 (let in) or the refusing limit."""
    step = st[S_STEP]
    done = st[S_FIN_TOTAL]
    first_prompt = st[S_FTP_TOTAL]
    if seen < step and step >= 1:  # the outputs stamped with the last step are not seen yet
        done -= log[L_FIN_STAMPED, step - 1]
        first_prompt -= log[L_FTP_STAMPED, step - 1]
    unfinished = st[S_ADMITTED] - done
    queued = st[S_ADMITTED_PROMPT] - first_prompt
    if cfg[C_ADM_REQS] >= 0 and unfinished + 1 > cfg[C_ADM_REQS]:
        return QUEUED_REQS
    if cfg[C_ADM_TOKENS] >= 0 and queued >= cfg[C_ADM_TOKENS]:
        return QUEUED_TOKENS
    return 0


@njit
def _add_arrivals(req, cfg, st, stf, log, wait, arr_order, arr_key, deadline, det, didx, upto):
    """Requests with an arrival key <= upto join, in arrival order (list order within a tie);
    with admission limits on, each is checked first. In a timed run an arrival during the last
    step has not seen that step's outputs; one at this very moment (or any in a step replay)
    has."""
    n = cfg[C_N]
    ptr = st[S_ARRIVAL_PTR]
    control = cfg[C_ADM_REQS] >= 0 or cfg[C_ADM_TOKENS] >= 0
    detail = cfg[C_DETAIL] != 0
    row = st[S_STEP]
    cur = st[S_DET_LEN]
    if detail:  # this step's arrivals; they are the next step's segment until it runs
        didx[D_ARRIVED, row] = cur
    while ptr < n and arr_key[ptr] <= upto:
        r = arr_order[ptr]
        if control:
            seen = st[S_STEP]
            if cfg[C_TIMED] and arr_key[ptr] < upto:
                seen -= 1
            reason = _admission(req, cfg, st, log, r, seen)
            if reason:
                req[REJECTED, r] = reason
                st[S_REJECTED] += 1
                ptr += 1
                continue
            st[S_ADMITTED] += 1
            st[S_ADMITTED_PROMPT] += req[PROMPT, r]
        req[STATUS, r] = WAITING
        _enqueue(req, cfg, wait, st, r, False)
        if deadline[r] < stf[1]:
            stf[1] = deadline[r]  # the earliest a gateway timeout can cut one off
        if detail:
            det[cur] = r
            cur += 1
        ptr += 1
    st[S_ARRIVAL_PTR] = ptr
    if detail:
        didx[D_SCHED_REQ, row] = cur


@njit
def _expire(req, cfg, cfgf, st, stf, run, wait, deadline, keep) -> bool:
    """A gateway's timeout: waiting requests never scheduled whose deadline has come leave
    for good. True if nothing is left to run now."""
    if not cfg[C_TIMEOUT] or st[S_WAIT_LEN] == 0:
        return False
    now = stf[0]
    if now < stf[1]:  # no waiting request's deadline has come yet
        return False
    gone = 0
    earliest = np.inf
    for i in range(st[S_WAIT_LEN]):
        r = wait_at(wait, st, i)
        if req[FIRST_SCHED, r] == 0:
            if deadline[r] <= now:
                gone += 1
            elif deadline[r] < earliest:
                earliest = deadline[r]
    stf[1] = earliest
    if gone == 0:
        return False
    n = keep.shape[0]
    for r in range(n):
        keep[r] = True
    control = cfg[C_ADM_REQS] >= 0 or cfg[C_ADM_TOKENS] >= 0
    for i in range(st[S_WAIT_LEN]):
        r = wait_at(wait, st, i)
        if req[FIRST_SCHED, r] == 0 and deadline[r] <= now:
            keep[r] = False
            req[TIMED_OUT, r] = 1
            req[STATUS, r] = NOT_ARRIVED
            st[S_TIMED_OUT] += 1
            if control:
                st[S_ADMITTED] -= 1
                st[S_ADMITTED_PROMPT] -= req[PROMPT, r]
    wait_compact(wait, st, keep)
    return st[S_RUN_LEN] == 0 and st[S_WAIT_LEN] == 0


@njit
def _flush_snapshot(req, cfg, blk, table, st, trc, tidx) -> bool:
    """Write the last step's block snapshot if there is room (False: grow `trc`/`tidx`)."""
    row = st[S_STEP] - 1
    held = 0
    for r in range(cfg[C_N]):
        held += req[BLOCKS, r]
    if trc.shape[0] - st[S_TRC_LEN] < 2 * cfg[C_N] + held + st[S_FREE] + 5:
        return False
    if row >= tidx.shape[1]:
        return False
    _snapshot(req, cfg, blk, table, st, trc, tidx, row)
    st[S_TRC_PENDING] = 0
    return True


@njit
def run_loop(
    req, cfg, cfgf, blk, hmap, table, st, stf, run, wait, pend, log, tlog, tok, det, didx,
    trc, tidx, lin, lm, g, pc, arr_order, arr_key, deadline, until_step,
) -> int:  # fmt: skip
    """The step loop, from the state as it is, until the run is over (DONE), `until_step` or
    max_steps with stop_at_max_steps (STOPPED), max_steps otherwise (OUT_OF_STEPS), a full
    log (NEED_LOG / NEED_TOK: grow and call again), a request that can never run (DEADLOCK),
    or an idle engine whose next request is held back (IDLE_HELD)."""
    n = cfg[C_N]
    pre = np.empty(max(n, 1), dtype=np.int64)
    adm = np.empty(max(n, 1), dtype=np.int64)
    fin = np.empty(max(n, 1), dtype=np.int64)
    scratch = np.empty(max(n, 1), dtype=np.int64)
    slots = np.empty(max(n, 1), dtype=np.int64)
    keep = np.empty(max(n, 1), dtype=np.bool_)
    hits = np.empty(max(cfg[C_MML] // max(cfg[C_BS], 1) + 2, 1), dtype=np.int64)
    tcount = np.zeros(max(int(req[TENANT].max()) + 1 if n else 1, 1), dtype=np.int64)
    timed = cfg[C_TIMED] != 0
    while True:
        if st[S_TRC_PENDING] and not _flush_snapshot(req, cfg, blk, table, st, trc, tidx):
            return NEED_TRC
        if st[S_FINISHED] + st[S_REJECTED] + st[S_TIMED_OUT] >= n:
            break
        step = st[S_STEP]
        if step >= until_step:
            return STOPPED
        if step >= cfg[C_MAX_STEPS]:
            return STOPPED if cfg[C_STOP_AT_MAX] else OUT_OF_STEPS
        if step + 2 > log.shape[1]:
            return NEED_LOG
        if tok.shape[1] - st[S_TOK_LEN] < min(n, cfg[C_MAX_SEQS]) + 1:
            return NEED_TOK
        if cfg[C_DETAIL] and (
            det.shape[0] - st[S_DET_LEN] < 4 * n + 8 * cfg[C_MAX_SEQS] + 16
            or step + 2 > didx.shape[1]
        ):
            return NEED_DET
        if timed and st[S_RUN_LEN] == 0 and st[S_WAIT_LEN] == 0:
            ptr = st[S_ARRIVAL_PTR]
            if ptr >= n or np.isinf(arr_key[ptr]):
                return IDLE_HELD
            stf[0] = max(stf[0], arr_key[ptr])
        upto = stf[0] if timed else float(step + 1)
        _add_arrivals(req, cfg, st, stf, log, wait, arr_order, arr_key, deadline, det, didx, upto)
        if _expire(req, cfg, cfgf, st, stf, run, wait, deadline, keep):
            continue
        ok = _step(
            req, cfg, cfgf, blk, hmap, table, st, stf, run, wait, pend, log, tlog, tok, det,
            didx, trc, tidx, lin, lm, g, pc, arr_key, pre, adm, fin, hits, scratch, slots,
            tcount, keep,
        )  # fmt: skip
        if not ok:
            return DEADLOCK
        if st[S_PRICE_PENDING]:
            return NEED_PRICE
    return DONE


@njit
def apply_time(cfg, st, stf, tlog, arr_key, ms) -> None:
    """The last step lasts `ms` (a Python step-time model's answer to NEED_PRICE)."""
    row = st[S_STEP] - 1
    tlog[T_MS, row] = ms
    stf[0] = tlog[T_START, row] + ms / 1e3
    if cfg[C_CLOSED] and st[S_PRICE_LAST] > 0:
        _release(st, arr_key, cfg[C_N], st[S_PRICE_LAST], stf[0])
    st[S_PRICE_PENDING] = 0


@njit
def final_output(req, cfg, blk, hmap, table, st, log, run, wait, pend, fin) -> int:
    """Async, after the loop: the last step's output is processed once more (g1); the
    finished are in `fin`."""
    keep = np.empty(max(cfg[C_N], 1), dtype=np.bool_)
    return _process_output(
        req, cfg, blk, hmap, table, st, log, run, wait, pend, keep, fin, st[S_STEP]
    )
