"""KV block arithmetic shared by the engine and the lessons: blocks for a number of tokens, and
vLLM's start-up check that one request of max_model_len tokens fits the pool.

The block pool itself, with prefix caching, lives in the engine (sim/engine/pool.py).
"""

from __future__ import annotations

from typing import Any

from numpy.typing import ArrayLike


def cdiv(a: ArrayLike, b: ArrayLike) -> Any:
    """Ceiling division for ints and integer arrays."""
    return -(-a // b)


def request_blocks(num_tokens: int, block_size: int) -> int:
    """The KV blocks one request of `num_tokens` tokens holds."""
    return int(cdiv(num_tokens, block_size))


def refuses_to_start(num_gpu_blocks: int, max_model_len: int, block_size: int) -> bool:
    """vLLM's start-up check (v1/core/kv_cache_planning.py `get_kv_cache_configs`): one
    request of `max_model_len` tokens must fit the usable blocks, the null block kept back. It
    holds for a pool sized from GPU memory and for one set with --num-gpu-blocks-override."""
    return num_gpu_blocks - 1 < request_blocks(max_model_len, block_size)
