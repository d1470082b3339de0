"""Lesson "Too many requests": its controls (Params), the runs, and build(p) -> Readout.

One chat workload (lognormal prompts and answers) arrives as a Poisson stream at a share of the
deployment's capacity. The capacity is measured, not assumed: all requests queued at 0 s, the
steady rate at which a full engine finishes them (sim.overload.capacity_req_per_s, trimmed of
the fill and the drain). So that the run holds several full batches on any GPU, the number of
requests is WAVES times the most that run at once in a probe burst, and max_num_seqs is capped
at MAX_NUM_SEQS so that this stays a short run on large GPUs (vLLM's serve default is larger:
the Readout names it for the L4 and the H100, from sim.hardware.default_batch_limits). The runs
use vLLM's default async scheduling. The lesson opens on the L4, not the course's H100: there a
full engine drains prompts far below its peak prefill speed and fills its KV cache, the two
effects the sizing rule and the signals are about.
The sweep runs every load in LOADS four times: FCFS and SJF without a limit (no policy fixes
overload), and FCFS with vLLM's `max_num_queued_tokens` sized by the rule, TTFT target x the
rate the engine drains prompt tokens, and sized by the peak prefill speed instead (the wrong
throughput). Each run and sweep is cached, so moving the load slider only picks what is made.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lessons.kit import shared, sizing
from lessons.kit.anim import time_grid
from lessons.kit.controls import Steps, control
from lessons.kit.selection import scheduled
from lessons.kit.sizing import sized
from lessons.overload.readout import Gateway, Queue, Readout, Served, Signals
from sim.cost import Deployment
from sim.generators import WorkloadSpec
from sim.hardware import default_batch_limits
from sim.models import kv_pool
from sim.overload import (
    poisson_at,
    prefill_tokens_per_s,
    queued_tokens_limit,
    signals,
    sweep_row,
    waiting_peaks,
)
from sim.run import Run
from sim.timed import config_for, run_timed

PREFIX = "ovl"
# text.md sections filled with values of their own, not the Readout's (figures.py, predict.py)
OWN_VALUES = ("frame-", "predict-revealed")
LOADS = (50, 80, 100, 120, 150, 200)
TARGETS_S = (1, 2, 3, 5, 10)
HEALTHY_PCT = 80
LEVELS = ("busy_pct", "compute_pct", "kv_pct")  # the signals whose level the text quotes
PROMPT_MEDIAN, ANSWER_MEDIAN = 800, 120  # the chat requests' lognormal medians (tokens)
GATEWAY_PCT = 150  # the load at which the gateway's two designs are compared
SEED = 3
MAX_MODEL_LEN = 16_384
WAVES = 6
MIN_REQUESTS, MAX_REQUESTS = 300, 1_500
MAX_NUM_SEQS = 128  # a common production cap: every GPU's full batch fits in a short run
ASYNC_SCHEDULING = True  # vLLM's default in deployments
SERVE_DEFAULTS = ("L4", "H100-SXM")  # the GPUs whose `vllm serve` max_num_seqs the text names
FALLBACK_BLOCKS = 1_970  # the pool when the weights do not fit (an L4's, for Llama-3.1-8B)
BINS = 40  # time bins of the signals chart
QUEUE_POINTS = 60  # points (and frames) of the queue animation


@dataclass(frozen=True)
class Params(shared.Deployment):
    """Everything the lesson's controls set."""

    gpu: str = shared.gpu("L4")
    load_pct: int = control(
        150, Steps("Offered load (% of capacity)", key="load", options=LOADS, main=True)
    )
    ttft_target_s: int = control(
        3,
        Steps(
            "TTFT target (s)",
            key="target",
            options=TARGETS_S,
            main=True,
            help="Sizes max_num_queued_tokens and sets which requests count as goodput.",
        ),
    )


def recipe(n: int) -> WorkloadSpec:
    """The requests' recipe (its rate is set per load by sim.overload.poisson_at)."""
    return WorkloadSpec(
        "poisson",
        n,
        1.0,
        prompt=f"lognormal:{PROMPT_MEDIAN}:0.8",
        output=f"lognormal:{ANSWER_MEDIAN}:0.5",
        seed=SEED,
        prompt_max=MAX_MODEL_LEN - 1,
    )


