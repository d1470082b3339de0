"""Lesson "Choosing the budget": its controls (Params) and build(p) -> Readout.

A long prompt arrives while `decodes` users stream (sim.scenarios.stream_then_prompt): each user
sent a 16-token prompt and has streamed about 1,008 tokens since, so it holds about 1,024 tokens
of conversation. vLLM serves the running users first, one token each, and gives the prompt what
is left of the token budget, so each step carries the decodes plus a chunk of
`budget - decodes` prompt tokens until the prompt is in (SCHEDULER.md a3-a4; vLLM's recording
tests/data/exercise.json shows it: 4,096 - 128 = 3,968). Every budget is one timed run of the
scheduler (sim.scenarios.timed_run, on the clock of sim.timed); the prompt's time to first token
and the users' longest gap while it comes in are read with sim.metrics.

Every run uses vLLM's AsyncScheduler (`ASYNC_SCHEDULING`), the default of real deployments, whose
latencies the rule below picks a budget for: the CPU's part of a step (sim.cost.OVERHEAD_MS)
hides behind the GPU's, so each step is the GPU's time alone (SCHEDULER.md g).

The trade chart runs a grid of budgets, plus the learner's, vLLM's default and the ones the
latency rule probes. Runs are cached per (GPU, model, users, prompt, budget), so moving the
budget or the latency target runs at most a few new budgets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from lessons.choosing_budget.readout import Lane, Readout
from lessons.kit import shared
from lessons.kit.controls import Integer, Steps, control
from lessons.kit.selection import selection
from sim import metrics
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment, ridge_tokens
from sim.hardware import default_batch_limits, get_gpu
from sim.models import get_model, kv_pool, weight_bytes
from sim.scenarios import StreamThenPrompt, stream_then_prompt, timed_run
from sim.timed import config_for

PREFIX = "choose"
BUDGET_MIN, BUDGET_MAX, BUDGET_STEP = 256, 32_768, 256
BUDGETS = tuple(range(BUDGET_MIN, BUDGET_MAX + 1, BUDGET_STEP))
PROMPTS = (16, 256, 1024, 2048, 4096, 8192, 12000, 16384, 20000, 32768, 65536, 131072)
# The trade chart's budgets (every one a multiple of 256), and the animation's frames.
GRID = (256, 512, 768, 1024, 1280, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192, 10240)
GRID += (12288, 16384, 20480, 24576, 32768)
TRADE_MOVES = 1.25  # both curves span more than this factor: the slider shows a trade
ANIM_BUDGETS = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576)
ANIM_BUDGETS += (32768,)
REF_BUDGET = 4_096  # the worked example: its first token sets the animation's time window
USER_PROMPT = 16  # each user's own prompt, as in vLLM's recording of the worked example
CONTEXT = 1_024  # tokens each user holds when the long prompt arrives (prompt + streamed)
TAIL_STEPS = 256  # decode steps the users keep streaming after the prompt is in
MAX_PREFILL_STEPS = 2_048  # a budget that needs more steps for the prompt is not simulated
BLOCK_SIZE = SchedulerConfig.block_size  # vLLM's default block size
ASYNC_SCHEDULING = True  # vLLM's AsyncScheduler: a deployment's latencies, not the sync engine's
# the lesson's fixed numbers, as the text quotes them
FIXED = {
    "context": CONTEXT,
    "user_prompt": USER_PROMPT,
    "budget_min": BUDGET_MIN,
    "budget_max": BUDGET_MAX,
    "budget_step": BUDGET_STEP,
    "overhead_ms": OVERHEAD_MS,
    "max_steps": MAX_PREFILL_STEPS,
}


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set."""

    gpu: str = shared.gpu("H100-SXM")
    model: str = shared.model("Llama-3.1-8B")
    budget: int = control(
        4_096, Steps("Token budget (max_num_batched_tokens)", options=BUDGETS, main=True)
    )
    decodes: int = control(128, Integer("Users streaming (running decodes)", lo=1, hi=1024))
    prompt: int = control(20_000, Steps("Long prompt (tokens)", options=PROMPTS))
    itl_target_ms: int = control(
        50, Integer("Inter-token latency target (ms)", key="itl", lo=10, hi=300, step=5)
    )


def default_budget(gpu: str) -> int:
    """vLLM's default token budget for `vllm serve` on this GPU."""
    return int(default_batch_limits(gpu, usage="server")["max_num_batched_tokens"])


def scenario(decodes: int, prompt: int, budget: int) -> StreamThenPrompt:
    """The lesson's scene at one budget: the users stream until they hold about CONTEXT
    tokens, then the long prompt arrives; they keep streaming TAIL_STEPS steps after it is in."""
    s = stream_then_prompt(decodes, USER_PROMPT, prompt, budget, lead_steps=CONTEXT - USER_PROMPT)
    return replace(s, user_output_tokens=s.arrival() + s.chunk_steps() + TAIL_STEPS)


def runnable(decodes: int, prompt: int, budget: int) -> bool:
    """The budget leaves the prompt room, in at most MAX_PREFILL_STEPS steps."""
    return budget > decodes and scenario(decodes, prompt, budget).chunk_steps() <= MAX_PREFILL_STEPS


