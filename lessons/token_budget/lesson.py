"""Lesson "One token budget": its controls (Params) and build(p) -> Readout.

The scenario is vLLM's Fig. 8.2 (`sim.scenarios.stream_then_cached_prompt`, stream_then_prompt
with an optional cached prefix): `decodes` short requests are streaming answers when a long
prompt arrives; every step has one budget (`max_num_batched_tokens`); the running requests take
their one token each first and the prompt gets the rest, in chunks. A cached prefix (prefix
caching on, and an earlier conversation that carried the same first tokens) lowers the count the
prompt still needs. One timed run (sim.timed) on the chosen GPU and model gives the timeline
and the clock, sim.metrics the time to first token. Speculative decoding is not in the scheduler
engine yet, so its part is the budget arithmetic of the same rule (`spec_arithmetic`), labelled
as such on the page. The runs use vLLM's synchronous scheduler, as the recording does;
`Setting.async_scheduling` runs the same scene with the AsyncScheduler (the tests check that it
schedules the same tokens in every step, which the text says).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from lessons.kit import limits, shared
from lessons.kit.controls import Integer, Steps, control
from lessons.kit.selection import selection, used_limits
from lessons.kit.timeline import PROMPT, BudgetFill, classify
from lessons.kit.words import join, ordinal
from lessons.token_budget.arithmetic import SPEC_KS, defaults_numbers, spec_numbers
from lessons.token_budget.readout import Readout
from sim.config import SchedulerConfig
from sim.hardware import default_batch_limits, get_gpu
from sim.kv import cdiv
from sim.metrics import request_metrics
from sim.models import get_model, kv_pool
from sim.run import Run
from sim.scenarios import StreamThenCachedPrompt, stream_then_cached_prompt, timed_run
from sim.timed import config_for, deployment, run_timed

PREFIX = "tb"
USER_PROMPT = 16  # each running request's own (short) prompt, as in the recording
LONG_OUTPUT = 8  # output tokens of the long request: enough to see it decode
MAX_WAIT_STEPS = 600  # cap on how long the running requests keep decoding (the run stays small)
PROMPTS = (16, 64, 256, 1024, 2048, 3072, 4096, 6144, 8192, 16384, 32768, 65536, 131072)
CACHED_SHARES = (0, 25, 50, 75, 100)
MAX_DECODES = 256
LISTED_CHUNKS = 6  # chunks the text lists by size before it skips to the last


@dataclass(frozen=True)
class Params(limits.Limits, shared.Deployment):
    """Everything the lesson's controls set. `cached_pct`: share of the prompt already cached."""

    gpu: str = shared.gpu("L4")
    decodes: int = control(
        8, Integer("Running requests (decoding)", lo=0, hi=MAX_DECODES, main=True)
    )
    prompt: int = control(4096, Steps("New prompt (tokens)", options=PROMPTS, main=True))
    cached_pct: int = control(
        0, Steps("Cached prefix (% of the prompt)", key="cached", options=CACHED_SHARES)
    )
    k: int = control(2, Integer("Draft tokens per running request (k)", lo=0, hi=SPEC_KS[-1]))


@dataclass(frozen=True)
class Setting:
    """What the replay depends on (not k): the key of its cache."""

    gpu: str
    model: str
    dtype: str
    tp: int
    budget: int
    seqs: int
    running: int
    prompt: int
    cached: int
    async_scheduling: bool = False  # the page always runs synchronous, as the recording


@dataclass(frozen=True, eq=False)
class Replay:
    """One timed run of the scenario, its classification and where the long prompt sits."""

    scenario: StreamThenCachedPrompt
    run: Run
    fill: BudgetFill
    ttft_ms: float


def setting(p: Params) -> Setting:
    """The Setting of a Params: the limits the run uses, the weights it can use on this GPU
    (FP8 only where the GPU has it), the running requests that fit them, the cached tokens."""
    budget, seqs = limits.effective_for(p)
    dtype = p.dtype if get_gpu(p.gpu).fp8_tflops else "bf16"
    running = max(0, min(p.decodes, seqs - 1, budget - 1))
    cached = p.prompt * p.cached_pct // 100
    return Setting(p.gpu, p.model, dtype, p.tp, budget, seqs, running, p.prompt, cached)


