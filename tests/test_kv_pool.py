"""The prefix-cache pool's shortcut (sim/kv.py): per prefix id, the run of its blocks cached from
the first, kept as blocks are hashed and evicted, must equal a walk of the hash map key by key."""

from __future__ import annotations

import numpy as np
import pytest

from sim.kv import PrefixCachePool

BS = 4


def _walked(pool: PrefixCachePool, pid: int) -> int:
    run = 0
    while pool._cached.get(("p", pid, run)):
        run += 1
    return run


def _walked_lookup(pool: PrefixCachePool, r: int, num_tokens: int) -> list[int]:
    """vLLM's find_longest_cache_hit read plainly: block after block until the first miss."""
    hits = []
    shared = pool._prefix_blocks[r]
    for j in range((num_tokens - 1) // BS):
        key = ("p", pool._prefix_id[r], j) if j < shared else ("r", r, j)
        blocks = pool._cached.get(key)
        if not blocks:
            break
        hits.append(blocks[0])
    return hits


@pytest.mark.parametrize("seed", range(12))
def test_prefix_run_matches_a_walk_under_random_traffic(seed):
    rng = np.random.default_rng(seed)
    n = 40
    prefix_id = rng.integers(-1, 3, n)
    prefix_tokens = np.where(prefix_id >= 0, rng.integers(1, 6, n) * BS + rng.integers(0, BS, n), 0)
    prompt = prefix_tokens + rng.integers(1, 5 * BS, n)
    pool = PrefixCachePool(48, BS, prefix_id, prefix_tokens)
    live: list[int] = []
    evicted_some = False
    for r in range(n):
        hits, evictable = pool.lookup(r, int(prompt[r]))
        assert hits == _walked_lookup(pool, r, int(prompt[r]))
        need = -(-int(prompt[r]) // BS) - len(hits)
        while live and need + evictable > pool.num_free:  # free the oldest until it fits
            pool.free(live.pop(0))
        if need + evictable > pool.num_free:
            continue
        pool.take_hits(r, hits)
        evicted_some |= need > len(pool._free_unhashed)  # the rest comes off the hashed queue
        pool.allocate(r, need)
        pool.cache(r, int(prompt[r]) // BS)
        live.append(r)
        for pid in range(3):
            assert len(pool._prefix_run.get(pid, [])) == _walked(pool, pid)
        got = pool.hit_blocks(np.arange(n), prompt)
        assert got.tolist() == [len(_walked_lookup(pool, i, int(prompt[i]))) for i in range(n)]
    assert evicted_some  # the pool is small enough that hashed blocks get evicted
