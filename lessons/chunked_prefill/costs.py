"""Where chunking's extra time to first token goes, by the cost model's own parts.

Both lanes time the prompt's steps with sim.cost: the lane without chunking in one step, the
chunked lane in several. The difference of their sums (the newcomer's extra wait) splits exactly
into the parts `step_costs` returns, and the linear layers' part further into two counterfactual
prices of the same function: the users' decode tokens, which ride in every chunk step instead of
one (linear layers at the chunked lane's total tokens, against the whole step's), and smaller
matrix products (the chunk steps one by one, against all their tokens in one step). The ridge
(sim.cost.ridge_tokens) says whether the chunk steps are past the point where the linear layers'
arithmetic takes longer than reading their weights; one read of the weights is
sim.cost.weight_read_ms.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lessons.chunked_prefill.lanes import Lane
from sim.cost import Deployment, StepCosts, ridge_tokens, step_costs, weight_read_ms


def _costs(dep: Deployment, lane: Lane) -> StepCosts:
    run, rows = lane.run, lane.prompt_steps
    return step_costs(
        dep,
        query_tokens=run.num_scheduled_tokens[rows],
        num_seqs=run.num_scheduled_seqs[rows],
        kv_read_tokens=run.kv_read_tokens[rows],
        attn_pairs=run.attn_pairs[rows],
    )


def _linear_ms(dep: Deployment, tokens: np.ndarray) -> np.ndarray:
    """The linear layers' time for steps of `tokens` tokens (it depends on nothing else)."""
    q = np.asarray(tokens, dtype=np.int64)
    return step_costs(
        dep, query_tokens=q, num_seqs=np.minimum(q, 1), kv_read_tokens=np.zeros_like(q)
    ).linear_ms


def extra_parts(dep: Deployment, whole: Lane, chunked: Lane, longer: bool) -> dict[str, Any]:
    """The Readout's fields on the chunked lane's extra time to first token (`longer`: that
    lane's first token comes no sooner, and it reads the prompt in several steps). The five
    extra_*_ms parts add up to the difference of the two lanes' prompt steps, which is the
    difference of their times to first token (each prompt arrives as its first step starts)."""
    w, c = _costs(dep, whole), _costs(dep, chunked)
    q_whole = whole.run.num_scheduled_tokens[whole.prompt_steps]
    q = chunked.run.num_scheduled_tokens[chunked.prompt_steps]
    seqs = chunked.run.num_scheduled_seqs[chunked.prompt_steps]
    linear_all = float(_linear_ms(dep, np.array([q.sum()]))[0])
    chunks = q - (seqs - 1)  # each step's decodes take one token each, the prompt the rest
    before = np.cumsum(chunks) - chunks  # prompt tokens already in the cache at each chunk
    kv = chunked.run.kv_read_tokens[chunked.prompt_steps]
    kv_whole = whole.run.kv_read_tokens[whole.prompt_steps]
    ridge = ridge_tokens(dep)
    step_tokens = int(q.max())
    past = step_tokens >= ridge
    extra_steps = int(q.size - q_whole.size)

    def diff(part: str) -> float:
        return float(getattr(c, part).sum() - getattr(w, part).sum())

    return {
        "extra_steps": extra_steps,
        "extra_fixed_ms": diff("overhead_ms") + diff("comm_ms"),
        "extra_decode_ms": linear_all - float(w.linear_ms.sum()),
        "extra_gemm_ms": float(c.linear_ms.sum()) - linear_all,
        "gemm_loss_pct": 100.0 * (float(c.linear_ms.sum()) / linear_all - 1.0),
        "extra_attention_ms": diff("attention_ms"),
        "extra_lm_head_ms": diff("lm_head_ms"),
        "user_kv_reread": int(kv.sum() - before.sum() - kv_whole.sum()),
        "chunk_kv_reread": int(before.sum()),
        "ridge": ridge,
        "ridge_ratio": step_tokens / ridge,
        "weight_read_ms": weight_read_ms(dep),
        "longer_past_ridge": longer and past,
        "longer_below_ridge": longer and not past,
    }
