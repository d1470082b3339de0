"""`python -m sim replay` and `python -m sim simulate`: the scheduler's command line.

replay SCENARIO.json [--summary]: a reference scenario through the step-exact scheduler; prints
{"steps", "per_request"} in the recordings' schema, or with --summary only
{"num_steps", "total_preemptions", "scheduler_seconds"}.
simulate --gpu G --model M --workload TRACE.csv|SPEC [...]: a timed run priced by the cost model,
printing sim.metrics.summarize's JSON. Bad input raises SimInputError (one line, exit code 2).
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from sim.errors import SimInputError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `replay` and `simulate` sub-commands."""
    p = subparsers.add_parser("replay", help="replay a reference scenario step by step")
    p.add_argument("scenario", help="scenario JSON file (../oracle/README.md schema)")
    p.add_argument(
        "--summary",
        action="store_true",
        help='print only {"num_steps", "total_preemptions", "scheduler_seconds"}',
    )
    p.set_defaults(func=_replay)

    s = subparsers.add_parser("simulate", help="a timed run of a workload on a GPU and model")
    s.add_argument("--gpu", required=True, help="GPU key (sim/data/gpus.csv)")
    s.add_argument("--model", required=True, help="model key (sim/data/models.csv)")
    s.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    s.add_argument("--dtype", default="bf16", help="weights/KV dtype (bf16, fp8)")
    s.add_argument("--workload", required=True, help="a trace .csv file or a workload spec")
    s.add_argument("--max-num-batched-tokens", type=int, default=None)
    s.add_argument("--max-num-seqs", type=int, default=None)
    s.add_argument("--max-model-len", type=int, default=None)
    s.add_argument("--num-gpu-blocks", type=int, default=None)
    s.add_argument("--policy", default="fcfs")
    s.add_argument("--long-prefill-token-threshold", type=int, default=0)
    s.add_argument("--enable-prefix-caching", action="store_true")
    s.add_argument("--no-chunked-prefill", action="store_true")
    s.add_argument(
        "--async-scheduling",
        action="store_true",
        help="vLLM's AsyncScheduler: step k is scheduled before step k-1's output is processed",
    )
    for flag, what in (
        ("--max-num-queued-reqs", "unfinished requests (waiting + running)"),
        ("--max-num-queued-tokens", "prompt tokens of requests without a first token"),
    ):
        s.add_argument(
            flag,
            type=human_readable_int,
            default=None,
            help=f"vLLM's admission limit on {what}; a request over it is refused (HTTP 503). "
            "Accepts 32k (32,000) and 32K (32,768).",
        )
    s.add_argument("--ttft-slo-ms", type=float, default=None)
    s.add_argument("--itl-slo-ms", type=float, default=None)
    s.set_defaults(func=_simulate)


_UNITS = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def human_readable_int(text: str) -> int:
    """vLLM's notation for token counts: 100, 32k = 32,000, 2.5k = 2,500, 1K = 1,024, 1M = 2**20
    (decimal suffixes take a fraction, binary ones do not)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgKMG]?)", text.strip())
    if not match or (match[2].isupper() and "." in match[1]):
        raise argparse.ArgumentTypeError(f"{text!r} is not a count such as 500, 32k or 1M")
    number, unit = match[1], match[2]
    if not unit:
        if "." in number:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        return int(number)
    value = float(number) * _UNITS[unit]
    if value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens")
    return int(value)


def _read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise SimInputError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SimInputError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SimInputError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None


def _replay(args: argparse.Namespace) -> int:
    from sim.replay import replay_run, to_schema

    run = replay_run(_read_json(args.scenario), detail=not args.summary)
    if args.summary:
        out = {
            "num_steps": int(run.num_steps),
            "total_preemptions": run.total_preemptions,
            "scheduler_seconds": run.scheduler_seconds,
        }
        json.dump(out, sys.stdout)
    else:
        sys.stdout.write(json.dumps(to_schema(run), separators=(",", ":")))  # C encoder
    sys.stdout.write("\n")
    return 0


def _simulate(args: argparse.Namespace) -> int:
    from sim.load import load_workload
    from sim.metrics import summarize
    from sim.timed import config_for, deployment, run_timed

    dep = deployment(args.gpu, args.model, tp=args.tp, dtype=args.dtype)
    config = config_for(
        dep,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        max_model_len=args.max_model_len,
        num_gpu_blocks=args.num_gpu_blocks,
        enable_chunked_prefill=not args.no_chunked_prefill,
        enable_prefix_caching=args.enable_prefix_caching,
        policy=args.policy,
        long_prefill_token_threshold=args.long_prefill_token_threshold,
        async_scheduling=args.async_scheduling,
        max_num_queued_reqs=args.max_num_queued_reqs,
        max_num_queued_tokens=args.max_num_queued_tokens,
    )
    workload = load_workload(args.workload, max_model_len=config.max_model_len)
    run = run_timed(config, workload, dep)
    out = summarize(run, ttft_slo_ms=args.ttft_slo_ms, itl_slo_ms=args.itl_slo_ms)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0
