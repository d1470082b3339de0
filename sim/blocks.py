"""Block tables step by step: which KV block each request holds, for lessons that draw the pool.

The engine keeps only block counts unless prefix caching is on or a run is traced with
`trace_blocks=True`; then it keeps vLLM's block pool block by block (sim/engine/pool.py), so block
ids follow vLLM's free queue (SCHEDULER.md b): allocation from the front, a finished or preempted
request's blocks freed tail first, the unhashed ones to the front as one run (the tail block
first) and, with prefix caching, hashed ones to the back, still findable until evicted. The
decisions are the same as without the trace (the tests check it).

A `BlockTrace` holds the state at the end of every turn of the loop, after its `schedule()` and
the output it processed (the synchronous engine processes step k's output in turn k; async
scheduling, step k-1's). `owners(k)` gives one value per block, as the lesson's grid draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FREE, NULL, CACHED = -1, -2, -3  # owners(): a free block, the null block, free but still cached


@dataclass(frozen=True, eq=False)
class BlockTrace:
    """Block tables at the end of each turn (row k: step k + 1).

    `table_lens[k, r]` is the number of blocks request r holds; `table_ids[k]` their ids, request
    by request in index order, each table in its own order (position j holds tokens 16j to
    16j + 15). `cached_free[k]` are the free blocks that still hold a hashed block (prefix
    caching), first to be evicted first. Block 0 is vLLM's null block, never handed out.
    `num_computed_tokens[k, r]` is request r's count at the end of the turn (0 once its blocks
    are freed). The last four are the run's PrefixCacheStats (sim/run.py) at the end of each
    turn: tokens looked up in the prefix cache and found there by the requests admitted so far,
    never preempted (`prefix_queries`, `prefix_hits`: what vLLM's hit-rate counters report) and
    preempted (`preempted_*`, kept apart).
    """

    num_gpu_blocks: int
    block_size: int
    table_lens: np.ndarray
    table_ids: tuple[np.ndarray, ...]
    cached_free: tuple[np.ndarray, ...]
    num_computed_tokens: np.ndarray
    prefix_queries: np.ndarray
    prefix_hits: np.ndarray
    preempted_queries: np.ndarray
    preempted_hits: np.ndarray
    blocks_used: np.ndarray  # per step: blocks held at the end of the turn (shared ones once)

    @property
    def num_steps(self) -> int:
        return int(self.table_lens.shape[0])

    def used(self) -> np.ndarray:
        """Blocks in use at the end of each turn (a block shared by several requests counts
        once), as vLLM's usage metric counts them."""
        return self.blocks_used

    def table(self, k: int, r: int) -> np.ndarray:
        """Request r's block table at the end of turn k + 1 (its block ids, in order)."""
        lens = self.table_lens[k]
        start = int(lens[:r].sum())
        return self.table_ids[k][start : start + int(lens[r])]

    def owners(self, k: int) -> np.ndarray:
        """One value per block at the end of turn k + 1: the index of the request holding it (the
        lowest index for a block shared by several), FREE, CACHED (free, its hash kept) or NULL."""
        out = np.full(self.num_gpu_blocks, FREE, dtype=np.int32)
        out[self.cached_free[k]] = CACHED
        lens = self.table_lens[k]
        holder = np.repeat(np.arange(lens.shape[0], dtype=np.int32), lens)
        ids = self.table_ids[k]
        out[ids[::-1]] = holder[::-1]  # reversed: the lowest index is written last and wins
        out[0] = NULL
        return out