def _dep(gpu: str, model: str, tp: int, dtype: str) -> tuple[Deployment, object]:
    """The deployment and vLLM's configuration for it (a fallback pool if the weights do not
    fit)."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    fits = kv_pool(gpu, model, tp=tp, dtype=dtype).fits
    config = config_for(
        dep,
        max_model_len=MAX_MODEL_LEN,
        max_num_seqs=MAX_NUM_SEQS,
        num_gpu_blocks=None if fits else FALLBACK_BLOCKS,
        async_scheduling=ASYNC_SCHEDULING,
    )
    return dep, config


@dataclass(frozen=True, eq=False)
class Probe:
    """What the lesson measures once per deployment."""

    requests: int
    full_batch: int
    capacity_req_per_s: float
    mean_prompt: float
    weights_fit: bool


@lru_cache(maxsize=16)
def probe(gpu: str, model: str, tp: int, dtype: str) -> Probe:
    """The run's size (WAVES full batches) and the capacity of those requests."""
    dep, config = _dep(gpu, model, tp, dtype)
    spec, full, capacity = sized(config, recipe, dep, waves=WAVES, lo=MIN_REQUESTS, hi=MAX_REQUESTS)
    mean_prompt = float(poisson_at(spec, 1.0).prompt_tokens.mean())
    fits = kv_pool(gpu, model, tp=tp, dtype=dtype).fits
    return Probe(spec.n, full, capacity, mean_prompt, fits)


@lru_cache(maxsize=64)
def run_at(
    gpu: str,
    model: str,
    tp: int,
    dtype: str,
    load: int,
    limit: int | None,
    policy: str,
    in_flight: int | None = None,
    timeout_s: float | None = None,
) -> Run:
    """The lesson's requests at `load` % of capacity, with max_num_queued_tokens = limit; the
    gateway's bound on requests in flight and its queue timeout, if given."""
    dep, config = _dep(gpu, model, tp, dtype)
    made = probe(gpu, model, tp, dtype)
    config = dataclasses.replace(
        config,
        policy=policy,
        max_num_queued_tokens=limit,
        max_num_queued_reqs=in_flight,
        gateway_timeout_s=timeout_s,
    )
    wl = poisson_at(recipe(made.requests), made.capacity_req_per_s * load / 100)
    return run_timed(config, wl, dep)


@lru_cache(maxsize=64)
def sweep(key: tuple, limit: int | None, target_ms: float, policy: str = "fcfs") -> dict:
    """Every load's row (sim.overload.sweep_row), as arrays over LOADS."""
    cap = probe(*key).capacity_req_per_s
    rows = [
        sweep_row(run_at(*key, load, limit, policy), cap * load / 100, ttft_slo_ms=target_ms)
        for load in LOADS
    ]
    return {name: np.array([row[name] for row in rows], dtype=float) for name in rows[0]}


@lru_cache(maxsize=64)
def signals_at(key: tuple, load: int) -> tuple[Signals, dict[str, float]]:
    """The signals of the FCFS run without a limit at `load`, and their medians over the bins
    in which a step ran (GPU busy, compute use, KV usage, in %, by LEVELS' names): the level
    the lines sit at, which a mean dragged down by the filling and the draining would not be."""
    dep, _ = _dep(*key)
    table = signals(run_at(*key, load, None, "fcfs"), dep, BINS)
    on = table["busy_pct"] > 0
    medians = {name: float(np.median(table[name][on])) for name in LEVELS}
    columns = ("time_s", "busy_pct", "compute_pct", "kv_pct", "waiting")
    return Signals(*(table[name].to_numpy() for name in columns)), medians


def _served(run: Run, target_ms: float) -> Served:
    """What a run turned away (refused or timed out), and how the requests it served fared."""
    row = sweep_row(run, 1.0, ttft_slo_ms=target_ms)
    away = np.count_nonzero(run.rejected) + (
        0 if run.timed_out is None else np.count_nonzero(run.timed_out)
    )
    return Served(
        away_pct=float(away / run.workload.num_requests * 100),
        p99_s=float(row["ttft_ms_p99"] / 1e3),
        goodput=float(row["goodput_req_per_s"]),
    )


