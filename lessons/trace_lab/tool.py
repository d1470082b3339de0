"""Your own trace (Playground): a trace in the command line's CSV format or a published one
(Azure, BurstGPT, Mooncake), run under two configurations of the same deployment, compared.
Params, loading and build(p, trace) -> Readout.

A trace is the file `python -m sim simulate --workload FILE` reads (sim.trace_formats: the
format told by its first line, one plain line saying what was mapped, one message naming the
bad rows for anything it refuses); the page also refuses a file over MAX_UPLOAD_MB
and one of more than MAX_REQUESTS requests. Two sample traces ship with the app (samples/,
written by scripts/make_sample_traces.py), so the page works without an upload. Each side is a
timed run (sim.timed.run_timed, the synchronous scheduler) kept in a small cache keyed by the
file's digest and the side's settings, so moving a control of one side reruns that side only.

A pasted `vllm serve MODEL --flag ...` command (`a_serve`, read by sim.serve_args) makes the
deployment (model, TP, weights, KV cache dtype, pool) of both sides and all of side A, with
`vllm serve`'s defaults for the GPU wherever the command is silent; side B is the same command
with B's five controls applied on top, so the table compares the learner's deployment with one
change. An empty box is the page as it was: the deployment controls, and A's own controls; so
is a command that cannot run, under one plain line saying why (as a bad link value is).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from lessons.kit import shared, story
from lessons.kit.controls import Choice, Integer, Steps, Text, Toggle, control, shown
from lessons.kit.limits import BUDGETS, effective
from lessons.kit.tables import safe_cell
from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.metrics import measure, request_table, summarize
from sim.policy import TEACHING_POLICIES
from sim.serve_args import ServeArgs, config_from_serve, parse_serve_command
from sim.timed import config_for, deployment, run_timed
from sim.trace_formats import read_trace
from sim.workload import Workload

PREFIX = "trc"
HERE = Path(__file__).resolve().parent
TEXT = HERE / "text.md"
SAMPLES = {"chat": HERE / "samples" / "chat.csv", "documents": HERE / "samples" / "documents.csv"}
TRACES = (*SAMPLES, "upload")
TRACE_NAMES = {
    "chat": "Sample: chat (240 requests)",
    "documents": "Sample: chat and long documents (240 requests)",
    "upload": "Your file",
}


def trace_name(key: str) -> str:
    """How a trace choice reads (a name given already stays as it is)."""
    return TRACE_NAMES.get(key, key)


MAX_UPLOAD_MB = 20
UPLOAD_TYPES = ("csv", "jsonl")  # our CSV, Azure's and BurstGPT's; Mooncake's JSONL
MAPPED_CHARS = 1000  # the most of the "what was mapped" line the page shows
MAX_REQUESTS = 200_000
NAME_CHARS = 80  # the most of a file name the summary shows
POLICIES = ("fcfs", "priority", *TEACHING_POLICIES)
SERVE_CHARS = 2000  # the most of a pasted command the box (and a link) takes
SERVE_ROWS = ("model", "dtype", "tp")  # deployment controls a pasted command replaces
_CACHE: OrderedDict[tuple, Side] = OrderedDict()
_CACHE_SIZE = 8


def _side(name: str, defaults: bool, budget: int, seqs: int) -> tuple:
    """The five controls of one configuration (A or B), declared once for both."""
    key = name.lower()
    return (
        control(defaults, Toggle(f"{name}: vLLM's defaults for this GPU", key=f"{key}-defaults")),
        control(
            budget,
            Steps(
                f"{name}: token budget (max_num_batched_tokens)",
                key=f"{key}-budget",
                options=BUDGETS,
            ),
        ),  # fmt: skip
        control(
            seqs,
            Integer(f"{name}: sequence budget (max_num_seqs)", key=f"{key}-seqs", lo=1, hi=1024),
        ),
        control(
            "fcfs",
            Choice(f"{name}: policy", key=f"{key}-policy", options=POLICIES, format=str.upper),
        ),  # fmt: skip
        control(
            False,
            Toggle(
                f"{name}: prefix caching",
                key=f"{key}-caching",
                help="vLLM turns it on by default. Off here by default: with it on the "
                "simulator steps through its block pool, which is slower on large traces.",
            ),
        ),
    )


_A = _side("A", True, 8192, 256)
_B = _side("B", False, 2048, 128)


@dataclass(frozen=True)
class Params(shared.Deployment):
    """The trace and the two configurations compared."""

    trace: str = control(
        "chat", Choice("Trace", key="trace", options=TRACES, format=trace_name, main=True)
    )
    a_defaults: bool = _A[0]
    a_budget: int = _A[1]
    a_seqs: int = _A[2]
    a_policy: str = _A[3]
    a_caching: bool = _A[4]
    b_defaults: bool = _B[0]
    b_budget: int = _B[1]
    b_seqs: int = _B[2]
    b_policy: str = _B[3]
    b_caching: bool = _B[4]
    a_serve: str = control(
        "",
        Text(
            story.text(TEXT, "serve-label"),
            key="a-serve",
            max_chars=SERVE_CHARS,
            expects="a vllm serve command",
        ),
    )


SHOW_IF = {
    f"{s}_{k}": (lambda chosen, s=s: not chosen.get(f"{s}_defaults", False))
    for s in "ab"
    for k in ("budget", "seqs")
}


def show_if(command: str, gpu: str) -> dict:
    """SHOW_IF, and with a command in the box that runs on `gpu`: A's controls and the
    deployment's hidden (the command sets them). A command that cannot run hides nothing."""
    try:
        if _checked(command, gpu) is None:
            return SHOW_IF
    except SimInputError:
        return SHOW_IF
    hidden = [f"a_{k}" for k in ("defaults", "budget", "seqs", "policy", "caching")]
    return SHOW_IF | {name: (lambda chosen: False) for name in (*hidden, *SERVE_ROWS)}


