"""Lesson "Who goes first": its controls (Params), the workload, and build(p) -> Readout.

One workload, five policies. N_REQUESTS requests in two classes (interactive, priority 0, short;
batch, priority 1, long) and three tenants (A is the heavy one, with the learner's share of the
requests), each prompt opening with one of PREFIXES shared system prompts. They arrive as a
Poisson stream at the learner's load, a percentage of the capacity (sim.overload: the requests
per second the engine finishes under FCFS while work is queued, measured on the requests' burst
without its fill and drain; where a fast GPU runs them all at once, on a burst of the same recipe
holding CAPACITY_WAVES full batches). Each policy runs
the same requests on the cost model's clock with per-step detail and vLLM's default async
scheduling, so switching policy redraws from runs already made; the chosen one's waiting queue
is animated. Beside them, one more run of the same requests: FCFS with vLLM 0.34's cache-aware
admission (a window of CA_WINDOW waiting requests reordered by cached prompt tokens), compared on
what it buys (hit rate, TTFT) and what it costs (requests admitted before earlier arrivals).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lessons.kit import shared
from lessons.kit.anim import sample_steps
from lessons.kit.controls import Choice, Steps, Toggle, control
from lessons.kit.selection import scheduled
from lessons.kit.sizing import PROBE, TRIM
from lessons.kit.words import span
from lessons.policies.readout import Queue, Readout
from sim.cost import Deployment
from sim.generators import WorkloadSpec
from sim.groups import queue_time_s
from sim.metrics import request_metrics
from sim.models import kv_pool
from sim.overload import burst_run, capacity_of, full_batch, poisson_at
from sim.policy import TEACHING_POLICIES
from sim.run import Run
from sim.timed import config_for, run_timed

PREFIX = "pol"
# text.md sections filled with values of their own, not the Readout's (figures.py, predict.py)
OWN_VALUES = ("frame-", "predict-revealed")
POLICIES = ("fcfs", "priority", "sjf", "prefix-aware", "fair-share")
N_REQUESTS = 150
CAPACITY_WAVES = 4  # full batches in the capacity's burst (at least N_REQUESTS requests)
SEED = 7
ASYNC = True  # vLLM's default scheduler, as in the course's other lessons
MAX_MODEL_LEN = 16_384
PREFIX_TOKENS = 2_048  # each system prompt
PREFIXES = 12
TENANTS = 3
FALLBACK_BLOCKS = 1_970  # the pool when the weights do not fit (an L4's, for Llama-3.1-8B)
QUEUE_BUILDS = 10  # waiting requests at the peak for "the queue builds" to be said
QUEUE_SHOWN = 16  # requests drawn at the head of the waiting queue
QUEUE_FRAMES = 120
ALIKE = 0.1  # two medians this close (relative) are "about the same"
LOADS = (50, 70, 90, 100, 110, 120, 150, 200)
MIXES = (30, 50, 70, 80, 90)
HEAVY = (34, 50, 60, 70, 80)
CA_WINDOW = 16  # vLLM 0.34's cache_aware_admission_window for the extra run
CA_THRESHOLD = 0.5  # its cache_aware_admission_threshold (vLLM's default): KV usage to act from


def policy_name(key: str) -> str:
    """A policy as the lesson shows it (and a link carries it): sim's name in capitals."""
    return key.upper()


@dataclass(frozen=True)
class Params(shared.Deployment):
    """Everything the lesson's controls set."""

    gpu: str = shared.gpu("L4")
    policy: str = control(
        "priority",
        Choice(
            "Policy",
            options=POLICIES,
            format=policy_name,
            main=True,
            help="FCFS and PRIORITY are vLLM's; SJF, PREFIX-AWARE and FAIR-SHARE are teaching "
            "policies that vLLM does not have.",
        ),
    )
    load_pct: int = control(
        120,
        Steps("Offered load (% of capacity)", key="load", options=LOADS, main=True),
    )
    interactive_pct: int = control(
        70, Steps("Interactive share of requests (%)", key="mix", options=MIXES)
    )
    heavy_pct: int = control(
        60, Steps("Tenant A's share of requests (%)", key="heavy", options=HEAVY)
    )
    prefix_caching: bool = control(
        True, Toggle("Prefix caching", key="caching", help="vLLM's enable_prefix_caching")
    )


