"""Lesson "The step loop": its controls (Params), build(p) -> Readout and at_step(r, step).

Five requests arrive over the first steps (one of them a long prompt), on a deliberately small
KV pool. `timed_replay` runs them through sim's scheduler (vLLM's rules) on the clock of
`sim.timed`, every step priced by the cost model; `replay.py` turns the run's detail into what
each frame draws, and `at_step` tells one step in the order of the loop. The replay runs with
prefix caching off; `with_caching` replays it with caching on (vLLM's default) to count what a
preempted request finds in the cache when it comes back.

The lesson opens on the course's deployment (H100-SXM, Llama-3.1-8B) with two settings of its
own, each said on the page with its reason: a token budget of 2,048 (vLLM's default on smaller
GPUs; the H100's is 8,192), so the long document is read over two steps, and vLLM's synchronous
scheduler, so each turn runs in the loop's plain order. Async scheduling (SCHEDULER.md g) is a
switch; either way `compare_modes` runs the other mode too, so the text can say where the two
part (a finished request frees its blocks and its seat one step later under async).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lessons.kit import limits, shared
from lessons.kit.anim import sample_steps
from lessons.kit.controls import Integer, Toggle, control
from lessons.kit.selection import selection, used_limits
from lessons.kit.timeline import DECODE, PROMPT, RECOMPUTE
from lessons.kit.words import join
from lessons.step_loop.readout import Readout, Replay, StepReadout
from lessons.step_loop.replay import replay_of
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment
from sim.hardware import get_gpu
from sim.kv import cdiv, refuses_to_start, request_blocks
from sim.metrics import summarize
from sim.models import GIB, kv_pool
from sim.run import Run
from sim.scheduler import run_steps
from sim.timed import run_timed
from sim.workload import Workload

PREFIX = "sl"
STEP_KEY = f"{PREFIX}-step"  # the stepper's URL key (the page keeps the step in the link)
STEP_TEXT = Path(__file__).with_name("step.md")  # the story of one step (StepReadout)
# The scenario: (prompt tokens, output tokens, arrival step) of each request.
REQUESTS = ((600, 48, 1), (300, 56, 1), (2500, 16, 3), (400, 40, 5), (200, 32, 8))
NAMES = tuple(f"R{i + 1}" for i in range(len(REQUESTS)))
BLOCK_SIZE: int = next(
    f.default for f in dataclasses.fields(SchedulerConfig) if f.name == "block_size"
)
MAX_MODEL_LEN = 8192
HELD_STEPS = 5  # the long document waits more than this many steps for blocks: "held back"
POOL_MIN = cdiv(max(p + o for p, o, _ in REQUESTS), BLOCK_SIZE) + 2
POOL_MAX = 1000
POOL_STEP = 10
FAR_S = 1e9  # an arrival not placed yet (see timed_replay)
BEFORE_S = 1e-9  # an arrival just before its step starts


@dataclass(frozen=True)
class Params(limits.Limits, shared.Deployment):
    """Everything the lesson's controls set."""

    # The budget splits the long document over steps: the lesson's own limits, not the H100's.
    vllm_defaults: bool = limits.vllm_defaults(False)
    blocks: int = control(
        240,
        Integer(
            f"KV cache pool (blocks of {BLOCK_SIZE} tokens)",
            lo=POOL_MIN,
            hi=POOL_MAX,
            step=POOL_STEP,
            main=True,
        ),
    )
    async_scheduling: bool = control(
        False,
        Toggle(
            "Async scheduling",
            key="async",
            help="vLLM's AsyncScheduler, the default in real deployments: it schedules the next "
            "step while the GPU runs this one, before it has this step's output. Off: the "
            "synchronous Scheduler, one step at a time.",
        ),
    )


def workload(arrival_s: np.ndarray | None = None) -> Workload:
    """The lesson's five requests, arriving in steps (or at the given times in seconds)."""
    prompts, outputs, steps = zip(*REQUESTS, strict=True)
    when = {"arrival_step": steps} if arrival_s is None else {"arrival_s": arrival_s}
    return Workload.build(prompts, outputs, request_ids=NAMES, **when)


def config(
    blocks: int, budget: int, seqs: int, caching: bool = False, async_scheduling: bool = False
) -> SchedulerConfig:
    """vLLM's scheduler settings for the lesson (FCFS, chunked prefill on). Prefix caching,
    vLLM's default, is off unless `caching`: the replay recomputes a preempted request in full.
    `async_scheduling`: vLLM's AsyncScheduler instead of the synchronous Scheduler."""
    return SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=seqs,
        max_model_len=MAX_MODEL_LEN,
        num_gpu_blocks=blocks,
        block_size=BLOCK_SIZE,
        enable_prefix_caching=caching,
        async_scheduling=async_scheduling,
    )


