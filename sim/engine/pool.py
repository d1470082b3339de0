"""vLLM's KV block pool, block by block, as compiled functions over the engine's arrays.

It follows vLLM 0.33/0.34's `BlockPool` (v1/core/block_pool.py) and `KVCacheManager`: a free
queue (a doubly linked list; block 0, the null block, is its sentinel), reference counts, a hash
per full block and a hash map whose lookup returns the first cached block of a hash still
present. Freed blocks go tail first: hashed ones to the back of the queue (LRU, still findable
until evicted), unhashed ones to the front as one run (`prepend_n`). Allocation takes the front
and evicts its hash. Without prefix caching only counts are kept (no function here is called).

Block identity (what a hash stands for): block j of request r is (PREFIX_GROUP[r], j) while
j < SHARED_BLOCKS[r] (its shared system prompt), else (TAIL_GROUP[r], j). The tail group is r's
own, except for a request whose prompt is exactly a shared prefix: requests with the same prompt
decode the same tokens (greedy decoding; vLLM's recordings sample the same token for all), so
their blocks past the prompt are alike too and they share a tail group (sim/engine/state.py).
A key is group * KEY_STRIDE + j. The hash map is open addressing with linear probing in arrays
(`hmap`), so the pool runs compiled and as plain Python alike.
"""

from __future__ import annotations

import numpy as np

from sim.engine.jit import njit
from sim.engine.layout import (
    C_BS,
    C_KEY_STRIDE,
    H_HEAD,
    H_KEY,
    H_TAIL,
    KEY,
    KEY_NEXT,
    KEY_PREV,
    NEXT,
    NUM_CACHED,
    PREFIX_GROUP,
    PREV,
    REF,
    S_FREE,
    SHARED_BLOCKS,
    TABLE_START,
    TAIL_GROUP,
)


@njit
def block_key(req: np.ndarray, cfg: np.ndarray, r: int, j: int) -> int:
    """The identity of request r's block j (see the module docstring)."""
    if j < req[SHARED_BLOCKS, r]:
        return req[PREFIX_GROUP, r] * cfg[C_KEY_STRIDE] + j
    return req[TAIL_GROUP, r] * cfg[C_KEY_STRIDE] + j


@njit
def _slot(hmap: np.ndarray, key: int) -> int:
    """The slot holding `key`, or the empty slot where it would go."""
    mask = hmap.shape[1] - 1
    i = ((key * 0x9E3779B1) ^ (key >> 13)) & mask
    while hmap[H_KEY, i] != -1 and hmap[H_KEY, i] != key:
        i = (i + 1) & mask
    return i


@njit
def first_cached(hmap: np.ndarray, key: int) -> int:
    """The first cached block with this key, or -1."""
    i = _slot(hmap, key)
    return hmap[H_HEAD, i] if hmap[H_KEY, i] == key else -1


@njit
def _delete_slot(hmap: np.ndarray, i: int) -> None:
    """Empty slot i, moving later entries of its probe run back (no tombstones)."""
    mask = hmap.shape[1] - 1
    j = i
    while True:
        hmap[H_KEY, i] = -1
        while True:
            j = (j + 1) & mask
            if hmap[H_KEY, j] == -1:
                return
            k = hmap[H_KEY, j]
            home = ((k * 0x9E3779B1) ^ (k >> 13)) & mask
            # move j back to i unless its home lies cyclically in (i, j]
            if i <= j:
                if i < home <= j:
                    continue
            elif home > i or home <= j:
                continue
            break
        hmap[H_KEY, i] = hmap[H_KEY, j]
        hmap[H_HEAD, i] = hmap[H_HEAD, j]
        hmap[H_TAIL, i] = hmap[H_TAIL, j]
        i = j


@njit
def cache_block(blk: np.ndarray, hmap: np.ndarray, b: int, key: int) -> None:
    """Give block b its hash: it joins the end of its key's list (lookups return the first)."""
    blk[KEY, b] = key
    i = _slot(hmap, key)
    if hmap[H_KEY, i] == key:
        last = hmap[H_TAIL, i]
        blk[KEY_NEXT, last] = b
        blk[KEY_PREV, b] = last
        blk[KEY_NEXT, b] = -1
        hmap[H_TAIL, i] = b
    else:
        hmap[H_KEY, i] = key
        hmap[H_HEAD, i] = b
        hmap[H_TAIL, i] = b
        blk[KEY_PREV, b] = -1
        blk[KEY_NEXT, b] = -1


@njit
def _evict(blk: np.ndarray, hmap: np.ndarray, b: int) -> None:
    """Drop block b's hash (it is being reused)."""
    key = blk[KEY, b]
    i = _slot(hmap, key)
    p, q = blk[KEY_PREV, b], blk[KEY_NEXT, b]
    if p == -1:
        if q == -1:
            _delete_slot(hmap, i)
        else:
            hmap[H_HEAD, i] = q
            blk[KEY_PREV, q] = -1
    else:
        blk[KEY_NEXT, p] = q
        if q == -1:
            hmap[H_TAIL, i] = p
        else:
            blk[KEY_PREV, q] = p
    blk[KEY, b] = -1