def lane_config(gpu: str, model: str, decodes: int, prompt: int, budget: int) -> SchedulerConfig:
    """The scheduler settings of one budget's run: every user and the prompt run together, and
    the KV cache holds them all (kv_short says when a real GPU's would not)."""
    s = scenario(decodes, prompt, budget)
    longest = max(prompt + s.long_output_tokens, USER_PROMPT + s.outputs()) + 1
    return config_for(
        Deployment(gpu, model),
        max_num_batched_tokens=budget,
        max_num_seqs=decodes + 1,
        max_model_len=max(get_model(model).max_position_embeddings, longest),
        num_gpu_blocks=s.blocks_needed(BLOCK_SIZE),
        block_size=BLOCK_SIZE,
        async_scheduling=ASYNC_SCHEDULING,
    )


@lru_cache(maxsize=1024)
def lane(gpu: str, model: str, decodes: int, prompt: int, budget: int) -> Lane:
    """One budget's timed run, read from the prompt's arrival on (a runnable budget only)."""
    s = scenario(decodes, prompt, budget)
    dep = Deployment(gpu, model)
    config = lane_config(gpu, model, decodes, prompt, budget)
    run = timed_run(s, config, dep)
    long = s.long_index
    first, last = int(run.first_scheduled_step[long]), int(run.first_token_step[long])
    arrival = float(run.arrival_s[long])
    req, step = run.token_req, run.token_step
    # The users' tokens from the one just before the prompt's first step (their gaps while it
    # comes in), user 0's from there on (when every user receives a token), the prompt's own.
    during = (req < long) & (step >= first - 1) & (step <= last)
    tick = (req == 0) & (step >= first)
    own = req == long
    clock = (run.step_start_s, run.step_ms)
    _, gaps = metrics.inter_token_gaps(req[during], metrics.token_times_s(step[during], *clock))
    lat = metrics.request_latencies(
        req[own], metrics.token_times_s(step[own], *clock), run.arrival_s
    )
    rows = slice(first - 1, last)
    # Each user decodes one token per step; the rest of the step is the prompt's chunk.
    chunks = run.num_scheduled_tokens[rows] - (run.num_scheduled_seqs[rows] - 1)
    start_ms = (run.step_start_s[first - 1 :] - arrival) * 1e3
    return Lane(
        budget=budget,
        steps=last - first + 1,
        chunks=np.asarray(chunks, dtype=np.int64),
        worst_ms=float(gaps.max()) * 1e3,
        ttft_ms=float(lat["ttft"][long]) * 1e3,
        decode_ms=float(run.step_ms[first - 2]),
        start_ms=start_ms,
        end_ms=start_ms + run.step_ms[first - 1 :],
        tick_ms=(metrics.token_times_s(step[tick], *clock) - arrival) * 1e3,
        kv_tokens=int(run.kv_blocks_used[last - 1]) * BLOCK_SIZE,
    )


def pick_budget(gpu: str, model: str, decodes: int, prompt: int, target_ms: float) -> int | None:
    """The largest budget (a multiple of 256) whose longest step meets `target_ms`.

    The longest step does not grow steadily with the budget (it jumps where the prompt needs one
    chunk fewer), but the first step that carries the prompt does: it holds the same decodes
    and a bigger chunk. So once a grid budget's first such step breaks the target, every larger
    budget does too; below it, the budgets from the largest grid budget that meets the target
    up are run from the top down until one meets it."""
    ok = [b for b in BUDGETS if runnable(decodes, prompt, b)]
    coarse = sorted({b for b in GRID if b in ok} | {ok[0]})
    # the largest first: the cost model's lookup tables for it serve the smaller ones
    lanes = {b: lane(gpu, model, decodes, prompt, b) for b in reversed(coarse)}
    first_ms = {b: float(x.end_ms[0] - x.start_ms[0]) for b, x in lanes.items()}
    above = next((b for b in coarse if first_ms[b] > target_ms), BUDGET_MAX + BUDGET_STEP)
    passing = [b for b in coarse if b < above and lanes[b].worst_ms <= target_ms]
    low = passing[-1] if passing else ok[0]
    for b in reversed([b for b in ok if low <= b < above]):
        if lane(gpu, model, decodes, prompt, b).worst_ms <= target_ms:
            return b
    return None


def _nearest(budgets: list[int], budget: int) -> int:
    """Index of the budget nearest `budget` on a log scale."""
    return int(np.argmin(np.abs(np.log(budgets) - np.log(budget))))