def recipe(interactive_pct: int) -> WorkloadSpec:
    """The requests' recipe (its rate is set per load by sim.overload.poisson_at)."""
    return WorkloadSpec(
        "poisson",
        N_REQUESTS,
        1.0,
        prompt="lognormal:500:0.6",
        output="lognormal:120:0.5",
        seed=SEED,
        interactive=interactive_pct / 100,
        batch_prompt="lognormal:2500:0.5",
        batch_output="lognormal:350:0.4",
        prefix_tokens=PREFIX_TOKENS,
        prefixes=PREFIXES,
        prompt_max=MAX_MODEL_LEN - 1,
    )


def tenants(heavy_pct: int) -> np.ndarray:
    """Tenant per request: 0 (A) with probability heavy_pct %, else 1 or 2 (B, C) evenly. The
    same draws for every share, so moving the slider moves requests between tenants only."""
    rng = np.random.default_rng(SEED + 1)
    u, other = rng.random(N_REQUESTS), rng.integers(1, TENANTS, N_REQUESTS)
    return np.where(u < heavy_pct / 100, 0, other).astype(np.int64)


@dataclass(frozen=True, eq=False)
class Runs:
    """The five policies' runs of one workload, and what it was run with."""

    runs: dict[str, Run]
    capacity_req_per_s: float
    rate_per_s: float
    weights_fit: bool
    capacity_running: int  # the most requests the capacity's burst ran at once
    cache_aware: Run  # FCFS with vLLM 0.34's cache-aware admission window, same requests


def _base(dep: Deployment, fits: bool, caching: bool):
    """The scheduler's configuration: vLLM's defaults for the GPU, async scheduling (vLLM's
    default), the lesson's max_model_len and the learner's prefix caching."""
    return config_for(
        dep,
        max_model_len=MAX_MODEL_LEN,
        enable_prefix_caching=caching,
        num_gpu_blocks=None if fits else FALLBACK_BLOCKS,
        async_scheduling=ASYNC,
    )


@lru_cache(maxsize=32)
def _capacity(
    gpu: str, model: str, tp: int, dtype: str, mix: int, caching: bool
) -> tuple[float, int]:
    """The capacity (sim.overload) of the lesson's requests under FCFS, the same for every load
    and tenant share, measured on their burst without its fill and drain. A fast GPU runs all
    N_REQUESTS at once, so their burst never keeps it busy: then the burst holds CAPACITY_WAVES
    full batches of the same recipe instead (lessons/kit/sizing). Also returns the most requests
    that burst ran at once: how full "capacity" is."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    fits = kv_pool(gpu, model, tp=tp, dtype=dtype).fits
    base = _base(dep, fits, caching)
    spec = recipe(mix)
    run = burst_run(base, poisson_at(spec, 1.0), dep)
    if np.max(run.num_running) == N_REQUESTS:  # all at once: nothing was ever queued
        full = full_batch(base, poisson_at(dataclasses.replace(spec, n=PROBE), 1.0), dep)
        n = max(N_REQUESTS, CAPACITY_WAVES * full)
        run = burst_run(base, poisson_at(dataclasses.replace(spec, n=n), 1.0), dep)
    return capacity_of(run, TRIM), int(np.max(run.num_running))


@lru_cache(maxsize=16)
def runs_for(
    gpu: str, model: str, tp: int, dtype: str, load: int, mix: int, heavy: int, caching: bool
) -> Runs:
    """Every policy's run for one setting (shared by every policy the learner picks)."""
    dep = Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype)
    fits = kv_pool(gpu, model, tp=tp, dtype=dtype).fits
    base = _base(dep, fits, caching)
    spec = recipe(mix)
    who = tenants(heavy)
    capacity, full = _capacity(gpu, model, tp, dtype, mix, caching)
    rate = capacity * load / 100
    wl = dataclasses.replace(poisson_at(spec, rate), tenant=who)
    runs = {
        key: run_timed(dataclasses.replace(base, policy=key), wl, dep, record_detail=True)
        for key in POLICIES
    }
    window = dataclasses.replace(
        base,
        policy="fcfs",
        cache_aware_admission_window=CA_WINDOW,
        cache_aware_admission_threshold=CA_THRESHOLD,
    )
    cache_aware = run_timed(window, wl, dep, record_detail=True)
    return Runs(runs, capacity, rate, fits, full, cache_aware)