def serve_args(command: str) -> ServeArgs | None:
    """The box's command read (None: an empty box); SimInputError, one line, if it cannot be."""
    if not command.strip():
        return None
    if len(command) > SERVE_CHARS:
        raise SimInputError(f"the command is longer than {SERVE_CHARS:,} characters")
    return parse_serve_command(command)


def serving(p: Params) -> ServeArgs | None:
    """The pasted command of `p`, read and checked on its GPU (SimInputError if it cannot run
    there: FP8 weights on a GPU without FP8, a model too big for its GPUs...)."""
    return _checked(p.a_serve, p.gpu)


def _checked(command: str, gpu: str) -> ServeArgs | None:
    args = serve_args(command)
    if args is not None:
        config_from_serve(args, gpu)
    return args


@dataclass(frozen=True)
class Trace:
    """A loaded trace: its requests, its name (as given: data, shown as plain text), a digest,
    its format (sim.trace_formats.FORMATS) and the plain line saying what was mapped."""

    workload: Workload
    name: str
    digest: str
    format: str = "stepwise"
    mapped: str = ""


def load(data: bytes, name: str, max_model_len: int) -> Trace:
    """Read a trace from bytes; SimInputError with one line saying what is wrong."""
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise SimInputError(f"{name} is over {MAX_UPLOAD_MB} MB, the limit for an upload")
    buffer = io.BytesIO(data)
    buffer.name = name
    workload, fmt, mapped = read_trace(buffer, max_model_len=max_model_len)
    if workload.num_requests > MAX_REQUESTS:
        raise SimInputError(
            f"{name} has {workload.num_requests:,} requests; the app runs up to {MAX_REQUESTS:,} "
            "(the command line takes up to 1,000,000)"
        )
    return Trace(workload, name, hashlib.sha256(data).hexdigest(), fmt, mapped)


def sample(key: str, max_model_len: int) -> Trace:
    path = SAMPLES[key]
    return load(path.read_bytes(), path.name, max_model_len)


def max_model_len(p: Params) -> int:
    """The longest prompt the deployment takes (the catalog's context length, or the pasted
    command's --max-model-len)."""
    if serving(p) is not None:
        return _config(p, "a").max_model_len
    return config_for(deployment(p.gpu, p.model, tp=p.tp, dtype=p.dtype)).max_model_len


