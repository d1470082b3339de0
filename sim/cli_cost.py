"""Command-line sub-commands `step-time` and `defaults` (ARCHITECTURE.md, a contract).

Why separate: the dispatcher (sim/__main__.py) stays small; this module only parses these two
commands' flags, calls sim.cost / sim.hardware and prints JSON to stdout.

step-time: each --tokens value N is one step holding a prompt chunk of N tokens (one new
sequence with no cached context) plus --decode-seqs S decodes, each reading --context-tokens L
cached tokens. The JSON's "tokens" is N; the step's query tokens are N + S.
"""

from __future__ import annotations

import argparse
import json
import sys

from sim.cost import MAX_STEP_TOKENS, Deployment, mixed_batch, parse_token_list, step_costs
from sim.errors import SimInputError
from sim.hardware import default_batch_limits
from sim.models import kv_pool


def _count(name: str, text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise SimInputError(f"{name} must be an integer, got {text!r}") from None
    if v < 0 or v > MAX_STEP_TOKENS:
        raise SimInputError(f"{name} {v} out of range 0..{MAX_STEP_TOKENS:,}")
    return v


def step_time_rows(
    gpu: str,
    model: str,
    *,
    tp: int = 1,
    dtype: str = "bf16",
    tokens: list[int],
    decode_seqs: int = 0,
    context_tokens: int = 0,
) -> list[dict]:
    """The step-time command's output rows (see the module docstring for the step's makeup)."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    if decode_seqs == 0 and 0 in tokens:
        raise SimInputError("--tokens 0 with no --decode-seqs is an empty step")
    c = step_costs(dep, **mixed_batch(tokens, decode_seqs, context_tokens))
    fits = kv_pool(gpu, model, tp=tp, dtype=dtype).fits
    rows = []
    for i, n in enumerate(tokens):
        rows.append(
            {
                "tokens": int(n),
                "step_ms": round(float(c.step_ms[i]), 4),
                "linear_ms": round(float(c.linear_ms[i]), 4),
                "attention_ms": round(float(c.attention_ms[i]), 4),
                "lm_head_ms": round(float(c.lm_head_ms[i]), 4),
                "comm_ms": round(float(c.comm_ms[i]), 4),
                "overhead_ms": round(float(c.overhead_ms[i]), 4),
                "bound": "memory" if bool(c.memory_bound[i]) else "compute",
                "fits": bool(fits),
            }
        )
    return rows


def _step_time(args: argparse.Namespace) -> int:
    rows = step_time_rows(
        args.gpu,
        args.model,
        tp=_count("--tp", args.tp),
        dtype=args.dtype,
        tokens=parse_token_list(args.tokens, what="--tokens", max_values=100_000),
        decode_seqs=_count("--decode-seqs", args.decode_seqs),
        context_tokens=_count("--context-tokens", args.context_tokens),
    )
    sys.stdout.write(json.dumps(rows) + "\n")
    return 0


def _defaults(args: argparse.Namespace) -> int:
    sys.stdout.write(json.dumps(default_batch_limits(args.gpu, args.usage)) + "\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `step-time` and `defaults` to the `python -m sim` parser."""
    st = subparsers.add_parser(
        "step-time",
        help="time of one engine step and its parts, per --tokens value (JSON list)",
        description=__doc__.split("\n\n")[2],
    )
    st.add_argument("--gpu", required=True, help="GPU key (sim/data/gpus.csv)")
    st.add_argument("--model", required=True, help="model key (sim/data/models.csv)")
    st.add_argument("--tp", default="1", help="tensor-parallel size: 1, 2, 4 or 8")
    st.add_argument("--dtype", default="bf16", help="weight dtype: bf16 or fp8")
    st.add_argument("--tokens", required=True, help="prompt-chunk tokens, N[,N,...]")
    st.add_argument("--decode-seqs", default="0", help="decodes in the same step (S)")
    st.add_argument("--context-tokens", default="0", help="cached tokens each decode reads (L)")
    st.set_defaults(func=_step_time)

    de = subparsers.add_parser("defaults", help="vLLM's default token budget and max_num_seqs")
    de.add_argument("--gpu", required=True, help="GPU key (sim/data/gpus.csv)")
    de.add_argument("--usage", default="server", help="server (vllm serve) or llm (vllm.LLM)")
    de.set_defaults(func=_defaults)