@lru_cache(maxsize=64)
def simulate(s: Setting) -> Replay:
    """The running requests get going, then the long prompt arrives: one timed run, with detail.

    A first run of the requests before the prompt finds the step by which all of them have
    sampled a token (counting the budget their decodes take); the prompt arrives one decode
    step later (`sim.scenarios.timed_run` times it to arrive just as that step starts).
    """
    dep = deployment(s.gpu, s.model, tp=s.tp, dtype=s.dtype)
    config = _config(s)
    sc = stream_then_cached_prompt(
        s.running,
        USER_PROMPT,
        s.prompt,
        s.budget,
        cached_tokens=s.cached,
        long_output_tokens=LONG_OUTPUT,
    )
    first_tokens: list[int] = []
    if sc.before:
        # The users decode at least until the last of them has started: each step reads at
        # least budget - users prompt tokens until every prompt before the long one is read.
        before_tokens = s.running * USER_PROMPT + s.cached
        warm_bound = cdiv(before_tokens, max(s.budget - s.running, 1)) + 1
        sc = dataclasses.replace(sc, user_output_tokens=min(warm_bound, MAX_WAIT_STEPS))
        first_tokens = run_timed(config, sc.before_workload(), dep).first_token_step.tolist()
    sc = dataclasses.replace(sc.settled(first_tokens), user_output_tokens=None)
    sc = dataclasses.replace(sc, user_output_tokens=min(sc.outputs(), MAX_WAIT_STEPS))
    run = timed_run(sc, config, dep, record_detail=True)
    ttft = float(request_metrics(run).ttft_ms[sc.long_index])
    return Replay(sc, run, classify(run), ttft)


def _config(s: Setting) -> SchedulerConfig:
    """vLLM's scheduler config for the setting: the limits given, the catalog's KV pool for that
    budget, prefix caching on when a prefix is cached (raises SimInputError if nothing fits)."""
    dep = deployment(s.gpu, s.model, tp=s.tp, dtype=s.dtype)
    return config_for(
        dep,
        max_num_batched_tokens=s.budget,
        max_num_seqs=s.seqs,
        enable_prefix_caching=s.cached > 0,
        async_scheduling=s.async_scheduling,
    )


def listing(values: list[int], total: int) -> str:
    """Chunk sizes as the text quotes them: "4,096", "2,040, 2,040 and 16", or the first few,
    an ellipsis and the last one when there are more than LISTED_CHUNKS."""
    shown = [f"{v:,}" for v in values]
    if total > LISTED_CHUNKS:
        return ", ".join(shown[: LISTED_CHUNKS - 1]) + ", …, " + shown[-1]
    return join(shown)


def _numbers(s: Setting, r: Replay) -> dict[str, Any]:
    """The numbers the text quotes, read from the run."""
    run, sc, fill = r.run, r.scenario, r.fill
    long = sc.long_index
    chunk_tokens = fill.request_tokens(long, PROMPT)
    steps = np.flatnonzero(chunk_tokens) + 1
    tokens = chunk_tokens[steps - 1]
    # The step that admitted the prompt, as the run saw it (the scenario aims at sc.arrival()).
    arrival = next(d.step for d in run.detail if long in d.arrived.tolist())
    first_token = int(run.first_token_step[long])
    at_arrival = run.detail[arrival - 1]
    others = sum(1 for q in at_arrival.scheduled_req.tolist() if q != long)
    # A step of decode tokens only: the first once the prompt decodes too (else the last one).
    decode_only = [k for k in range(run.num_steps) if fill.used[k] and fill.prompt[k] == 0]
    after = [k for k in decode_only if k + 1 > first_token]
    pick = after[0] if after else decode_only[-1] if decode_only else None
    hit = int(run.num_prefix_hit_tokens[long])
    first_decode = first_token + 1
    shown = tokens[:LISTED_CHUNKS].tolist()
    if len(tokens) > LISTED_CHUNKS:
        shown[-1] = int(tokens[-1])
    return {
        "arrival": arrival,
        "running_at_arrival": others,
        "left_after_decodes": s.budget - others,
        "hit_tokens": hit,
        "needed": s.prompt - hit,
        "first_chunk_step": int(steps[0]),
        "first_chunk": int(tokens[0]),
        "last_chunk": int(tokens[-1]),
        "num_chunks": int(len(tokens)),
        "chunk_list": listing(shown, int(len(tokens))),
        "first_token_step": first_token,
        "first_token_ordinal": first_token - arrival + 1,
        "first_decode_step": first_decode,
        "decode_ordinal": first_decode - arrival + 1,
        "decode_ordinal_text": ordinal(first_decode - arrival + 1),
        "ttft_ms": r.ttft_ms,
        "decode_step_ms": float(run.step_ms[pick]) if pick is not None else 0.0,
    }