def overtakes(run: Run) -> tuple[int, int]:
    """Fairness of a run's admission order, from first_scheduled_step: how many requests were
    scheduled in an earlier step than some request that arrived before them, and the most
    later arrivals any one request saw scheduled before it. Both 0 under strict FCFS."""
    order = np.argsort(np.asarray(run.arrival_s), kind="stable")
    step = np.asarray(run.first_scheduled_step)[order]
    passed = (step[None, :] < step[:, None]) & np.triu(np.ones((step.size,) * 2, bool), 1)
    jumped = passed.any(axis=0)  # request k went before some earlier arrival
    return int(jumped.sum()), int(passed.sum(axis=1).max(initial=0))


def _stats(run: Run) -> dict:
    """One policy's figures: TTFT by class and tenant, the longest wait, preemptions, hits."""
    wl = run.workload
    m = request_metrics(run)
    batch = wl.priority > wl.priority.min()
    ttft_s = m.ttft_ms / 1e3
    wait = queue_time_s(run)
    worst = int(np.nanargmax(wait))
    heavy = wl.tenant == 0
    return {
        "int_p99": float(np.percentile(ttft_s[~batch], 99)),
        "batch_p99": float(np.percentile(ttft_s[batch], 99)) if batch.any() else 0.0,
        "int_p50": float(np.percentile(ttft_s[~batch], 50)),
        "max_wait": float(wait[worst]),
        "max_wait_job": int(wl.prompt_tokens[worst] + wl.output_tokens[worst]),
        "max_wait_request": wl.request_ids[worst],
        "max_wait_batch": bool(batch[worst]),
        "int_pre": int(run.num_preemptions[~batch].sum()),
        "batch_pre": int(run.num_preemptions[batch].sum()),
        "hit": run.prefix_cache.hit_rate_pct,  # vLLM's counters (victims' hits kept apart)
        "heavy_p50": float(np.percentile(ttft_s[heavy], 50)) if heavy.any() else 0.0,
        "light_p50": float(np.percentile(ttft_s[~heavy], 50)) if (~heavy).any() else 0.0,
        "peak_waiting": int(np.max(run.num_waiting)),
        "drain": float(np.nanmax(run.finish_s) - np.nanmax(run.arrival_s)),
    }


def _queue(run: Run) -> Queue:
    """The waiting queue's head at up to QUEUE_FRAMES steps spread over the run."""
    wl = run.workload
    picks = sample_steps(run.num_steps, QUEUE_FRAMES)
    detail = run.detail
    return Queue(
        steps=picks + 1,
        time_s=np.asarray(run.step_start_s)[picks],
        running=np.array([detail[k].running.shape[0] for k in picks]),
        waiting=np.array([detail[k].waiting.shape[0] for k in picks]),
        heads=tuple(detail[k].waiting[:QUEUE_SHOWN] for k in picks),
        names=wl.request_ids,
        batch=wl.priority > wl.priority.min(),
        tenant=wl.tenant,
        job_tokens=wl.prompt_tokens + wl.output_tokens,
        arrival_s=np.asarray(run.arrival_s),
    )