def deployment_of(p: Params):
    """The deployment both sides run (sim.cost.Deployment): the pasted command's, else the
    page's GPU, model, TP and weights."""
    args = serve_args(p.a_serve)
    if args is not None:
        return config_from_serve(args, p.gpu)[0]
    return deployment(p.gpu, p.model, tp=p.tp, dtype=p.dtype)


@dataclass(frozen=True, eq=False)
class Side:
    """One configuration's run: its settings, what `simulate` prints, one row per request."""

    name: str
    max_num_batched_tokens: int
    max_num_seqs: int
    policy: str
    prefix_caching: bool
    num_gpu_blocks: int
    async_scheduling: bool
    summary: dict
    requests: pd.DataFrame
    ttft_p99_ms: float
    tpot_p50_ms: float
    e2e_p99_s: float
    output_tokens_per_s: float
    preemptions: int
    rejected: int


def _config(p: Params, side: str) -> SchedulerConfig:
    get = lambda k: getattr(p, f"{side}_{k}")  # noqa: E731
    args = serve_args(p.a_serve)
    if args is not None:
        return _served(p, args, side)
    dep = deployment(p.gpu, p.model, tp=p.tp, dtype=p.dtype)
    budget, seqs = effective(p.gpu, get("defaults"), get("budget"), get("seqs"))
    return config_for(
        dep,
        max_num_batched_tokens=budget,
        max_num_seqs=seqs,
        policy=get("policy"),
        enable_prefix_caching=get("caching"),
    )


def _served(p: Params, args: ServeArgs, side: str) -> SchedulerConfig:
    """Side A: the command as pasted. Side B: the command with B's controls applied (B's
    "defaults" leaves the two limits to `vllm serve`'s defaults for the GPU)."""
    if side == "b":
        kwargs = dict(args.scheduler_kwargs)
        kwargs.pop("max_num_batched_tokens", None)
        kwargs.pop("max_num_seqs", None)
        if not p.b_defaults:
            kwargs |= {"max_num_batched_tokens": p.b_budget, "max_num_seqs": p.b_seqs}
        kwargs |= {"policy": p.b_policy, "enable_prefix_caching": p.b_caching}
        args = dataclasses.replace(args, scheduler_kwargs=kwargs)
    return config_from_serve(args, p.gpu)[1]


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def run_side(
    p: Params, side: str, trace: Trace, progress: Callable[[int, int], None] | None = None
) -> Side:
    """One configuration's run of the trace (cached by the trace's digest and the settings)."""
    config = _config(p, side)
    key = _key(p, side, trace)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    dep = deployment_of(p)
    run = run_timed(config, trace.workload, dep, progress=progress)
    measured = measure(run)
    s = summarize(run, measured=measured)
    out = Side(
        name=side.upper(),
        max_num_batched_tokens=config.max_num_batched_tokens,
        max_num_seqs=config.max_num_seqs,
        policy=config.policy.upper(),
        prefix_caching=config.enable_prefix_caching,
        num_gpu_blocks=config.num_gpu_blocks,
        async_scheduling=config.async_scheduling,
        summary=s,
        requests=request_table(run, measured=measured),
        ttft_p99_ms=_number(s["ttft_ms"]["p99"]),
        tpot_p50_ms=_number(s["tpot_ms"]["p50"]),
        e2e_p99_s=_number(s["e2e_s"]["p99"]),
        output_tokens_per_s=float(s["output_tokens_per_s"]),
        preemptions=int(s["total_preemptions"]),
        rejected=int(s["rejected_requests"]["total"]),
    )
    _CACHE[key] = out
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out


def _key(p: Params, side: str, trace: Trace) -> tuple:
    return (trace.digest, deployment_of(p), _config(p, side))


def is_cached(p: Params, side: str, trace: Trace) -> bool:
    return _key(p, side, trace) in _CACHE


@dataclass(frozen=True, eq=False)
class Readout:
    """What the page quotes: the trace and both sides."""

    trace_name: str  # the file's name as plain text (controls.shown): an upload names it
    requests: int
    span_s: float
    mean_prompt: float
    mean_output: float
    gpu: str
    model: str
    a: Side
    b: Side
    ttft_ratio: float  # B's TTFT p99 over A's
    b_better_ttft: bool
    b_more_throughput: bool
    any_preempted: bool
    any_rejected: bool
    serving: bool = False  # side A is a pasted `vllm serve` command