NO_RUN = {
    "arrival": 0,
    "running_at_arrival": 0,
    "left_after_decodes": 0,
    "hit_tokens": 0,
    "needed": 0,
    "first_chunk_step": 0,
    "first_chunk": 0,
    "last_chunk": 0,
    "num_chunks": 0,
    "chunk_list": "",
    "first_token_step": 0,
    "first_token_ordinal": 0,
    "first_decode_step": 0,
    "decode_ordinal": 0,
    "decode_ordinal_text": "",
    "ttft_ms": 0.0,
    "decode_step_ms": 0.0,
}


def _cases(s: Setting) -> dict[str, Any]:
    """Whether the scene can run for a setting, else the first reason it cannot (limits that
    contradict, weights that do not fit, a prompt at max_model_len, a pool too small for it),
    with the pool and the length limit the text quotes."""
    bad_limits = s.budget < s.seqs
    fits = kv_pool(s.gpu, s.model, tp=s.tp, dtype=s.dtype, max_num_batched_tokens=s.budget).fits
    no_weights = not bad_limits and not fits
    config = _config(s) if not (bad_limits or no_weights) else None
    mml = get_model(s.model).max_position_embeddings if config is None else config.max_model_len
    usable = 0 if config is None else config.kv_blocks_usable
    block_size = 0 if config is None else config.block_size
    too_long = config is not None and s.prompt >= mml
    no_room = (
        config is not None and not too_long and (cdiv(s.prompt + LONG_OUTPUT, block_size) > usable)
    )
    return {
        "block_size": block_size,
        "max_model_len": mml,
        "pool_blocks": usable,
        "bad_limits": bad_limits,
        "no_weights": no_weights,
        "too_long": too_long,
        "no_room": no_room,
        "runs": config is not None and not (too_long or no_room),
    }


def cast() -> dict[str, Any]:
    """The GPU the lesson opens on and the course's usual one, with vLLM's default budget on each
    (the cast line says why this lesson differs)."""
    here, course = Params().gpu, shared.Deployment().gpu
    return {
        "cast_gpu": here,
        "cast_budget": default_batch_limits(here)["max_num_batched_tokens"],
        "course_gpu": course,
        "course_budget": default_batch_limits(course)["max_num_batched_tokens"],
    }


def build(p: Params) -> Readout:
    """Every number, paragraph choice and chart input of the lesson for one selection."""
    s = setting(p)
    cases = _cases(s)
    runs = cases["runs"]
    replay = simulate(s) if runs else None
    numbers = _numbers(s, replay) if replay is not None else NO_RUN
    needed = numbers["needed"] if runs else s.prompt
    return Readout(
        **selection(p, dtype=s.dtype),
        **used_limits(p, s.budget, s.seqs),
        decodes=p.decodes,
        running=s.running,
        prompt=s.prompt,
        cached_pct=p.cached_pct,
        cached=s.cached,
        **cases,
        capped=runs and s.running < p.decodes,
        cached_some=runs and s.cached > 0,
        cached_none=runs and s.cached == 0,
        **numbers,
        **spec_numbers(s.budget, s.running, needed, p.k, runs),
        decoding_at_arrival=runs and numbers["running_at_arrival"] > 0,
        idle_at_arrival=runs and numbers["running_at_arrival"] == 0,
        many_chunks=runs and numbers["num_chunks"] > 1,
        one_chunk=runs and numbers["num_chunks"] == 1,
        **defaults_numbers(),
        **cast(),
        run=replay.run if replay is not None else None,
        fill=replay.fill if replay is not None else None,
        long=replay.scenario.long_index if replay is not None else 0,
    )
