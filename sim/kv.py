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
from itertools import chain, islice
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def cdiv(a: ArrayLike, b: ArrayLike) -> Any:
    """Ceiling division for ints and integer arrays."""
    return -(-a // b)


def request_blocks(num_tokens: int, block_size: int) -> int:
    """The KV blocks one request of `num_tokens` tokens holds."""
    return int(cdiv(num_tokens, block_size))


def refuses_to_start(num_gpu_blocks: int, max_model_len: int, block_size: int) -> bool:
    """vLLM 0.33's start-up check (v1/core/kv_cache_planning.py `get_kv_cache_configs`): one
    request of `max_model_len` tokens must fit the usable blocks, the null block kept back. It
    holds for a pool sized from GPU memory and for one set with --num-gpu-blocks-override."""
    return num_gpu_blocks - 1 < request_blocks(max_model_len, block_size)


# The key of a finished request's own block while it waits in the free queue: hashed (it goes
# to the queue's back) but in no hash map entry, as no request will ask for it again.
_GONE = ("gone", -1, -1)


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
        # Per prefix id: the first block of each of its hashes that are all in `_cached` from the
        # first on (the run a lookup hits; kept as blocks are hashed and evicted, so a lookup
        # need not walk the shared prefix key by key).
        self._prefix_run: dict[int, list[int]] = {}
        n = int(prefix_id.shape[0])
        self._tables: list[list[int]] = [[] for _ in range(n)]
        # Full blocks of each request that count as hashed (an array: the scheduler filters on
        # it); its own blocks past the shared prefix enter the hash map when it frees them.
        self.num_cached = np.zeros(n, dtype=np.int64)
        # Number of leading blocks of each request that are prefix blocks.
        prefix_blocks = np.where(prefix_id >= 0, prefix_tokens // block_size, 0)
        self._prefix_blocks = prefix_blocks.tolist()
        self._prefix_id = prefix_id.tolist()
        self._prefix_arrays = (np.asarray(prefix_id, dtype=np.int64), prefix_blocks)
        self.own_hashed = np.zeros(n, dtype=bool)  # r has filled a block past its shared prefix

    @property
    def num_free(self) -> int:
        return len(self._free_unhashed) + len(self._lru)

    def harmless_allocations(self, waiting: np.ndarray, limit: int) -> int:
        """How many blocks (up to `limit`) can be handed out before a cached block that one of
        `waiting` could hit is evicted: the unhashed free blocks, then the free queue's hashed
        blocks up to the first that is in a prefix's cached run (of a prefix id among `waiting`)
        or is a block of a waiting request's own."""
        if not self.hashing:
            return limit  # nothing is cached
        n = len(self._free_unhashed)
        if n >= limit:
            return n
        ws = waiting.tolist()
        pids = {self._prefix_id[r] for r in ws}
        own = {r for r in ws if self.own_hashed[r]}
        runs, hashes = self._prefix_run, self._hash
        for b in islice(self._lru, limit - n):
            kind, who, j = hashes[b]
            if (who in pids and j < len(runs.get(who, ()))) if kind == "p" else who in own:
                return n
            n += 1
        return n

    def lookup(self, r: int, num_tokens: int) -> tuple[list[int], int]:
        """Cached blocks a request with `num_tokens` known tokens would hit (longest run of full
        blocks, capped at num_tokens - 1 tokens), and how many of them sit in the free queue."""
        if not self.hashing:
            return [], 0
        cached, ref = self._cached, self._ref
        n = (num_tokens - 1) // self.block_size
        shared = min(self._prefix_blocks[r], n)
        pid = self._prefix_id[r]
        hits = self._prefix_run.get(pid, [])[:shared]
        if len(hits) == shared:  # the whole shared prefix hit: then the request's own blocks
            for j in range(shared, n):
                blocks = cached.get(("r", r, j))
                if not blocks:
                    break
                hits.append(blocks[0])
        return hits, sum(1 for b in hits if ref[b] == 0)

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
            run = len(self._prefix_run.get(p, ()))
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
        if count <= 0:
            return
        table, ref, unhashed = self._tables[r], self._ref, self._free_unhashed
        take = min(count, len(unhashed))
        if take:  # the unhashed blocks first, front of the queue (the list's end) first
            blocks = unhashed[-take:]
            del unhashed[-take:]
            blocks.reverse()
            for b in blocks:
                ref[b] = 1
            table.extend(blocks)
        for _ in range(count - take):  # then hashed ones, least recently freed first
            b, _ = self._lru.popitem(last=False)
            key = self._hash[b]
            if key is _GONE:
                self._hash[b] = None
                ref[b] = 1
                table.append(b)
                continue
            owners = self._cached[key]
            owners.remove(b)
            run = self._prefix_run.get(key[1]) if key[0] == "p" else None
            if not owners:
                del self._cached[key]
                if run is not None and key[2] < len(run):
                    del run[key[2] :]  # the prefix's cached run stops here
            elif run is not None and key[2] < len(run):
                run[key[2]] = owners[0]  # the hash's first block is now the next one
            self._hash[b] = None
            ref[b] = 1
            table.append(b)

    def cache(self, r: int, num_full_blocks: int) -> None:
        """Hash r's blocks that are now full of known, scheduled tokens (never un-hashes).

        Only r itself can hit its own blocks (past its shared prefix), and only after it has
        freed them: they enter the hash map when freed (`free`), in the order they would have
        entered it here (no other block takes an own key of r meanwhile)."""
        done = int(self.num_cached[r])
        if not self.hashing or num_full_blocks <= done:
            return
        shared = self._prefix_blocks[r]
        if done < shared:  # prefix blocks hashed: the prefix's run may grow
            table, hashes, cached = self._tables[r], self._hash, self._cached
            pid = self._prefix_id[r]
            for j in range(done, min(num_full_blocks, shared)):
                b = table[j]
                key = ("p", pid, j)
                hashes[b] = key
                cached.setdefault(key, []).append(b)
            run = self._prefix_run.setdefault(pid, [])
            while ("p", pid, len(run)) in cached:
                run.append(cached[("p", pid, len(run))][0])
        if num_full_blocks > shared:
            self.own_hashed[r] = True
        self.num_cached[r] = num_full_blocks

    def _hash_own(self, r: int, finished: bool) -> None:
        """Give r's own full blocks not in the hash map yet their keys; a finished request's
        (never looked up again) a key that only marks them hashed (`_GONE`), no map entry."""
        table, hashes, cached = self._tables[r], self._hash, self._cached
        for j in range(self._prefix_blocks[r], int(self.num_cached[r])):
            b = table[j]
            if hashes[b] is None:
                if finished:
                    hashes[b] = _GONE
                else:
                    key = ("r", r, j)
                    hashes[b] = key
                    cached.setdefault(key, []).append(b)

    def free(self, r: int, finished: bool = False) -> None:
        """Release all of r's blocks, tail first: hashed to the back, unhashed to the front.
        `finished`: r never comes back (its own blocks will not be looked up)."""
        if self.hashing:
            self._hash_own(r, finished)
        table, ref, hashes = self._tables[r], self._ref, self._hash
        lru, unhashed = self._lru, self._free_unhashed
        for b in reversed(table):
            ref[b] -= 1
            if ref[b] == 0:
                if hashes[b] is not None:
                    lru[b] = None
                else:
                    unhashed.append(b)
        table.clear()
        self.num_cached[r] = 0

    def tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Every request's block table, concatenated in request order, and the free blocks that
        keep a hash (in eviction order: the first is the next to be evicted)."""
        ids = np.fromiter(chain.from_iterable(self._tables), dtype=np.int32)
        return ids, np.fromiter(self._lru, dtype=np.int32, count=len(self._lru))