def timed_replay(cfg: SchedulerConfig, dep: Deployment) -> Run:
    """The scenario on sim.timed's clock: each request arrives just before its arrival step
    starts, so the run takes vLLM's decisions step for step as `run_steps` would.

    The start of step a depends only on the requests that arrived before it, so the arrival
    times are found one arrival step at a time (the requests not placed yet arrive far later).
    The scenario keeps the engine busy until its last arrival (R1 alone decodes for 48 steps).
    """
    steps = np.array([a for _, _, a in REQUESTS])
    arrival = np.where(steps == 1, 0.0, FAR_S)
    for a in sorted(set(steps.tolist()) - {1}):
        start = run_timed(cfg, workload(arrival), dep).step_start_s[a - 1]
        arrival = np.where(steps == a, start - BEFORE_S, arrival)
    return run_timed(cfg, workload(arrival), dep, record_detail=True)


def with_caching(cfg: SchedulerConfig, rep: Replay, first_pre: int) -> dict:
    """The first victim's recomputation in this run (prefix caching off) and in the same run
    with prefix caching on (a step replay: the same decisions up to its return), where its full
    blocks that no other request took meanwhile are cache hits. `cache_compare` is False unless
    both runs preempt once, the same request in the same step (then the numbers compare)."""
    none = {
        "victim_tokens": 0,
        "resume_step": 0,
        "hit_blocks": 0,
        "hit_tokens": 0,
        "cached_left": 0,
        "cache_compare": False,
    }
    if not first_pre:
        return none
    k = first_pre - 1
    v = rep.preempted[k][0]
    tokens = REQUESTS[v][0] + int(rep.streamed[k][v])  # its prompt and its answer so far
    resume = next(j + 1 for j in range(k + 1, len(rep.admitted)) if v in rep.admitted[j])
    on = run_steps(
        dataclasses.replace(cfg, enable_prefix_caching=True), workload(), record_detail=True
    )
    on_pre = [(d.step, d.preempted.tolist()) for d in on.detail if d.preempted.size]
    same = sum(len(q) for q in rep.preempted) == 1 and on_pre == [(first_pre, [v])]
    hits = int(on.num_prefix_hit_tokens[v]) if same else 0
    return {
        "victim_tokens": tokens,
        "resume_step": resume,
        "hit_blocks": hits // cfg.block_size,
        "hit_tokens": hits,
        "cached_left": tokens - hits,
        "cache_compare": same,
    }


def _preemptions(run: Run) -> tuple[int, int]:
    """(preemptions in all, the step of the first one or 0), from a run recorded with detail."""
    first = next((d.step for d in run.detail or [] if d.preempted.size), 0)
    return int(run.total_preemptions), int(first)


def compare_modes(sync: Run, sync_rep: Replay, asyn: Run, async_rep: Replay) -> dict:
    """The same settings under both schedulers: the first step whose admissions differ (the
    requests the synchronous run admits there, when the async run admits the first of them, and
    who finished in the step before), the preemptions, the steps and the time of each run."""
    n = min(sync.num_steps, asyn.num_steps)
    k = next((j for j in range(n) if sync_rep.admitted[j] != async_rep.admitted[j]), None)
    names = sync_rep.admitted[k] if k is not None else ()
    later = [
        j + 1 for j in range(k or 0, asyn.num_steps) if set(async_rep.admitted[j]) & set(names)
    ]
    freer = [q for q in range(len(NAMES)) if k and sync.finish_step[q] == k]  # step k = split - 1
    (sp, sf), (ap, af) = _preemptions(sync), _preemptions(asyn)
    same = (sp, sf) == (ap, af)
    return {
        "modes_part": bool(names) and bool(later),
        "split_step": k + 1 if k is not None else 0,
        "split_names": join([NAMES[q] for q in names]),
        "split_async_step": later[0] if later else 0,
        "split_freed": bool(names) and bool(later) and bool(freer),
        "split_unexplained": bool(names) and bool(later) and not freer,
        "split_freer": join([NAMES[q] for q in freer]),
        "split_freer_step": k or 0,
        "sync_preemptions": sp,
        "async_preemptions": ap,
        "same_preemptions_dry": same and sp > 0,
        "same_preemptions_none": same and sp == 0,
        "preemptions_differ": not same,
        "sync_steps": int(sync.num_steps),
        "async_steps": int(asyn.num_steps),
        "sync_ms": float(summarize(sync)["makespan_s"]) * 1e3,
        "async_ms": float(summarize(asyn)["makespan_s"]) * 1e3,
    }


