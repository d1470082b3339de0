"""Numbers of the lesson "One token budget" that need no replay: the budget rule with k draft
tokens (speculative decoding is not in the scheduler engine yet, so this is the rule's arithmetic,
labelled as such on the page) and vLLM's default limits for every GPU of the catalog."""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.hardware import default_batch_limits, get_gpu, gpu_keys

SPEC_KS = (0, 1, 2, 3, 4, 5)


def spec_arithmetic(
    budget: int, running: int, prompt: int, ks: tuple[int, ...] = SPEC_KS
) -> dict[str, np.ndarray]:
    """The budget rule with k draft tokens: each running request asks 1 + k tokens per step.

    Arithmetic, not a replay: the scheduler engine has no speculative decoding yet. With k = 0 it
    gives the replay's own first chunk and chunk count (the tests check that).
    """
    k = np.asarray(ks, dtype=np.int64)
    decode_tokens = np.minimum(running * (1 + k), budget)
    left = budget - decode_tokens
    chunk = np.minimum(left, prompt)  # the first chunk: what is left, or the whole prompt
    steps = np.where(left > 0, -(-prompt // np.maximum(left, 1)), 0)
    return {"k": k, "decode": decode_tokens, "chunk": chunk, "steps": steps}


def defaults_table() -> list[dict]:
    """vLLM's `vllm serve` defaults for every GPU in the catalog, by the memory CUDA reports."""
    rows = []
    for key in gpu_keys():
        d = default_batch_limits(key, usage="server")
        mem = get_gpu(key).cuda_memory_gib
        rows.append(
            {
                "key": key,
                "memory_gib": mem,
                "budget": d["max_num_batched_tokens"],
                "seqs": d["max_num_seqs"],
            }
        )
    return sorted(rows, key=lambda r: (r["memory_gib"], r["key"]))


def default_tiers() -> list[tuple[int, int, str]]:
    """The catalog's GPUs grouped by their default (budget, max_num_seqs), smallest first."""
    tiers: dict[tuple[int, int], list[str]] = {}
    for r in defaults_table():
        tiers.setdefault((r["budget"], r["seqs"]), []).append(r["key"])
    return [(b, n, ", ".join(g)) for (b, n), g in sorted(tiers.items())]


def spec_numbers(budget: int, running: int, needed: int, k: int, runs: bool) -> dict[str, Any]:
    """The Readout's speculative-decoding fields for k draft tokens (`runs` False: no paragraph)."""
    a = spec_arithmetic(budget, running, needed)
    steps = int(a["steps"][k])
    shrinks = int(a["chunk"][k]) < int(a["chunk"][0])  # the draft tokens take from the chunk
    return {
        "k": k,
        "spec_max_k": SPEC_KS[-1],
        "spec_decode": int(a["decode"][k]),
        "spec_chunk": int(a["chunk"][k]),
        "spec_steps": steps,
        "plain_chunk": int(a["chunk"][0]),
        "plain_steps": int(a["steps"][0]),
        "spec_k0": runs and k == 0,
        "spec_same_steps": runs and k > 0 and steps == int(a["steps"][0]) and shrinks,
        "spec_no_shrink": runs and k > 0 and not shrinks,
        "spec_more_steps": runs and k > 0 and steps != int(a["steps"][0]),
        "spec_decode_list": ", ".join(f"{int(v):,}" for v in a["decode"]),
        "spec_chunk_list": ", ".join(f"{int(v):,}" for v in a["chunk"]),
        "spec_ks": a["k"],
        "spec_decodes": a["decode"],
        "spec_chunks": a["chunk"],
        "spec_steps_all": a["steps"],
    }


def defaults_numbers() -> dict[str, Any]:
    """The Readout's fields on vLLM's defaults by GPU: the three tiers and the chart's bars."""
    rows = defaults_table()
    (sb, sn, sg), (mb, mn, mg), (lb, ln, lg) = default_tiers()
    return {
        "tier_small_budget": sb,
        "tier_small_seqs": sn,
        "tier_small_gpus": sg,
        "tier_mid_budget": mb,
        "tier_mid_seqs": mn,
        "tier_mid_gpus": mg,
        "tier_large_budget": lb,
        "tier_large_seqs": ln,
        "tier_large_gpus": lg,
        "defaults_list": "; ".join(
            f"{r['key']} {r['memory_gib']:.0f} GiB: {r['budget']:,}" for r in rows
        ),
        "defaults_keys": tuple(r["key"] for r in rows),
        "defaults_memory_gib": tuple(float(r["memory_gib"]) for r in rows),
        "defaults_budgets": tuple(int(r["budget"]) for r in rows),
        "defaults_seqs": tuple(int(r["seqs"]) for r in rows),
    }
