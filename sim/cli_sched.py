"""`python -m sim replay`, `simulate` and `serve-args`: the scheduler's command line.

replay SCENARIO.json [--summary]: a reference scenario through the step-exact scheduler; prints
{"steps", "per_request"} in the recordings' schema, or with --summary only
{"num_steps", "total_preemptions", "scheduler_seconds"}.
simulate --gpu G --model M --workload TRACE.csv|SPEC [...]: a timed run priced by the cost model,
printing sim.metrics.summarize's JSON. Its scheduler and cache flags are generated from
sim/flags.py (vllm serve's names and defaults); a vLLM flag it does not model is refused.
serve-args 'vllm serve MODEL ...' --gpu G: the configuration a pasted command gives (JSON).
Bad input raises SimInputError (one line, exit code 2).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from sim import flags
from sim.errors import SimInputError
from sim.flags import human_readable_int

__all__ = ["human_readable_int", "register", "simulate_config"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `replay`, `simulate` and `serve-args` sub-commands."""
    p = subparsers.add_parser("replay", help="replay a reference scenario step by step")
    p.add_argument("scenario", help="scenario JSON file (../oracle/README.md schema)")
    p.add_argument(
        "--summary",
        action="store_true",
        help='print only {"num_steps", "total_preemptions", "scheduler_seconds"}',
    )
    p.set_defaults(func=_replay)

    s = subparsers.add_parser(
        "simulate",
        help="a timed run of a workload on a GPU and model",
        description="A timed run: vLLM's scheduler decides every step, the cost model prices "
        "it. The scheduler and cache flags are vllm serve's, with its defaults for the GPU "
        "(prefix caching and async scheduling on); a vLLM flag not modelled is refused.",
        allow_abbrev=False,
    )
    s.refuses_vllm_flags = True  # type: ignore[attr-defined]  (read by sim/__main__.py)
    s.add_argument("--gpu", required=True, help="GPU key (sim/data/gpus.csv)")
    s.add_argument(
        "--model",
        required=True,
        help="model key (sim/data/models.csv) or a Hugging Face name such as "
        "meta-llama/Llama-3.1-8B-Instruct",
    )
    s.add_argument(
        "--tensor-parallel-size",
        "-tp",
        dest="tp",
        type=int,
        default=None,
        metavar="N",
        help="GPUs the model is split over: 1, 2, 4 or 8 (default: 1)",
    )
    s.add_argument("--tp", dest="tp", type=int, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    s.add_argument(
        "--dtype",
        default=None,
        help="the weights' type: auto, bfloat16, float16 or half, all 16-bit (this command "
        "line's older bf16 and fp8 also work) (default: auto; FP8 when the model's name says so)",
    )
    s.add_argument(
        "--quantization",
        "-q",
        default=None,
        help="fp8: FP8 weights and GEMMs; other methods are not modelled (default: none)",
    )
    s.add_argument("--workload", required=True, help="a trace .csv file or a workload spec")
    flags.add_arguments(s)
    s.add_argument("--ttft-slo-ms", type=float, default=None)
    s.add_argument("--itl-slo-ms", type=float, default=None)
    s.set_defaults(func=_simulate)

    a = subparsers.add_parser(
        "serve-args",
        help="read a pasted `vllm serve` command into the simulator's configuration",
        description="Reads `vllm serve MODEL --flag value ...` (quoted as one argument) and "
        "prints the configuration the simulator runs on the GPU: the catalog model, tp, "
        "weights, KV cache dtype, every SchedulerConfig field and one line per flag read.",
    )
    a.add_argument("command", help="the vllm serve command, in quotes")
    a.add_argument("--gpu", required=True, help="GPU key (sim/data/gpus.csv)")
    a.set_defaults(func=_serve_args)


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


def simulate_config(args: argparse.Namespace) -> tuple:
    """(Deployment, SchedulerConfig) that `simulate` runs for its parsed arguments: every flag
    not given takes vllm serve's default for the GPU (sim/flags.py)."""
    from sim.serve_args import resolve_model
    from sim.timed import config_for, deployment

    model = resolve_model(args.model)
    dtype = flags.weights_dtype(args.dtype, args.quantization, args.model)
    sched, pool, dep_kwargs = flags.split(flags.settings(args))
    tp = 1 if args.tp is None else args.tp
    dep = deployment(args.gpu, model, tp=tp, dtype=dtype, **dep_kwargs)
    return dep, config_for(dep, **pool, **sched)


def _simulate(args: argparse.Namespace) -> int:
    from sim.load import load_workload
    from sim.metrics import summarize
    from sim.timed import run_timed

    dep, config = simulate_config(args)
    workload = load_workload(args.workload, max_model_len=config.max_model_len)
    run = run_timed(config, workload, dep)
    out = summarize(run, ttft_slo_ms=args.ttft_slo_ms, itl_slo_ms=args.itl_slo_ms)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


def _serve_args(args: argparse.Namespace) -> int:
    from sim.serve_args import config_from_serve, parse_serve_command

    serve = parse_serve_command(args.command)
    dep, config = config_from_serve(serve, args.gpu)
    out = {
        "model": serve.model,
        "gpu": dep.gpu,
        "tp": serve.tp,
        "dtype": serve.dtype,
        "kv_cache_dtype": serve.kv_cache_dtype,
        "gpu_memory_utilization": serve.gpu_memory_utilization,
        "scheduler_config": dataclasses.asdict(config),
        "mapped": list(serve.mapped),
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0