def build(p: Params) -> Readout:
    """The replay and every number the page quotes, for one selection."""
    gpu = get_gpu(p.gpu)
    budget, asked = limits.effective_for(p)
    vllm_budget, vllm_seqs = limits.effective(p.gpu, True, budget, asked)
    seqs = min(asked, budget)  # vLLM refuses a budget below max_num_seqs (limits_refused)
    cfg = config(p.blocks, budget, seqs, async_scheduling=p.async_scheduling)
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype)
    run = timed_replay(cfg, dep)
    rep = replay_of(run, NAMES)
    other = timed_replay(dataclasses.replace(cfg, async_scheduling=not p.async_scheduling), dep)
    pair = [(run, rep), (other, replay_of(other, NAMES))]
    (sync, sync_rep), (asyn, async_rep) = pair[::-1] if p.async_scheduling else pair
    pool = kv_pool(
        p.gpu, p.model, tp=p.tp, dtype=p.dtype, block_size=BLOCK_SIZE, max_num_batched_tokens=budget
    )
    pre_steps = [k + 1 for k, names in enumerate(rep.preempted) if names]
    first_pre = pre_steps[0] if pre_steps else 0
    long_q = int(np.argmax([pr for pr, _, _ in REQUESTS]))
    real_usable = pool.num_gpu_blocks - 1
    refused = refuses_to_start(pool.num_gpu_blocks, MAX_MODEL_LEN, BLOCK_SIZE)
    long_start = int(run.first_scheduled_step[long_q])
    long_arrival = REQUESTS[long_q][2]
    held = run.total_preemptions == 0 and long_start > long_arrival + HELD_STEPS
    shown = sample_steps(run.num_steps) + 1
    return Readout(
        **selection(p, dtype=p.dtype),
        **used_limits(p, budget, seqs),
        asked_seqs=asked,
        vllm_budget=vllm_budget,
        vllm_seqs=vllm_seqs,
        budget_below_default=budget < vllm_budget,
        limits_refused=asked > budget,
        blocks=p.blocks,
        block_size=cfg.block_size,
        usable=int(run.kv_blocks_usable),
        pool_tokens=int(run.kv_blocks_usable) * cfg.block_size,
        real_pool=pool.num_gpu_blocks,
        real_tokens=real_usable * BLOCK_SIZE,
        max_model_len=MAX_MODEL_LEN,
        len_blocks=request_blocks(MAX_MODEL_LEN, BLOCK_SIZE),
        pool_tiny=pool.fits and pool.num_gpu_blocks > p.blocks,
        pool_real_smaller=pool.fits and not refused and real_usable < p.blocks,
        pool_real_refused=pool.fits and refused,
        fits=pool.fits,
        weight_gb=pool.weights_gib * GIB / 1e9,
        memory_gib=gpu.memory_gib,
        requests=len(NAMES),
        last_arrival=max(a for _, _, a in REQUESTS),
        long_name=NAMES[long_q],
        long_prompt=REQUESTS[long_q][0],
        num_steps=int(run.num_steps),
        total_ms=float(summarize(run)["makespan_s"]) * 1e3,
        min_ms=float(rep.step_ms[rep.used > 0].min()),  # not async's last step (no pass)
        max_ms=float(rep.step_ms.max()),
        max_step=int(np.argmax(rep.step_ms)) + 1,
        preemptions=run.total_preemptions,
        preempted=run.total_preemptions > 0,
        not_preempted_free=run.total_preemptions == 0 and not held,
        held_back=held,
        long_start=long_start,
        preempted_once=run.total_preemptions == 1,
        preempted_many=run.total_preemptions > 1,
        first_preempt_step=first_pre,
        victim=join([NAMES[q] for q in rep.preempted[first_pre - 1]] if first_pre else []),
        **with_caching(cfg, rep, first_pre),
        async_scheduling=p.async_scheduling,
        overhead_ms=OVERHEAD_MS,
        **compare_modes(sync, sync_rep, asyn, async_rep),
        frame_steps=shown,
        frames=int(shown.shape[0]),
        sampled=bool(shown.shape[0] < run.num_steps),
        replay=rep,
    )


def _names(rep: Replay, reqs: tuple[int, ...] | list[int]) -> str:
    return join([rep.names[q] for q in reqs])


