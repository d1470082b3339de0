"""KV block accounting: block arithmetic, and the block pool used when prefix caching is on.

Without prefix caching a request's blocks are interchangeable, so the scheduler keeps only counts
(blocks held per request, free blocks) as NumPy arrays and never needs this pool. With prefix
caching, which blocks survive in the cache depends on vLLM's free-queue order, so
`PrefixCachePool` models vLLM's `BlockPool` (block_pool.py) block by block: ref counts, a hash per
full block, the free queue (freed unhashed blocks at the front, freed hashed blocks at the back in
LRU order, allocation from the front evicting hashes), and the hash map whose first entry a lookup
returns. Block identity (shared with the reference scheduler): block j of request r is
("p", prefix_id, j) while it lies inside the request's shared prefix, else ("r", r, j).

With `hashing=False` the same pool keeps block ids with prefix caching off (nothing is hashed,
so every freed block goes to the front of the free queue): sim/blocks.py traces a run's block
tables with it, for the lessons that draw the pool block by block.
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import chain
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def cdiv(a: ArrayLike, b: ArrayLike) -> Any:
    """Ceiling division for ints and integer arrays."""
    return -(-a // b)


class PrefixCachePool:
    """vLLM's block pool with prefix caching. Block 0 is the null block and is never handed out.

    Operations cost Python work per block touched (the price of exact LRU and hash-map order);
    the scheduler calls it only when `enable_prefix_caching` is on.
    """

    def __init__(
        self,
        num_gpu_blocks: int,
        block_size: int,
        prefix_id: np.ndarray,
        prefix_tokens: np.ndarray,
        *,
        hashing: bool = True,
    ) -> None:
        self.block_size = block_size
        self.hashing = hashing  # False: prefix caching off, ids only (no hash, no hit)
        # Unhashed free blocks: interchangeable; the end of the list is the front of the queue.
        self._free_unhashed: list[int] = list(range(num_gpu_blocks - 1, 0, -1))
        # Hashed free blocks in queue order (first = next to be evicted).
        self._lru: OrderedDict[int, None] = OrderedDict()
        self._ref = [0] * num_gpu_blocks
        self._hash: list[tuple | None] = [None] * num_gpu_blocks
        self._cached: dict[tuple, list[int]] = {}
        n = int(prefix_id.shape[0])
        self._tables: list[list[int]] = [[] for _ in range(n)]
        # Full blocks of each request that are hashed (an array: the scheduler filters on it).
        self.num_cached = np.zeros(n, dtype=np.int64)
        # Number of leading blocks of each request that are prefix blocks.
        prefix_blocks = np.where(prefix_id >= 0, prefix_tokens // block_size, 0)
        self._prefix_blocks = prefix_blocks.tolist()
        self._prefix_id = prefix_id.tolist()
        self._prefix_arrays = (np.asarray(prefix_id, dtype=np.int64), prefix_blocks)
        self.own_hashed = np.zeros(n, dtype=bool)  # r has hashed a block past its shared prefix

    @property
    def num_free(self) -> int:
        return len(self._free_unhashed) + len(self._lru)

    def _key(self, r: int, j: int) -> tuple:
        if j < self._prefix_blocks[r]:
            return ("p", self._prefix_id[r], j)
        return ("r", r, j)

    def lookup(self, r: int, num_tokens: int) -> tuple[list[int], int]:
        """Cached blocks a request with `num_tokens` known tokens would hit (longest run of full
        blocks, capped at num_tokens - 1 tokens), and how many of them sit in the free queue."""
        hits: list[int] = []
        if not self.hashing:
            return hits, 0
        for j in range((num_tokens - 1) // self.block_size):
            blocks = self._cached.get(self._key(r, j))
            if not blocks:
                break
            hits.append(blocks[0])
        evictable = sum(1 for b in hits if self._ref[b] == 0)
        return hits, evictable

    def hit_blocks(self, rs: np.ndarray, num_tokens: np.ndarray) -> np.ndarray:
        """How many blocks `lookup` would hit for each of rs: a shared prefix's cached run is
        found once per prefix id; only a request that has hashed blocks of its own (it ran and
        was preempted) and matches its whole shared prefix is looked up block by block."""
        out = np.zeros(rs.shape[0], dtype=np.int64)
        if not self.hashing or not rs.shape[0]:
            return out
        cap = (np.asarray(num_tokens, dtype=np.int64) - 1) // self.block_size
        pid, pblocks = (a[rs] for a in self._prefix_arrays)
        for p in np.unique(pid[pid >= 0]).tolist():
            sel = pid == p
            longest, run = int(pblocks[sel].max()), 0
            while run < longest and self._cached.get(("p", p, run)):
                run += 1
            out[sel] = np.minimum(run, np.minimum(pblocks[sel], cap[sel]))
        own = np.flatnonzero(self.own_hashed[rs] & (out >= np.minimum(pblocks, cap)))
        for i in own.tolist():
            out[i] = len(self.lookup(int(rs[i]), int(num_tokens[i]))[0])
        return out

    def take_hits(self, r: int, hits: list[int]) -> None:
        """Share the hit blocks with request r (touch: out of the free queue, ref count + 1)."""
        for b in hits:
            if self._ref[b] == 0:
                del self._lru[b]
            self._ref[b] += 1
        self._tables[r].extend(hits)
        self.num_cached[r] = len(hits)

    def allocate(self, r: int, count: int) -> None:
        """Append `count` blocks from the front of the free queue to r (evicting their hashes)."""
        table = self._tables[r]
        for _ in range(count):
            if self._free_unhashed:
                b = self._free_unhashed.pop()
            else:
                b, _ = self._lru.popitem(last=False)
                key = self._hash[b]
                owners = self._cached[key]
                owners.remove(b)
                if not owners:
                    del self._cached[key]
                self._hash[b] = None
            self._ref[b] = 1
            table.append(b)

    def cache(self, r: int, num_full_blocks: int) -> None:
        """Hash r's blocks that are now full of known, scheduled tokens (never un-hashes)."""
        if not self.hashing:
            return
        table = self._tables[r]
        for j in range(int(self.num_cached[r]), num_full_blocks):
            b = table[j]
            key = self._key(r, j)
            if key[0] == "r":
                self.own_hashed[r] = True
            self._hash[b] = key
            self._cached.setdefault(key, []).append(b)
        if num_full_blocks > self.num_cached[r]:
            self.num_cached[r] = num_full_blocks

    def free(self, r: int) -> None:
        """Release all of r's blocks, tail first: hashed to the back, unhashed to the front."""
        table = self._tables[r]
        for b in reversed(table):
            self._ref[b] -= 1
            if self._ref[b] == 0:
                if self._hash[b] is not None:
                    self._lru[b] = None
                else:
                    self._free_unhashed.append(b)
        table.clear()
        self.num_cached[r] = 0

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Every request's block table, concatenated in request order, and the free blocks that
        keep a hash (in eviction order: the first is the next to be evicted)."""
        ids = np.fromiter(chain.from_iterable(self._tables), dtype=np.int32)
        return ids, np.fromiter(self._lru, dtype=np.int32, count=len(self._lru))