@njit
def _unlink(blk: np.ndarray, b: int) -> None:
    p, q = blk[PREV, b], blk[NEXT, b]
    blk[NEXT, p] = q
    blk[PREV, q] = p


@njit
def _push_back(blk: np.ndarray, b: int) -> None:
    last = blk[PREV, 0]
    blk[NEXT, last] = b
    blk[PREV, b] = last
    blk[NEXT, b] = 0
    blk[PREV, 0] = b


@njit
def _push_front(blk: np.ndarray, b: int) -> None:
    first = blk[NEXT, 0]
    blk[PREV, first] = b
    blk[NEXT, b] = first
    blk[PREV, b] = 0
    blk[NEXT, 0] = b


@njit
def init_pool(blk: np.ndarray, hmap: np.ndarray, st: np.ndarray) -> None:
    """Every block but the null block free, in id order; nothing hashed."""
    nb = blk.shape[1]
    blk[REF, :] = 0
    blk[KEY, :] = -1
    blk[KEY_PREV, :] = -1
    blk[KEY_NEXT, :] = -1
    hmap[H_KEY, :] = -1
    for b in range(nb):
        blk[NEXT, b] = (b + 1) % nb
        blk[PREV, b] = (b - 1) % nb
    st[S_FREE] = nb - 1


@njit
def lookup(
    req: np.ndarray,
    cfg: np.ndarray,
    blk: np.ndarray,
    hmap: np.ndarray,
    r: int,
    num_tokens: int,
    hits: np.ndarray,
) -> int:
    """vLLM's `get_computed_blocks`: the longest run of r's leading full blocks that are cached,
    capped at num_tokens - 1 tokens (the last token is recomputed for its logits). Writes the
    blocks into `hits`; returns how many."""
    n = (num_tokens - 1) // cfg[C_BS]
    for j in range(n):
        b = first_cached(hmap, block_key(req, cfg, r, j))
        if b == -1:
            return j
        hits[j] = b
    return n


@njit
def count_hits(req: np.ndarray, cfg: np.ndarray, hmap: np.ndarray, r: int, num_tokens: int) -> int:
    """How many blocks `lookup` would find, without writing them."""
    n = (num_tokens - 1) // cfg[C_BS]
    for j in range(n):
        if first_cached(hmap, block_key(req, cfg, r, j)) == -1:
            return j
    return n


@njit
def take_hits(
    req: np.ndarray,
    blk: np.ndarray,
    table: np.ndarray,
    st: np.ndarray,
    r: int,
    hits: np.ndarray,
    k: int,
) -> None:
    """Share the k hit blocks with r (`touch`): out of the free queue if free, ref + 1."""
    base = req[TABLE_START, r]
    for j in range(k):
        b = hits[j]
        if blk[REF, b] == 0:
            _unlink(blk, b)
            st[S_FREE] -= 1
        blk[REF, b] += 1
        table[base + j] = b
    req[NUM_CACHED, r] = k


@njit
def allocate(
    blk: np.ndarray,
    hmap: np.ndarray,
    table: np.ndarray,
    st: np.ndarray,
    start: int,
    held: int,
    count: int,
) -> None:
    """Append `count` blocks from the front of the free queue to the table at `start` that
    holds `held` blocks, evicting their hashes."""
    for j in range(count):
        b = blk[NEXT, 0]
        _unlink(blk, b)
        if blk[KEY, b] != -1:
            _evict(blk, hmap, b)
        blk[REF, b] = 1
        table[start + held + j] = b
    st[S_FREE] -= count


@njit
def cache_upto(
    req: np.ndarray,
    cfg: np.ndarray,
    blk: np.ndarray,
    hmap: np.ndarray,
    table: np.ndarray,
    r: int,
    num_full_blocks: int,
) -> None:
    """Hash r's blocks up to `num_full_blocks` full ones (vLLM's `cache_blocks`)."""
    done = req[NUM_CACHED, r]
    if num_full_blocks <= done:
        return
    base = req[TABLE_START, r]
    for j in range(done, num_full_blocks):
        b = table[base + j]
        if blk[KEY, b] == -1:
            cache_block(blk, hmap, b, block_key(req, cfg, r, j))
    req[NUM_CACHED, r] = num_full_blocks


@njit
def free_table(
    req: np.ndarray, blk: np.ndarray, table: np.ndarray, st: np.ndarray, r: int, held: int
) -> None:
    """Release r's `held` blocks, tail first: hashed ones to the back of the free queue, the
    unhashed ones to the front as one run in that order (vLLM's `free_blocks`/`prepend_n`)."""
    base = req[TABLE_START, r]
    first_run = -1  # the last unhashed block pushed to the front so far
    for j in range(held - 1, -1, -1):
        b = table[base + j]
        blk[REF, b] -= 1
        if blk[REF, b] == 0:
            st[S_FREE] += 1
            if blk[KEY, b] != -1:
                _push_back(blk, b)
            elif first_run == -1:
                _push_front(blk, b)
                first_run = b
            else:  # after the run's previous block: the run keeps freeing order
                q = blk[NEXT, first_run]
                blk[NEXT, first_run] = b
                blk[PREV, b] = first_run
                blk[NEXT, b] = q
                blk[PREV, q] = b
                first_run = b
    req[NUM_CACHED, r] = 0