def build(p: Params) -> Readout:
    """Every number and frame of the lesson for one setting."""
    made = runs_for(
        p.gpu,
        p.model,
        p.tp,
        p.dtype,
        p.load_pct,
        p.interactive_pct,
        p.heavy_pct,
        p.prefix_caching,
    )
    stats = {key: _stats(run) for key, run in made.runs.items()}

    def each(name: str) -> np.ndarray:
        return np.array([stats[key][name] for key in POLICIES])

    fcfs, prio, sjf = stats["fcfs"], stats["priority"], stats["sjf"]
    pre, fair, sel = stats["prefix-aware"], stats["fair-share"], stats[p.policy]
    run = made.runs[p.policy]
    wl = run.workload
    job = wl.prompt_tokens + wl.output_tokens
    batch = int((wl.priority > wl.priority.min()).sum())
    cfg = run.config
    never_queues = bool(each("peak_waiting").max() == 0)
    no_choice = bool(each("peak_waiting").max() <= 1)  # never two waiting to put in order
    prefix_gain = bool(pre["hit"] > fcfs["hit"] + 1 and pre["hit"] >= each("hit").max())
    same = bool(np.ptp(each("hit")) < 0.5)  # every policy finds the same share in the cache
    builds = bool(each("peak_waiting").max() >= QUEUE_BUILDS)  # a queue worth the name
    a_heaviest = bool(np.bincount(wl.tenant, minlength=TENANTS).argmax() == 0)
    peak_running = int(np.max(made.runs[POLICIES[0]].num_running))  # the first policy's run
    ca = _stats(made.cache_aware)
    ca_jumped, ca_passed_max = overtakes(made.cache_aware)
    ca_reorders = not np.array_equal(
        made.cache_aware.first_scheduled_step, made.runs["fcfs"].first_scheduled_step
    )
    return Readout(
        **scheduled(p, cfg, made.weights_fit, dtype=p.dtype),
        prefix_caching=p.prefix_caching,
        async_scheduling=cfg.async_scheduling,
        requests=wl.num_requests,
        interactive=wl.num_requests - batch,
        batch=batch,
        tenants=TENANTS,
        heavy=int((wl.tenant == 0).sum()),
        heavy_share_pct=round(int((wl.tenant == 0).sum()) / wl.num_requests * 100),
        prefixes=PREFIXES,
        prefix_tokens=PREFIX_TOKENS,
        load_pct=p.load_pct,
        overloaded=p.load_pct > 100 and builds,
        overload_short=p.load_pct > 100 and not no_choice and not builds,
        below_capacity=p.load_pct <= 100 and not no_choice,
        never_queues=never_queues,
        one_waits=no_choice and not never_queues,
        short_of_full=p.load_pct > 100 and no_choice and peak_running < made.capacity_running,
        capacity_running=made.capacity_running,
        arrival_span_s=float(np.ptp(run.arrival_s)),
        peak_running=peak_running,
        capacity_req_per_s=made.capacity_req_per_s,
        rate_per_s=made.rate_per_s,
        policy=policy_name(p.policy),
        policy_key=p.policy,
        teaching=p.policy in TEACHING_POLICIES,
        names=tuple(policy_name(k) for k in POLICIES),
        int_ttft_p99_s=each("int_p99"),
        batch_ttft_p99_s=each("batch_p99"),
        int_ttft_p50_s=each("int_p50"),
        max_wait_s=each("max_wait"),
        max_wait_job=each("max_wait_job"),
        max_wait_request=tuple(stats[k]["max_wait_request"] for k in POLICIES),
        max_wait_batch=each("max_wait_batch"),
        int_preempted=each("int_pre"),
        batch_preempted=each("batch_pre"),
        hit_pct=each("hit"),
        heavy_ttft_p50_s=each("heavy_p50"),
        light_ttft_p50_s=each("light_p50"),
        peak_waiting=each("peak_waiting"),
        drain_s=each("drain"),
        peak_lo=int(each("peak_waiting").min()),
        peak_hi=int(each("peak_waiting").max()),
        drain_lo=float(each("drain").min()),
        drain_hi=float(each("drain").max()),
        peak_span=span(each("peak_waiting").min(), each("peak_waiting").max()),
        drain_span=span(each("drain").min(), each("drain").max()),
        fcfs_int_p99_s=fcfs["int_p99"],
        prio_int_p99_s=prio["int_p99"],
        prio_batch_p99_s=prio["batch_p99"],
        prio_helps=bool(prio["int_p99"] < 0.95 * fcfs["int_p99"]),  # a drop the text can show
        prio_int_preempted=prio["int_pre"],
        prio_batch_preempted=prio["batch_pre"],
        fcfs_int_preempted=fcfs["int_pre"],
        fcfs_batch_preempted=fcfs["batch_pre"],
        any_preempted=prio["int_pre"] + prio["batch_pre"] + fcfs["int_pre"] + fcfs["batch_pre"] > 0,
        sjf_max_wait_s=sjf["max_wait"],
        fcfs_max_wait_s=fcfs["max_wait"],
        sjf_max_wait_job=sjf["max_wait_job"],
        sjf_max_wait_request=sjf["max_wait_request"],
        median_job=int(np.median(job)),
        sjf_starves=sjf["max_wait"] > 1.5 * fcfs["max_wait"],
        sjf_int_p99_s=sjf["int_p99"],
        sjf_batch_p99_s=sjf["batch_p99"],
        sjf_best_int=bool(  # the section also says what the batch class pays for it
            not no_choice
            and sjf["int_p99"] < 0.9 * np.delete(each("int_p99"), POLICIES.index("sjf")).min()
            and sjf["batch_p99"] > prio["batch_p99"]
            and sjf["max_wait_batch"]
        ),
        fair_heavy_p50_s=fair["heavy_p50"],
        fair_light_p50_s=fair["light_p50"],
        fcfs_heavy_p50_s=fcfs["heavy_p50"],
        fcfs_light_p50_s=fcfs["light_p50"],
        fcfs_tenants_alike=bool(
            abs(fcfs["heavy_p50"] - fcfs["light_p50"])
            <= max(0.05, ALIKE * min(fcfs["heavy_p50"], fcfs["light_p50"]))
        ),
        fair_holds=bool(  # "tenant A sends more than its share": it is the heaviest tenant
            fair["heavy_p50"] > 1.5 * fair["light_p50"] and a_heaviest
        ),
        fair_little=bool(a_heaviest and fair["heavy_p50"] <= 1.5 * fair["light_p50"]),
        fair_not_heaviest=not a_heaviest,
        prefix_hit_pct=pre["hit"],
        fcfs_hit_pct=fcfs["hit"],
        prefix_gain=prefix_gain,
        prefix_off=not p.prefix_caching,
        prefix_little=bool(p.prefix_caching and not prefix_gain and not no_choice and not same),
        prefix_same=bool(p.prefix_caching and not prefix_gain and not no_choice and same),
        prefix_no_choice=bool(p.prefix_caching and not prefix_gain and no_choice),
        best_hit_pct=float(each("hit").max()),
        best_hit_policy=policy_name(POLICIES[int(np.argmax(each("hit")))]),
        prefix_peak_waiting=pre["peak_waiting"],
        prefix_int_p50_s=pre["int_p50"],
        ca_window=CA_WINDOW,
        ca_threshold_pct=round(CA_THRESHOLD * 100),
        ca_hit_pct=ca["hit"],
        ca_int_p50_s=ca["int_p50"],
        ca_int_p99_s=ca["int_p99"],
        ca_jumped=ca_jumped,
        ca_passed_max=ca_passed_max,
        ca_acts=bool(p.prefix_caching and ca_reorders),
        ca_idle=bool(p.prefix_caching and not ca_reorders),
        fcfs_int_p50_s=fcfs["int_p50"],
        sel_int_p99_s=sel["int_p99"],
        queue_empty=sel["peak_waiting"] == 0,
        sel_batch_p99_s=sel["batch_p99"],
        sel_max_wait_s=sel["max_wait"],
        sel_max_wait_request=sel["max_wait_request"],
        sel_hit_pct=sel["hit"],
        queue=_queue(run),
    )
