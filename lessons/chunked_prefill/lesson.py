"""Lesson "Chunked prefill versus the whole prompt at once": its controls (Params) and
build(p) -> Readout.

Users stream; then one long prompt arrives (sim.scenarios.stream_then_prompt). Two timed runs of
vLLM's scheduler (sim.scenarios.timed_run, on sim.timed's clock) serve that one workload: one with
chunked prefill (the learner's token budget) and one without it (the whole prompt in one step,
so vLLM requires a budget of at least max_model_len). TTFT and the waits between tokens come
from sim.metrics, GPU use from the cost model's roofline sides (sim.cost), and where the chunked
lane's extra time to first token goes from the cost model's parts (costs.extra_parts), so the
text, the table and both charts read the same two runs. Both lanes run vLLM's synchronous
scheduler, so that every step is the cost model's whole price and those parts add up to the
difference (the CPU's OVERHEAD_MS among them); `run_lane(async_scheduling=True)` times a lane
with the AsyncScheduler, for the tests of what the text says it would change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lessons.chunked_prefill.costs import extra_parts
from lessons.chunked_prefill.lanes import (
    FRAMES,
    MAX_STEP_BARS,
    Lane,
    measure,
    time_unit,
    users_shown,
)
from lessons.chunked_prefill.readout import CHUNK, DECODE, WHOLE, Readout
from lessons.kit import limits, shared
from lessons.kit.controls import Integer, Steps, control
from lessons.kit.selection import prefixed, selection, used_limits
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment, step_costs
from sim.hardware import default_batch_limits, get_gpu, peak_tflops
from sim.kv import cdiv
from sim.metrics import request_metrics, token_times_s
from sim.models import get_model, kv_pool
from sim.scenarios import StreamThenPrompt, stream_then_prompt, timed_run
from sim.timed import config_for

PREFIX = "chunk"
PROMPTS = (16, 50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 100000, 131072)
USER_PROMPT = 512  # tokens of each streaming user's own prompt (their conversation so far)
LONG_OUTPUT = 16  # tokens the long prompt asks for: enough to see it start streaming
LEAD_STEPS = 4  # decode steps shown before the long prompt arrives
TAIL_STEPS = 6  # decode steps kept after the later first token
MAX_TRIES = 4
GAP_SHORTER = 1.1  # chunking shortens the longest wait by this factor or more: "times shorter"
BLOCK_SIZE = SchedulerConfig.block_size  # vLLM's default KV block size
# each lane's share of the GPU's peak arithmetic and bandwidth, prompt and decode steps apart
USE_PCTS = ("compute_prompt_pct", "bw_prompt_pct", "compute_decode_pct", "bw_decode_pct")


@dataclass(frozen=True)
class Params(limits.Limits, shared.Deployment):
    """Everything the lesson's controls set."""

    gpu: str = shared.gpu("A100-80GB")
    prompt_tokens: int = control(
        8_000, Steps("Length of the new prompt (tokens)", key="prompt", options=PROMPTS, main=True)
    )
    users: int = control(48, Integer("Users already streaming", lo=1, hi=256, main=True))


@dataclass(frozen=True)
class Setup:
    """What the runs use: the learner's settings within what vLLM (and the lesson) can serve."""

    dep: Deployment
    budget: int
    seqs_asked: int
    max_num_seqs: int
    max_model_len: int
    whole_budget: int
    users: int
    prompt: int