@lru_cache(maxsize=32)
def gateway(key: tuple, target_ms: float, limit: int) -> Gateway:
    """Four ways of meeting GATEWAY_PCT % of capacity: no protection, vLLM's token limit, a
    gateway bound on requests in flight (429) and a gateway queue timeout (504). The bound is
    Little's law: a full batch running plus capacity x target waiting."""
    made = probe(*key)
    in_flight = int(made.full_batch + made.capacity_req_per_s * target_ms / 1e3)
    return Gateway(
        pct=GATEWAY_PCT,
        in_flight=in_flight,
        open=_served(run_at(*key, GATEWAY_PCT, None, "fcfs"), target_ms),
        vllm=_served(run_at(*key, GATEWAY_PCT, limit, "fcfs"), target_ms),
        bound=_served(run_at(*key, GATEWAY_PCT, None, "fcfs", in_flight), target_ms),
        timeout=_served(run_at(*key, GATEWAY_PCT, None, "fcfs", None, target_ms / 1e3), target_ms),
    )


def _queue(fcfs: Run, sjf: Run, limited: Run) -> Queue:
    end = max(float(r.step_start_s[-1] + r.step_ms[-1] / 1e3) for r in (fcfs, sjf, limited))
    grid = time_grid(end, QUEUE_POINTS, from_zero=True)
    arrived = np.searchsorted(np.sort(fcfs.arrival_s), grid, side="right")
    return Queue(
        grid, *(waiting_peaks(r, grid) for r in (fcfs, sjf, limited)), arrived=arrived.astype(int)
    )


def _serve_seqs(gpu: str) -> int:
    """`vllm serve`'s default max_num_seqs on one GPU (what MAX_NUM_SEQS replaces)."""
    return default_batch_limits(gpu, "server", max_model_len=MAX_MODEL_LEN)["max_num_seqs"]


