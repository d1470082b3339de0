"""Block tables step by step: which KV block each request holds, for lessons that draw the pool.

The scheduler keeps only block counts unless prefix caching is on (sim/kv.py). A run traced with
`trace_blocks=True` goes through vLLM's block pool at every step, so block ids follow vLLM's free
queue (SCHEDULER.md b): allocation from the front, a finished or preempted request's blocks freed
tail first, unhashed ones to the front and, with prefix caching, hashed ones to the back, still
findable until evicted. The engine's decisions are the same as without the trace (the tests check
it); only the bookkeeping is block by block.

A `BlockTrace` holds the state at the end of every turn of the loop, after its `schedule()` and
the output it processed (the synchronous engine processes step k's output in turn k; async
scheduling, step k-1's). `owners(k)` gives one value per block, as the lesson's grid draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

FREE, NULL, CACHED = -1, -2, -3  # owners(): a free block, the null block, free but still cached


class BlockTraceLog:
    """Collects one snapshot per step while the engine runs (see Engine.trace_blocks)."""

    def __init__(self) -> None:
        self.ids: list[np.ndarray] = []
        self.lens: list[np.ndarray] = []
        self.cached: list[np.ndarray] = []
        self.computed: list[np.ndarray] = []
        self.cache_counts: list[tuple[int, int, int, int]] = []
        self.used: list[int] = []

    def add(
        self, pool: Any, blocks: np.ndarray, computed: np.ndarray, used: int, counts: list[int]
    ) -> None:
        """One snapshot; `counts` are the engine's PrefixCacheStats so far (sim/run.py)."""
        ids, cached = pool.tables()
        self.used.append(used)
        self.ids.append(ids)
        self.lens.append(blocks.astype(np.int32))
        self.cached.append(cached)
        self.computed.append(np.where(blocks > 0, computed, 0).astype(np.int32))
        self.cache_counts.append(tuple(counts))

    def trace(self, config: Any) -> BlockTrace:
        n = self.lens[0].shape[0] if self.lens else 0
        lens = np.stack(self.lens) if self.lens else np.zeros((0, n), dtype=np.int32)
        computed = np.stack(self.computed) if self.computed else lens.copy()
        counts = np.array(self.cache_counts, dtype=np.int64).reshape(-1, 4)
        return BlockTrace(
            num_gpu_blocks=config.num_gpu_blocks,
            block_size=config.block_size,
            table_lens=lens,
            table_ids=tuple(self.ids),
            cached_free=tuple(self.cached),
            num_computed_tokens=computed,
            prefix_queries=counts[:, 0],
            prefix_hits=counts[:, 1],
            preempted_queries=counts[:, 2],
            preempted_hits=counts[:, 3],
            blocks_used=np.array(self.used, dtype=np.int64),
        )


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