def build(p: Params) -> Readout:
    """Every number, paragraph choice and curve of the lesson for one selection."""
    scene = (p.gpu, p.model, p.decodes, p.prompt)
    s = scenario(p.decodes, p.prompt, p.budget)
    has_room = p.budget > p.decodes
    simulated = runnable(p.decodes, p.prompt, p.budget)
    default = default_budget(p.gpu)
    pick = pick_budget(*scene, p.itl_target_ms)
    ok = [b for b in BUDGETS if runnable(p.decodes, p.prompt, b)]
    shown = {b for b in GRID if b in ok} | {ok[0]} | ({pick} if pick else set())
    shown |= {b for b in (p.budget, default) if b in ok}
    curve = [lane(*scene, b) for b in sorted(shown)]
    frames = tuple(lane(*scene, b) for b in ANIM_BUDGETS if b in ok)
    frame_budgets = [f.budget for f in frames]
    ref = frames[frame_budgets.index(REF_BUDGET)] if REF_BUDGET in frame_budgets else frames[0]
    window = min(max(f.ttft_ms for f in frames), 2.5 * ref.ttft_ms) * 1.02
    window = min(window, min(float(f.tick_ms[-1]) for f in frames))  # users stream throughout
    start = _nearest(frame_budgets, p.budget)
    mine = lane(*scene, p.budget) if simulated else None
    nan = float("nan")
    chunks = mine.chunks if mine else np.zeros(1, dtype=np.int64)
    steps = mine.steps if mine else (s.chunk_steps() if has_room else 0)
    room = max(p.budget - p.decodes, 0)
    chunk, last_chunk = (int(chunks[0]), int(chunks[-1])) if mine else (room, 0)
    picked = lane(*scene, pick) if pick else None
    below = [b for b in ok if b < pick] if pick else []
    # a smaller budget than the pick delays this prompt's first token (else: it only would delay
    # longer prompts)
    smaller_costs = bool(below) and lane(*scene, below[-1]).ttft_ms > picked.ttft_ms
    smallest = lane(*scene, ok[0])
    # the two curves move visibly over the budgets drawn (else the prompt fits any budget)
    worst = [x.worst_ms for x in curve]
    first = [x.ttft_ms for x in curve]
    moves = max(worst) > TRADE_MOVES * min(worst) and max(first) > TRADE_MOVES * min(first)
    gpu, model = get_gpu(p.gpu), get_model(p.model)
    pool = kv_pool(p.gpu, p.model, max_num_batched_tokens=p.budget)
    kv_have = pool.num_gpu_blocks * BLOCK_SIZE
    kv_need = mine.kv_tokens if mine else 0
    max_seqs = min(default_batch_limits(p.gpu, usage="server")["max_num_seqs"], p.budget)
    return Readout(
        **selection(p),
        budget=p.budget,
        decodes=p.decodes,
        prompt=p.prompt,
        **FIXED,
        has_room=has_room,
        simulated=simulated,
        thin=has_room and not simulated,
        room=room,
        steps=steps,
        chunk=chunk,
        last_chunk=last_chunk,
        full_chunks=int((chunks == chunks[0]).sum()) if mine else 0,
        one_step=simulated and steps == 1,
        even_chunks=simulated and steps > 1 and last_chunk == chunk,
        uneven_chunks=simulated and steps > 1 and last_chunk != chunk,
        worst_ms=mine.worst_ms if mine else nan,
        ttft_ms=mine.ttft_ms if mine else nan,
        ttft_s=mine.ttft_ms / 1e3 if mine else nan,
        decode_ms=(mine or ref).decode_ms,
        worst_ratio=mine.worst_ms / mine.decode_ms if mine else nan,
        target_ms=p.itl_target_ms,
        has_pick=pick is not None,
        trade_moves=simulated and moves,
        trade_flat=simulated and not moves and smallest.steps == 1,  # the prompt in one go
        pick_top=pick == BUDGET_MAX,
        pick_trade=pick is not None and pick < BUDGET_MAX and smaller_costs,
        pick_no_gain=pick is not None and pick < BUDGET_MAX and not smaller_costs,
        pick=pick or 0,
        pick_worst_ms=picked.worst_ms if picked else nan,
        pick_ttft_s=picked.ttft_ms / 1e3 if picked else nan,
        pick_steps=picked.steps if picked else 0,
        smallest_budget=smallest.budget,
        smallest_worst_ms=smallest.worst_ms,
        default_budget=default,
        is_default=p.budget == default,
        opening_budget=Params.budget,
        fits=pool.fits,
        weight_gb=weight_bytes(model) / 1e9,
        ridge=ridge_tokens(Deployment(p.gpu, p.model)),
        memory_gib=gpu.memory_gib,
        kv_short=pool.fits and mine is not None and kv_need > kv_have,
        kv_need=kv_need,
        kv_have=kv_have,
        seqs_capped=has_room and p.decodes + 1 > max_seqs,
        max_seqs=max_seqs,
        run_seqs=p.decodes + 1,
        seqs_l4=default_batch_limits("L4", usage="server")["max_num_seqs"],
        seqs_h100=default_batch_limits("H100-SXM", usage="server")["max_num_seqs"],
        too_long=p.prompt >= model.max_position_embeddings,
        max_len=model.max_position_embeddings,
        anim_budget=frame_budgets[start],
        anim_start=start,
        anim_exact=frame_budgets[start] == p.budget,
        frames=frames,
        window_ms=window,
        curve_budgets=np.array([c.budget for c in curve]),
        curve_worst_ms=np.array([c.worst_ms for c in curve]),
        curve_ttft_s=np.array([c.ttft_ms / 1e3 for c in curve]),
        curve_steps=np.array([c.steps for c in curve]),
    )
