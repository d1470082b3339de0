"""The engine's state layout: names for the rows of its struct-of-arrays and for its codes.

The compiled step loop (sim/engine/kernel.py) keeps one run's whole state in a few NumPy arrays
so that Numba can compile it and the same functions still run as plain Python
(`NUMBA_DISABLE_JIT=1`). Each array's rows are named here once; sim/engine/state.py builds the
arrays and gives them names on the Python side. Plain integers (not an IntEnum) because compiled
code indexes arrays with them; `RequestStatus` is the same codes for Python readers.
"""

from __future__ import annotations

from enum import IntEnum

from sim.policy import VICTIM_LAST, VICTIM_RANK, VICTIM_TENANT  # noqa: F401  (the policy's)


class RequestStatus(IntEnum):
    """A request's status, as vLLM's `RequestStatus` names it (a preempted request is WAITING
    with num_preemptions > 0, as vLLM's PREEMPTED queue entry is)."""

    NOT_ARRIVED = 0
    WAITING = 1
    RUNNING = 2
    FINISHED = 3


NOT_ARRIVED, WAITING, RUNNING, FINISHED = (int(s) for s in RequestStatus)

# per-request rows of `req` (int64, shape (REQ_ROWS, n))
(
    PROMPT,  # prompt tokens
    MAX_OUT,  # max_tokens
    NUM_TOKENS,  # prompt + output tokens so far (vLLM's num_tokens)
    COMPUTED,  # num_computed_tokens
    NUM_OUTPUT,  # output tokens so far
    BLOCKS,  # KV blocks held
    STATUS,  # RequestStatus
    PREEMPTIONS,  # num_preemptions
    RECOMPUTED,  # computed tokens thrown away by preemptions (work done twice)
    LOST,  # async: computed tokens lost by the latest preemption
    HIT_TOKENS,  # prefix-cache hit tokens over all admissions
    FIRST_SCHED,  # step of first admission (0: never)
    FIRST_TOKEN,  # step of the first output token (0: none)
    FINISH,  # step whose output finished it (0: not finished)
    PLACEHOLDERS,  # async: num_output_placeholders
    SCHED,  # tokens scheduled in the current step
    QUEUE_RANK,  # ranked queues: position in the policy's order
    VICTIM_KEY,  # ranked victims: larger = preempted first
    TENANT,  # tenant index 0..T-1
    SHARED_BLOCKS,  # leading blocks whose identity is the shared prefix's
    PREFIX_GROUP,  # identity group of the shared-prefix blocks
    TAIL_GROUP,  # identity group of the blocks after them
    NUM_CACHED,  # blocks hashed so far (prefix caching)
    TABLE_START,  # offset of the request's block table in `table`
    REJECTED,  # 0 admitted, else the admission limit that refused it
    TIMED_OUT,  # 1 if a gateway timeout cut it off
    REQ_ROWS,
) = range(27)

# per-block rows of `blk` (int64, shape (BLK_ROWS, num_gpu_blocks)); block 0 is the null block
# and doubles as the free queue's sentinel (NEXT[0] = front, PREV[0] = back)
REF, PREV, NEXT, KEY, KEY_PREV, KEY_NEXT, BLK_ROWS = range(7)

# rows of the hash map `hmap` (int64, open addressing): key (-1 empty), first and last block
H_KEY, H_HEAD, H_TAIL, H_ROWS = range(4)

# scalar state `st` (int64)
(
    S_STEP,  # steps done
    S_FREE,  # free blocks (free queue length)
    S_ARRIVAL_PTR,  # next position in the arrival order
    S_UNSENT,  # closed loop: first request not sent yet
    S_FINISHED,
    S_REJECTED,
    S_TIMED_OUT,
    S_ADMITTED,  # admission control: requests let in
    S_ADMITTED_PROMPT,  # admission control: their prompt tokens
    S_RUN_LEN,
    S_WAIT_HEAD,
    S_WAIT_LEN,
    S_PEND_LEN,  # async: requests whose output is in flight
    S_TOK_LEN,  # token records written
    S_Q_QUERIES,  # PrefixCacheStats: never-preempted queries, hits, then preempted ones
    S_Q_HITS,
    S_Q_PRE_QUERIES,
    S_Q_PRE_HITS,
    S_FIN_TOTAL,  # finishes stamped so far (admission control reads them)
    S_FTP_TOTAL,  # prompt tokens of requests with a first token so far
    S_ERROR_REQ,  # the request that can never be scheduled (deadlock)
    S_DET_LEN,  # length of `det` written (step detail)
    S_TRC_LEN,  # length of `trc` written (block trace)
    S_TRC_PENDING,  # 1: the last step's block snapshot is still to be written
    S_PRICE_PENDING,  # 1: the last step waits for its time from a Python step-time model
    S_PRICE_LAST,  # ... and how many requests produced their last token in it (closed loop)
    ST_ROWS,
) = range(27)

