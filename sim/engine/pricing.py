"""The cost model as the compiled loop reads it: lookup tables and constants in arrays.

sim.cost's `step_ms` prices steps from tables of the linear layers and the LM head by token
count, the attention formula and a smooth-max table. `price_tables` hands the same tables and
constants to `sim.engine.kernel.price_step`, which repeats `step_ms`'s arithmetic for one step in
the same order, so a timed run's step times are the cost model's to the last bit (a test checks).
"""

from __future__ import annotations

import numpy as np

from sim import cost
from sim.engine.layout import (
    P_BW,
    P_COMM_ALPHA_MS,
    P_COMM_BETA,
    P_COMM_CALLS,
    P_COMM_ON,
    P_COMM_PER_TOKEN,
    P_FLOPS,
    P_GRID_STEP,
    P_LATENCY_MS,
    P_LAYERS,
    P_OVERHEAD_MS,
    P_OVERLAP,
    P_PER_KV,
    P_PER_PAIR,
    P_PER_Q,
    PC_ROWS,
)

Tables = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def no_pricing() -> Tables:
    """Tables for an untimed run (never read)."""
    one = np.zeros(1)
    return one, one, one, np.zeros(PC_ROWS)


def price_tables(dep, top_tokens: int, top_seqs: int, *, overlap: bool) -> Tables:
    """(linear table, LM-head table, smooth-max table, constants) for `dep`, valid for steps of
    up to top_tokens tokens and top_seqs sequences; `overlap`: async scheduling hides the CPU
    part of a busy step (sim.timed.timer_for)."""
    consts = cost.cost_constants(dep)
    gpu, model, bw, flops, kv_tok, f = consts
    layers = model.num_layers
    top = np.array([max(int(top_tokens), int(top_seqs), 1)], dtype=np.int64)
    lin = (
        layers
        * cost._table_for(
            top, dep, "linear", lambda u: cost._linear_per_layer(dep, f, u, bw, flops)
        )[0]
    )
    v_n = -(-model.vocab_size // dep.tp)
    wb = dep.weight_bytes_per_elem
    lm = cost._table_for(
        top,
        dep,
        "lm_head",
        lambda u: cost.gemm_ms(
            u, v_n, model.hidden_size, bw_bps=bw, flops=flops, sms=gpu.sm_count, f=f, w_bytes=wb
        ),
    )[0]
    g = cost._smooth_table(float(f.smooth_p))
    pc = np.zeros(PC_ROWS)
    pc[P_LAYERS] = layers
    pc[P_LATENCY_MS] = f.kernel_latency_us * 1e-3
    per_kv, per_q, a_bw, per_pair, a_flops = cost._attention_coeffs(dep, consts)
    pc[P_PER_KV], pc[P_PER_Q], pc[P_BW] = per_kv, per_q, a_bw
    pc[P_PER_PAIR], pc[P_FLOPS] = per_pair, a_flops
    pc[P_GRID_STEP] = float(cost._R_GRID[1])
    if dep.tp > 1:
        calls, alpha_ms, per_token, beta = cost._comm_coeffs(dep)
        pc[P_COMM_ON] = 1.0
        pc[P_COMM_CALLS], pc[P_COMM_ALPHA_MS] = calls, alpha_ms
        pc[P_COMM_PER_TOKEN], pc[P_COMM_BETA] = per_token, beta
    pc[P_OVERHEAD_MS] = cost.OVERHEAD_MS
    pc[P_OVERLAP] = 1.0 if overlap else 0.0
    return (
        np.ascontiguousarray(lin, dtype=np.float64),
        np.ascontiguousarray(lm, dtype=np.float64),
        np.ascontiguousarray(g, dtype=np.float64),
        pc,
    )