def _one_of(a: bool, b: bool) -> tuple[bool, bool, bool, bool]:
    """The four cases of two facts: (both, only a, only b, neither)."""
    return a and b, a and not b, b and not a, not a and not b


def at_step(r: Readout, step: int) -> StepReadout:
    """What happened in one step (1-based, clamped to the run), for the story under the stepper."""
    rep = r.replay
    k = min(max(int(step), 1), r.num_steps) - 1
    before = rep.running[k - 1] if k else ()
    kinds, tokens = rep.kinds[k], rep.tokens[k]
    decode = [q for q in range(len(rep.names)) if kinds[q] == DECODE]
    new = [q for q in rep.admitted[k] if kinds[q] == PROMPT]
    again = [q for q in rep.admitted[k] if kinds[q] == RECOMPUTE]
    mid = [
        q
        for q in range(len(rep.names))
        if kinds[q] in (PROMPT, RECOMPUTE) and q not in rep.sampled[k]
    ]
    preempted = bool(rep.preempted[k])
    waiting = bool(rep.waiting[k])
    full = int(rep.used[k]) >= r.budget
    seats = len(rep.running[k]) + len(rep.finished[k]) >= r.max_num_seqs
    lists = _one_of(bool(rep.arrived[k]), bool(before))
    serve = _one_of(bool(decode), bool(rep.continuing[k]))
    late = r.async_scheduling
    skipped = list(rep.finished[k]) if late else []  # async: sat in `running`, last token in flight
    # async: sampled their last token here, seen to finish in the next turn
    ending = list(rep.finished[k + 1]) if late and k + 1 < r.num_steps else []
    sample = _one_of(bool(rep.sampled[k]), bool(mid))
    open_ = not preempted
    return StepReadout(
        step=k + 1,
        num_steps=r.num_steps,
        arrived_names=_names(rep, rep.arrived[k]),
        already_running=_names(rep, sorted(before, key=rep.names.__getitem__)),
        arrivals_and_running=lists[0],
        arrivals_none_running=lists[1],
        running_no_arrivals=lists[2],
        nobody_no_arrivals=lists[3],
        decode_names=_names(rep, decode),
        chunk_names=_names(rep, rep.continuing[k]),
        serve_decode_and_chunk=serve[0],
        serve_decode=serve[1],
        serve_chunk=serve[2],
        serve_skipped_only=serve[3] and bool(skipped),
        serve_none=serve[3] and not skipped,
        skipped_too=not serve[3] and bool(skipped),
        skipped_names=_names(rep, skipped),
        prev_step=k,
        next_step=k + 2,
        preempted=preempted,
        preempted_names=_names(rep, rep.preempted[k]),
        admitted_new=bool(new),
        new_names=_names(rep, new),
        new_sizes=join([f"{int(tokens[q]):,}" for q in new]),
        admitted_again=bool(again),
        again_names=_names(rep, again),
        again_sizes=join([f"{int(tokens[q]):,}" for q in again]),
        waiting_names=_names(rep, rep.waiting[k]),
        max_num_seqs=r.max_num_seqs,
        blocked_budget=open_ and waiting and full,
        blocked_seqs=open_ and waiting and not full and seats,
        blocked_blocks=open_ and waiting and not full and not seats,
        blocked_none=open_ and not waiting,
        output_only=int(rep.used[k]) == 0,
        tokens=int(rep.used[k]),
        seqs=int(rep.seqs[k]),
        budget=r.budget,
        step_ms=float(rep.step_ms[k]),
        clock_ms=float(rep.clock_ms[k]),
        sampled_names=_names(rep, rep.sampled[k]),
        mid_names=_names(rep, mid),
        sampled_and_mid=sample[0],
        sampled_only=sample[1],
        mid_only=sample[2],
        sampled_none=sample[3],
        blocks_used=int(rep.blocks_used[k]),
        usable=r.usable,
        finished=bool(rep.finished[k]),
        freed_now=bool(rep.finished[k]) and not late,
        freed_late=bool(rep.finished[k]) and late,
        finished_names=_names(rep, rep.finished[k]),
        blocks_after=int(rep.blocks_after[k]),
        last_in_flight=bool(ending),
        ending_names=_names(rep, ending),
    )


def frame_of(r: Readout, step: int) -> int:
    """The animation frame that shows `step` (or, in a sampled run, the nearest one before it)."""
    return max(int(np.searchsorted(r.frame_steps, int(step), side="right")) - 1, 0)
