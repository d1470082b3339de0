"""The KV block pool (sim/engine/pool.py) and block arithmetic (sim/kv.py).

The pool's hash map is open addressing in arrays with deletion by moving entries back; held
against a Python dict of lists under random caching and eviction, it must find the same first
block for every key. The free queue must keep vLLM's order: hashed blocks freed to the back,
unhashed ones to the front as one run in freeing order (`prepend_n`), allocation from the front.
vLLM's start-up check keeps the null block back.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim.engine import layout as L
from sim.engine import pool


def _empty_pool(num_blocks: int, hash_slots: int = 64):
    blk = np.zeros((L.BLK_ROWS, num_blocks), dtype=np.int64)
    hmap = np.full((L.H_ROWS, hash_slots), -1, dtype=np.int64)
    st = np.zeros(L.ST_ROWS, dtype=np.int64)
    pool.init_pool(blk, hmap, st)
    return blk, hmap, st


def _free_order(blk) -> list[int]:
    out, b = [], int(blk[L.NEXT, 0])
    while b != 0:
        out.append(b)
        b = int(blk[L.NEXT, b])
    return out


@pytest.mark.parametrize("seed", range(20))
def test_the_hash_map_finds_the_first_cached_block_of_each_key(seed):
    rng = np.random.default_rng(seed)
    blk, hmap, _ = _empty_pool(40, hash_slots=16)  # a small table: long probe runs, wraps
    want: dict[int, list[int]] = {}
    keys = rng.integers(0, 10_000, 12).tolist()
    for _ in range(400):
        b = int(rng.integers(1, 40))
        if blk[L.KEY, b] == -1:
            key = int(rng.choice(keys))
            pool.cache_block(blk, hmap, b, key)
            want.setdefault(key, []).append(b)
        else:
            key = int(blk[L.KEY, b])
            pool._evict(blk, hmap, b)
            want[key].remove(b)
            if not want[key]:
                del want[key]
        for key in keys:
            first = want.get(key, [-1])[0]
            assert pool.first_cached(hmap, key) == first


def test_freed_blocks_go_back_in_vllms_order():
    blk, hmap, st = _empty_pool(9)
    req = np.zeros((L.REQ_ROWS, 1), dtype=np.int64)
    table = np.zeros(8, dtype=np.int64)
    pool.allocate(blk, hmap, table, st, 0, 0, 5)
    assert table[:5].tolist() == [1, 2, 3, 4, 5]  # from the front, in id order
    assert st[L.S_FREE] == 3
    pool.cache_block(blk, hmap, 2, 77)  # blocks 1 and 2 full and hashed, 3-5 not
    pool.cache_block(blk, hmap, 1, 76)
    pool.free_table(req, blk, table, st, 0, 5)
    # tail first: unhashed 5, 4, 3 to the front as one run; hashed 2, then 1, to the back
    assert _free_order(blk) == [5, 4, 3, 6, 7, 8, 2, 1]
    assert st[L.S_FREE] == 8
    pool.allocate(blk, hmap, table, st, 0, 0, 8)  # taking a hashed block evicts its hash
    assert pool.first_cached(hmap, 77) == -1 and pool.first_cached(hmap, 76) == -1


def test_vllm_refuses_to_start_when_one_max_model_len_request_overfills_the_usable_blocks():
    """vLLM keeps the null block back before it checks that one request of max_model_len
    fits (v1/core/kv_cache_planning.py): 8,192 tokens are 512 blocks of 16."""
    from sim.kv import refuses_to_start, request_blocks

    assert request_blocks(8192, 16) == 512 and request_blocks(8193, 16) == 513
    assert refuses_to_start(512, 8192, 16)  # 511 usable
    assert not refuses_to_start(513, 8192, 16)