def build(p: Params) -> Readout:
    """Every number and frame of the lesson for one setting."""
    key = (p.gpu, p.model, p.tp, p.dtype)
    dep, config = _dep(*key)
    made = probe(*key)
    target_ms = p.ttft_target_s * 1e3
    drain = made.capacity_req_per_s * made.mean_prompt
    peak = prefill_tokens_per_s(config, dep)
    limit = queued_tokens_limit(target_ms, drain)
    peak_limit = queued_tokens_limit(target_ms, peak)
    free, sjf = sweep(key, None, target_ms), sweep(key, None, target_ms, "sjf")
    bound, loose = sweep(key, limit, target_ms), sweep(key, peak_limit, target_ms)
    at = LOADS.index(p.load_pct)
    runs = (run_at(*key, p.load_pct, None, "fcfs"), run_at(*key, p.load_pct, None, "sjf"))
    sig, levels = signals_at(key, p.load_pct)
    _, healthy_levels = signals_at(key, HEALTHY_PCT)
    n = made.requests

    def sel(table: dict, name: str, scale: float = 1.0) -> float:
        return float(table[name][at] * scale)

    lim_p99, peak_p99 = sel(bound, "ttft_ms_p99", 1e-3), sel(loose, "ttft_ms_p99", 1e-3)
    twice = 2 * p.ttft_target_s  # "more than twice the target": the text's line
    lim_over, peak_over = bool(lim_p99 > twice), bool(peak_p99 > twice)
    gate = gateway(key, target_ms, limit)
    return Readout(
        **scheduled(p, config, made.weights_fit, dtype=p.dtype),
        serve_seqs_l4=_serve_seqs(SERVE_DEFAULTS[0]),
        serve_seqs_h100=_serve_seqs(SERVE_DEFAULTS[1]),
        requests=n,
        full_batch=made.full_batch,
        batches=n / made.full_batch,
        mean_prompt=int(round(made.mean_prompt)),
        prompt_median=PROMPT_MEDIAN,
        answer_median=ANSWER_MEDIAN,
        trim_pct=round(sizing.TRIM * 100),
        num_loads=len(LOADS),
        capacity_req_per_s=made.capacity_req_per_s,
        load_pct=p.load_pct,
        rate_per_s=made.capacity_req_per_s * p.load_pct / 100,
        overloaded=p.load_pct > 100,  # at 100% there is no surplus: the queue comes and goes
        ttft_target_s=float(p.ttft_target_s),
        loads=np.array(LOADS),
        ttft_p50_s=free["ttft_ms_p50"] / 1e3,
        ttft_p99_s=free["ttft_ms_p99"] / 1e3,
        queue_p99_s=free["queue_s_p99"],
        goodput=free["goodput_req_per_s"],
        peak_waiting=free["peak_waiting"].astype(int),
        lim_ttft_p99_s=bound["ttft_ms_p99"] / 1e3,
        lim_goodput=bound["goodput_req_per_s"],
        lim_refused_pct=bound["refused"] / n * 100,
        drain_tokens_per_s=drain,
        peak_tokens_per_s=peak,
        limit_tokens=limit,
        peak_limit_tokens=peak_limit,
        sjf_ttft_p50_s=sjf["ttft_ms_p50"] / 1e3,
        sjf_ttft_p99_s=sjf["ttft_ms_p99"] / 1e3,
        peak_ttft_p99_s=loose["ttft_ms_p99"] / 1e3,
        peak_goodput=loose["goodput_req_per_s"],
        healthy_ttft_p99_s=float(free["ttft_ms_p99"][: LOADS.index(HEALTHY_PCT) + 1].max() / 1e3),
        cap_ttft_p99_s=float(free["ttft_ms_p99"][LOADS.index(100)] / 1e3),
        top_ttft_p99_s=float(free["ttft_ms_p99"][-1] / 1e3),
        top_pct=LOADS[-1],
        sel_ttft_p50_s=sel(free, "ttft_ms_p50", 1e-3),
        sel_ttft_p99_s=sel(free, "ttft_ms_p99", 1e-3),
        sel_sjf_ttft_p50_s=sel(sjf, "ttft_ms_p50", 1e-3),
        sel_sjf_ttft_p99_s=sel(sjf, "ttft_ms_p99", 1e-3),
        sel_lim_ttft_p99_s=lim_p99,
        sel_peak_lim_ttft_p99_s=peak_p99,
        sel_refused_pct=sel(bound, "refused", 100 / n),
        sel_peak_refused_pct=sel(loose, "refused", 100 / n),
        sel_goodput=sel(free, "goodput_req_per_s"),
        sel_lim_goodput=sel(bound, "goodput_req_per_s"),
        sel_peak_waiting=int(sel(free, "peak_waiting")),
        sel_sjf_peak_waiting=int(sel(sjf, "peak_waiting")),
        sel_lim_peak_waiting=int(sel(bound, "peak_waiting")),
        limit_holds=bool(lim_p99 <= twice),
        limit_holds_above=bool(np.all(bound["ttft_ms_p99"][np.array(LOADS) > 100] / 1e3 <= twice)),
        limit_binds=bool(bound["refused"][at] > 0),
        limit_sheds=bool(bound["refused"][at] > 0 and p.load_pct >= 100),
        limit_trims=bool(bound["refused"][at] > 0 and p.load_pct < 100),
        limit_gains=bool(bound["goodput_req_per_s"][at] > free["goodput_req_per_s"][at]),
        peak_overshoots=peak_over,
        peak_target_times=peak_p99 / p.ttft_target_s,
        peak_alone_overshoots=peak_over and not lim_over,
        both_overshoot=lim_over and lim_p99 < peak_p99,
        neither_overshoots=not peak_over and not lim_over,
        sized_no_better=lim_over and lim_p99 >= peak_p99,
        healthy_pct=HEALTHY_PCT,
        **{f"sel_{name}": level for name, level in levels.items()},
        **{f"healthy_{name}": level for name, level in healthy_levels.items()},
        healthy_peak_waiting=int(free["peak_waiting"][LOADS.index(HEALTHY_PCT)]),
        queue=_queue(*runs, run_at(*key, p.load_pct, limit, "fcfs")),
        gateway=gate,
        gw_timeout_wins=gate.timeout.goodput
        >= max(gate.open.goodput, gate.vllm.goodput, gate.bound.goodput),
        signals=sig,
    )