def build(trace: Trace, p: Params, a: Side, b: Side) -> Readout:
    wl = trace.workload
    arrivals = np.asarray(wl.arrival_s, dtype=np.float64)
    ratio = b.ttft_p99_ms / a.ttft_p99_ms if a.ttft_p99_ms > 0 else float("nan")
    return Readout(
        trace_name=shown(trace.name, limit=NAME_CHARS),
        requests=wl.num_requests,
        span_s=float(arrivals.max() - arrivals.min()) if wl.num_requests else 0.0,
        mean_prompt=float(np.mean(wl.prompt_tokens)),
        mean_output=float(np.mean(wl.output_tokens)),
        gpu=p.gpu,
        model=deployment_of(p).model,
        a=a,
        b=b,
        ttft_ratio=float(ratio),
        b_better_ttft=bool(b.ttft_p99_ms < a.ttft_p99_ms),
        b_more_throughput=bool(b.output_tokens_per_s > a.output_tokens_per_s),
        any_preempted=bool(a.preemptions or b.preemptions),
        any_rejected=bool(a.rejected or b.rejected),
        serving=bool(p.a_serve.strip()),
    )


ROWS = (
    ("TTFT p50 (ms)", "ttft_ms", "p50"),
    ("TTFT p90 (ms)", "ttft_ms", "p90"),
    ("TTFT p99 (ms)", "ttft_ms", "p99"),
    ("ITL p50 (ms)", "itl_ms", "p50"),
    ("ITL p99 (ms)", "itl_ms", "p99"),
    ("ITL mean (ms)", "itl_ms", "mean"),
    ("E2E p50 (s)", "e2e_s", "p50"),
    ("E2E p99 (s)", "e2e_s", "p99"),
)


def comparison(r: Readout) -> pd.DataFrame:
    """The side-by-side table: settings, then latency percentiles and totals, A against B."""
    rows: dict[str, list] = {"": [], "A": [], "B": []}

    def add(label: str, a: object, b: object) -> None:
        rows[""].append(label)
        rows["A"].append(a)
        rows["B"].append(b)

    add("max_num_batched_tokens", r.a.max_num_batched_tokens, r.b.max_num_batched_tokens)
    add("max_num_seqs", r.a.max_num_seqs, r.b.max_num_seqs)
    add("policy", r.a.policy, r.b.policy)
    add("prefix caching", "on" if r.a.prefix_caching else "off",
        "on" if r.b.prefix_caching else "off")  # fmt: skip
    if r.serving:  # what a command sets that the controls do not show
        add("KV cache blocks", r.a.num_gpu_blocks, r.b.num_gpu_blocks)
        add("async scheduling", "on" if r.a.async_scheduling else "off",
            "on" if r.b.async_scheduling else "off")  # fmt: skip
    for label, dist, q in ROWS:
        add(label, _fmt(r.a.summary[dist][q]), _fmt(r.b.summary[dist][q]))
    add("output tokens/s", _fmt(r.a.output_tokens_per_s), _fmt(r.b.output_tokens_per_s))
    add("requests finished", r.a.summary["num_finished"], r.b.summary["num_finished"])
    add("preemptions", r.a.preemptions, r.b.preemptions)
    add("refused", r.a.rejected, r.b.rejected)
    add("steps", r.a.summary["num_steps"], r.b.summary["num_steps"])
    return pd.DataFrame(rows).astype({"A": str, "B": str})


def _fmt(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.3g}"


def per_request_csv(r: Readout) -> bytes:
    """Both sides' per-request results, one row per request and configuration, as CSV."""
    frames = [side.requests.assign(configuration=side.name) for side in (r.a, r.b)]
    table = pd.concat(frames, ignore_index=True)
    cols = ["configuration", *[c for c in table.columns if c != "configuration"]]
    table = table[cols]
    text = table.select_dtypes(exclude="number").columns  # request ids come from the upload
    table = table.assign(**{c: table[c].map(lambda v: safe_cell(v, numbers=False)) for c in text})
    return table.to_csv(index=False).encode("utf-8")