# configuration `cfg` (int64)
(
    C_BUDGET,
    C_MAX_SEQS,
    C_MML,
    C_BS,
    C_THRESHOLD,  # long_prefill_token_threshold as the release applies it (0: off)
    C_CHUNKED,
    C_RESERVE_FULL,
    C_WM_BLOCKS,
    C_USABLE,
    C_ASYNC,
    C_CACHING,
    C_QUEUE,  # QUEUE_DEQUE or QUEUE_RANKED
    C_VICTIM,  # VICTIM_LAST, VICTIM_RANK or VICTIM_TENANT
    C_REORDER,  # 1: sort the waiting queue by cached blocks every step (prefix-aware)
    C_TIMED,
    C_CLOSED,  # 1: closed loop
    C_ADM_REQS,  # -1: off
    C_ADM_TOKENS,  # -1: off
    C_TIMEOUT,  # 1: gateway timeout on
    C_KEY_STRIDE,  # blocks per identity group in a key
    C_CA_WINDOW,  # vLLM 0.34 cache-aware admission window (0: off)
    C_MAX_STEPS,
    C_STOP_AT_MAX,
    C_N,
    C_DETAIL,  # 1: record every step's lists (StepDetail)
    C_POOL,  # 1: keep block ids (prefix caching, or a block trace): sim/engine/pool.py
    C_TRACE,  # 1: record every step's block tables (sim/blocks.py BlockTrace)
    C_PRICE_CALLBACK,  # 1: a timed run priced by a Python step-time model, step by step
    CFG_ROWS,
) = range(29)
QUEUE_DEQUE, QUEUE_RANKED = 0, 1

# float configuration `cfgf`
CF_TIMEOUT_S, CF_CA_THRESHOLD, CFGF_ROWS = range(3)

# per-step log rows (int64, shape (LOG_ROWS, capacity)); the first nine are Run's columns
(
    L_TOKENS,
    L_SEQS,
    L_KV_READ,
    L_ATTN,
    L_RUNNING,
    L_WAITING,
    L_KV_USED,
    L_PREEMPTED,
    L_FINISHED,
    L_FIN_STAMPED,  # finishes stamped with this step (admission control)
    L_FTP_STAMPED,  # prompt tokens of first tokens stamped with this step
    L_KV_AFTER_SCHEDULE,  # blocks used right after schedule() (nothing freed by output yet)
    LOG_ROWS,
) = range(13)
LOG_COLUMNS = (
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
T_START, T_MS, TLOG_ROWS = range(3)

# a step's lists, recorded only when asked (C_DETAIL): segment starts in `didx` (shape
# (DET_ROWS, capacity)), the request ids (or token counts) in the flat array `det`
(
    D_ARRIVED,
    D_SCHED_REQ,
    D_SCHED_TOK,
    D_NEW,
    D_RESUMED,
    D_PREEMPTED,
    D_RUNNING,  # after schedule()
    D_WAITING,  # after schedule()
    D_SAMPLED,
    D_FINISHED,  # async: those whose finish this turn's output processing saw (step k-1's)
    D_END,
    DET_ROWS,
) = range(12)


# pricing constants `pc` (float64): see sim/engine/pricing.py
(
    P_LAYERS,
    P_LATENCY_MS,
    P_PER_KV,
    P_PER_Q,
    P_BW,
    P_PER_PAIR,
    P_FLOPS,
    P_GRID_STEP,
    P_COMM_ON,
    P_COMM_CALLS,
    P_COMM_ALPHA_MS,
    P_COMM_PER_TOKEN,
    P_COMM_BETA,
    P_OVERHEAD_MS,
    P_OVERLAP,  # async: a step lasts max(GPU, CPU) time
    PC_ROWS,
) = range(16)

# what a call of the kernel ended on
# a step's block snapshot in `trc`: table lengths (n), computed tokens (n), the tables' block
# ids in request order, the free blocks that keep a hash (eviction order); `tidx` (TRC_ROWS,
# capacity) holds the start of the ids, of the cached free blocks and the end
TR_IDS, TR_CACHED, TR_END, TRC_ROWS = range(4)

(
    DONE,
    STOPPED,
    NEED_LOG,
    NEED_TOK,
    DEADLOCK,
    OUT_OF_STEPS,
    IDLE_HELD,
    NEED_DET,
    NEED_TRC,
    NEED_PRICE,  # the last step's shape is in its log row: price it, `apply_time`, call again
) = range(10)
