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


class _EagerPool(PrefixCachePool):
    """The pool as it was before own blocks were hashed lazily: every full block enters the hash
    map when it fills, and a finished request's own blocks keep theirs."""

    def cache(self, r: int, num_full_blocks: int) -> None:
        shared, table = self._prefix_blocks[r], self._tables[r]
        for j in range(max(int(self.num_cached[r]), shared), num_full_blocks):
            key = ("r", r, j)
            self._hash[table[j]] = key
            self._cached.setdefault(key, []).append(table[j])
        super().cache(r, num_full_blocks)

    def free(self, r: int, finished: bool = False) -> None:
        super().free(r, finished=False)


@pytest.mark.parametrize("seed", range(16))
def test_lazy_own_hashing_decides_as_eager_hashing(seed):
    """Random admissions, decodes, preemptions (freed, later resumed with their own hits) and
    finishes on the pool and on an eagerly hashing one: the same hits, free-queue order,
    harmless allocations and hit counts after every operation."""
    rng = np.random.default_rng(seed)
    n = 30
    prefix_id = rng.integers(-1, 3, n)
    prefix_tokens = np.where(prefix_id >= 0, rng.integers(1, 4, n) * BS + rng.integers(0, BS, n), 0)
    tokens = prefix_tokens + rng.integers(1, 4 * BS, n)  # known tokens (prompt, then decodes)
    pools = [
        PrefixCachePool(40, BS, prefix_id, prefix_tokens),
        _EagerPool(40, BS, prefix_id, prefix_tokens),
    ]
    waiting, running, preempted_some = list(range(n)), [], False
    for _ in range(400):
        if not waiting and not running:
            break
        move = rng.integers(4)
        if move == 0 and waiting:  # admit the head if it fits (like the scheduler's waiting loop)
            r = waiting[0]
            got = [p.lookup(r, int(tokens[r])) for p in pools]
            assert got[0] == got[1]
            hits, evictable = got[0]
            need = -(-int(tokens[r]) // BS) - len(hits)
            if need + evictable <= pools[0].num_free:
                waiting.pop(0)
                for p in pools:
                    p.take_hits(r, hits)
                    p.allocate(r, need)
                    p.cache(r, int(tokens[r]) // BS)
                running.append(r)
        elif move == 1 and running:  # a decode of every running request
            for r in list(running):
                tokens[r] += 1
                if int(tokens[r] - 1) % BS == 0:  # a new block
                    if pools[0].num_free == 0:
                        continue
                    for p in pools:
                        p.allocate(r, 1)
                for p in pools:
                    p.cache(r, int(tokens[r] - 1) // BS)
        elif move == 2 and running:  # preempt the newest: freed, back at the queue's head
            r = running.pop()
            for p in pools:
                p.free(r)
            waiting.insert(0, r)
            preempted_some = True
        elif move == 3 and running:  # the oldest finishes
            r = running.pop(0)
            for p in pools:
                p.free(r, finished=True)
        assert list(pools[0]._lru) == list(pools[1]._lru)
        assert pools[0]._free_unhashed == pools[1]._free_unhashed
        w = np.array(waiting, dtype=np.int64)
        assert (
            pools[0].hit_blocks(w, tokens[w]).tolist() == pools[1].hit_blocks(w, tokens[w]).tolist()
        )
        limit = pools[0].num_free
        assert pools[0].harmless_allocations(w, limit) == pools[1].harmless_allocations(w, limit)
    assert preempted_some


def test_vllm_refuses_to_start_when_one_max_model_len_request_overfills_the_usable_blocks():
    """vLLM 0.33 keeps the null block back before it checks that one request of max_model_len
    fits (v1/core/kv_cache_planning.py): 8,192 tokens are 512 blocks of 16."""
    from sim.kv import refuses_to_start, request_blocks

    assert request_blocks(8192, 16) == 512 and request_blocks(8193, 16) == 513
    assert refuses_to_start(512, 8192, 16)  # 511 usable
    assert not refuses_to_start(513, 8192, 16)