def setup(p: Params) -> Setup:
    """The limits the runs use, the prompt and the users within them.

    max_num_seqs is at most the budget (vLLM refuses more) and at least 2 (a user and the
    newcomer). A prompt must be shorter than max_model_len and leave room for its LONG_OUTPUT
    tokens; without chunking it must also fit in one step beside the users' decodes. At most
    max_num_seqs - 1 users run beside the newcomer, and at most half the budget, so that the
    prompt always gets at least half of each step.
    """
    dtype = p.dtype if get_gpu(p.gpu).fp8_tflops else "bf16"  # as the page falls back
    budget, seqs = limits.effective_for(p)
    mml = int(get_model(p.model).max_position_embeddings)
    used = max(2, min(seqs, budget))
    users = max(1, min(p.users, used - 1, budget // 2))
    whole = max(budget, mml)
    prompt = max(1, min(p.prompt_tokens, mml - LONG_OUTPUT, whole - users))
    dep = Deployment(p.gpu, p.model, tp=p.tp, dtype=dtype)
    return Setup(dep, budget, seqs, used, mml, whole, users, prompt)


def _scenario(s: Setup, out: int, arrival: int) -> StreamThenPrompt:
    return stream_then_prompt(
        s.users,
        USER_PROMPT,
        s.prompt,
        s.budget,
        user_output_tokens=out,
        long_output_tokens=LONG_OUTPUT,
        arrival_step=arrival,
    )


def _bounds(s: Setup) -> tuple[int, int]:
    """(arrival step of the long prompt, output tokens per user): upper bounds that shape the
    scenario; the runs check them. Every user has its first token before the arrival (the
    users' prompts get at least budget - users tokens of every step) plus LEAD_STEPS, and the
    users' outputs outlast the later first token, priced in the cheapest decode steps."""
    r, p0, n = s.users, USER_PROMPT, s.prompt
    warm = max(cdiv(r * p0, max(b - r, 1)) + 1 for b in (s.budget, s.whole_budget))
    arrival = warm + LEAD_STEPS + 1
    chunk = max(s.budget - r, 1)
    out = 64
    for _ in range(3):  # the users' context grows with their output: settle the bound
        ctx = r * (p0 + out) + n
        decode, chunk_ms, whole_ms = step_costs(
            s.dep,
            query_tokens=[r, s.budget, n + r],
            num_seqs=[r, r + 1, r + 1],
            kv_read_tokens=[r * p0, ctx, ctx],
            attn_pairs=[r * (p0 + 1), chunk * n + r * (p0 + out), n * (n + 1) / 2 + ctx],
        ).step_ms
        ttft = max(cdiv(n, chunk) * chunk_ms, whole_ms)
        out = arrival + math.ceil(ttft * 1.15 / decode) + 2 * TAIL_STEPS + 8
    return arrival, out


def run_lane(
    chunked: bool, s: Setup, scenario: StreamThenPrompt, async_scheduling: bool = False
) -> Lane:
    """Time one lane: the budget and KV pool vLLM would use, then sim's clock and metrics
    (vLLM's synchronous scheduler unless `async_scheduling`)."""
    budget = s.budget if chunked else s.whole_budget
    dep = s.dep
    pool = kv_pool(
        dep.gpu,
        dep.model,
        tp=dep.tp,
        dtype=dep.dtype,
        block_size=BLOCK_SIZE,
        max_num_batched_tokens=budget,
    )
    needed = scenario.blocks_needed(BLOCK_SIZE)
    fits = pool.fits and pool.num_gpu_blocks >= needed
    config = config_for(
        dep,
        max_num_batched_tokens=budget,
        max_num_seqs=s.max_num_seqs,
        max_model_len=s.max_model_len,
        num_gpu_blocks=pool.num_gpu_blocks if fits else needed,
        block_size=BLOCK_SIZE,
        enable_chunked_prefill=chunked,
        async_scheduling=async_scheduling,
    )
    run = timed_run(scenario, config, dep)
    long = scenario.long_index
    t0 = float(run.arrival_s[long])
    start = run.step_start_s - t0
    first, last = int(run.first_scheduled_step[long]) - 1, int(run.first_token_step[long]) - 1
    kind = np.full(run.num_steps, DECODE)
    kind[first : last + 1] = CHUNK if chunked else WHOLE
    return Lane(
        run=run,
        pool_tokens=pool.num_gpu_blocks * config.block_size,
        fits=fits,
        start_s=start,
        end_s=start + run.step_ms / 1e3,
        kind=kind,
        token_s=token_times_s(run.token_step, run.step_start_s, run.step_ms) - t0,
        ttft_ms=float(request_metrics(run).ttft_ms[long]),
        prompt_steps=np.arange(first, last + 1),
    )


def simulate(p: Params) -> tuple[Setup, StreamThenPrompt, dict[str, Lane], tuple[float, float]]:
    """Both lanes and the window the charts show (s from the arrival): every user streams from
    LEAD_STEPS decode steps before the arrival to the window's end."""
    s = setup(p)
    arrival, out = _bounds(s)
    r = s.users
    for _ in range(MAX_TRIES):
        scenario = _scenario(s, out, arrival)
        lanes = {"whole": run_lane(False, s, scenario), "chunked": run_lane(True, s, scenario)}
        decode_s = float(lanes["chunked"].run.step_ms[arrival - 2]) / 1e3
        later = max(lane.ttft_ms for lane in lanes.values()) / 1e3
        w0 = -LEAD_STEPS * decode_s
        w1 = later + max(TAIL_STEPS * decode_s, 0.08 * (later - w0))
        ok = all(
            int(lane.run.first_token_step[:r].max()) < arrival - LEAD_STEPS
            and float(lane.token_s[lane.run.token_req < r].max()) >= w1
            for lane in lanes.values()
        )
        if ok:
            return s, scenario, lanes, (w0, w1)
        out, arrival = 2 * out, 2 * arrival
    raise RuntimeError("could not build a window where every user streams throughout")


def cast() -> dict:
    """The GPU and prompt the lesson opens on and the course's usual GPU, with vLLM's default
    budget on each (the cast line says why this lesson differs)."""
    here, course = Params().gpu, shared.Deployment().gpu
    return {
        "cast_gpu": here,
        "cast_budget": default_batch_limits(here)["max_num_batched_tokens"],
        "cast_prompt": Params().prompt_tokens,
        "course_gpu": course,
        "course_budget": default_batch_limits(course)["max_num_batched_tokens"],
    }


def build(p: Params) -> Readout:
    """Every number, paragraph choice and chart array of the lesson, from one pair of runs."""
    s, scenario, lanes, window = simulate(p)
    frames = np.linspace(*window, FRAMES)
    merge = any(
        np.count_nonzero((ln.end_s > window[0]) & (ln.start_s < window[1])) > MAX_STEP_BARS
        for ln in lanes.values()
    )
    # The counters start two decode steps before the window (which opens LEAD_STEPS early), so
    # their first frame shows the steady wait of users who are streaming.
    since = window[0] * (1 + 2 / LEAD_STEPS)
    w, c = (
        measure(lanes[name], s.dep, s.users, window, since, frames, merge)
        for name in ("whole", "chunked")
    )
    whole, chunked = lanes["whole"], lanes["chunked"]
    chunk_steps = int(chunked.prompt_steps.size)
    chunk = c.first_chunk
    alone = step_costs(
        s.dep,
        query_tokens=[chunk],
        num_seqs=[1],
        kv_read_tokens=[0],
        attn_pairs=[chunk * (chunk + 1) / 2],
    )  # the same first chunk in a step of its own
    chunk_alone = float(alone.step_ms[0])
    gpu = get_gpu(p.gpu)
    unit, scale = time_unit(window[1] - window[0])
    ttft_later = chunked.ttft_ms >= whole.ttft_ms
    needed_tokens = scenario.blocks_needed(BLOCK_SIZE) * BLOCK_SIZE
    return Readout(
        **selection(p, dtype=s.dep.dtype),
        single_gpu=p.tp == 1,
        **cast(),
        **used_limits(p, s.budget, s.max_num_seqs),
        users=s.users,
        users_asked=p.users,
        users_clamped=s.users != p.users,
        user_prompt=USER_PROMPT,
        prompt=s.prompt,
        prompt_asked=p.prompt_tokens,
        prompt_clamped=s.prompt != p.prompt_tokens,
        long_output=LONG_OUTPUT,
        overhead_ms=OVERHEAD_MS,
        seqs_asked=s.seqs_asked,
        seqs_clamped=s.max_num_seqs != s.seqs_asked,
        max_model_len=s.max_model_len,
        whole_budget=s.whole_budget,
        needed_tokens=needed_tokens,
        whole_pool_tokens=whole.pool_tokens,
        chunked_pool_tokens=chunked.pool_tokens,
        memory_short=not (whole.fits and chunked.fits),
        whole_lane_short=not whole.fits and whole.pool_tokens > 0,
        whole_no_weights=not whole.fits and whole.pool_tokens == 0,
        chunked_lane_short=not chunked.fits and chunked.pool_tokens > 0,
        chunked_no_weights=not chunked.fits and chunked.pool_tokens == 0,
        chunk=chunk,
        chunk_steps=chunk_steps,
        one_chunk=chunk_steps == 1,
        chunk_step_tokens=c.step_tokens_max,
        chunk_step_ms_min=c.step_ms_min,
        chunk_step_ms_max=c.step_ms_max,
        whole_step_tokens=w.step_tokens_max,
        whole_step_ms=w.step_ms_max,
        decode_ms=c.decode_ms,
        whole_decode_ms=w.decode_ms,
        first_step_ms=c.first_step_ms,
        chunk_alone_ms=chunk_alone,
        ride_along_ms=c.first_step_ms - chunk_alone,
        whole_worst_gap_ms=w.worst_gap_ms,
        chunked_worst_gap_ms=c.worst_gap_ms,
        gap_ratio=w.worst_gap_ms / c.worst_gap_ms,
        gap_shorter=chunk_steps > 1 and w.worst_gap_ms >= GAP_SHORTER * c.worst_gap_ms,
        gap_barely=chunk_steps > 1 and w.worst_gap_ms < GAP_SHORTER * c.worst_gap_ms,
        room=s.budget - s.users,
        whole_mean_gap_ms=w.mean_gap_ms,
        chunked_mean_gap_ms=c.mean_gap_ms,
        whole_ttft_ms=whole.ttft_ms,
        chunked_ttft_ms=chunked.ttft_ms,
        ttft_diff_ms=chunked.ttft_ms - whole.ttft_ms,
        ttft_change_pct=100.0 * (chunked.ttft_ms - whole.ttft_ms) / whole.ttft_ms,
        ttft_gain_ms=whole.ttft_ms - chunked.ttft_ms,
        ttft_longer=chunk_steps > 1 and ttft_later,
        ttft_shorter=chunk_steps > 1 and not ttft_later,
        **extra_parts(s.dep, whole, chunked, chunk_steps > 1 and ttft_later),
        preemptions=whole.run.total_preemptions + chunked.run.total_preemptions,
        **prefixed("whole", w, USE_PCTS),
        **prefixed("chunked", c, USE_PCTS),
        prompt_memory_bound=w.compute_prompt_pct < w.bw_prompt_pct,
        peak_tflops=peak_tflops(gpu, s.dep.dtype),
        peak_tbps=gpu.bw_tbps,
        window_s=window,
        time_unit=unit,
        time_scale=scale,
        frame_s=frames,
        start_frame=0,  # no control sets a time: the animation opens as the window begins
        users_shown=users_shown(s.users),
        thinned=w.thinned or c.thinned,
        merged=merge,
        whole=w.view,
        chunked=c.view,
    )
