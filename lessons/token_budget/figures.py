"""Figures of the lesson "One token budget": the budget-fill timeline and what changes the count.

The lesson's scenario is the seed's Fig. 8.2: `decodes` short requests are generating when a long
prompt arrives; every step has one budget (`max_num_batched_tokens`); the running requests take
their one token each first and the prompt gets the rest, in chunks. A cached prefix (prefix
caching on, and an earlier request that carried the same system prompt) lowers the count the
prompt still needs. Everything is one `run_steps` replay with detail; the numbers the text quotes
come from that run. Speculative decoding is not in the scheduler engine yet, so its panel is the
budget arithmetic of the same rule, labelled as such (see `spec_arithmetic`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.theme import color
from lessons.timeline import PROMPT, BudgetFill, budget_timeline, classify
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.hardware import default_batch_limits, get_gpu, gpu_keys
from sim.kv import cdiv
from sim.models import get_model, kv_pool
from sim.run import Run
from sim.scheduler import run_steps
from sim.workload import Workload

DECODE_PROMPT = 16  # each running request's own (short) prompt, as in the recording
LONG_OUTPUT = 8  # output tokens of the long request: enough to see it decode
MAX_WAIT_STEPS = 600  # cap on how long the decodes keep running (the run stays small)
SPEC_KS = (0, 1, 2, 3, 4, 5)
PROMPTS = (16, 64, 256, 1024, 2048, 3072, 4096, 6144, 8192, 16384, 32768, 65536, 131072)
CACHED_SHARES = (0, 25, 50, 75, 100)
MAX_DECODES = 256


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set. `cached_pct`: share of the prompt already cached."""

    gpu: str = "L4"
    model: str = "Llama-3.1-8B"
    budget: int = 2048
    max_num_seqs: int = 256
    decodes: int = 8
    prompt: int = 4096
    cached_pct: int = 0

    @property
    def cached(self) -> int:
        return self.prompt * self.cached_pct // 100

    @property
    def max_model_len(self) -> int:
        """vLLM's default: the model's own context length."""
        return get_model(self.model).max_position_embeddings

    @property
    def running(self) -> int:
        """Running requests the scenario can hold: below max_num_seqs and below the budget."""
        return max(0, min(self.decodes, self.max_num_seqs - 1, self.budget - 1))


@dataclass(frozen=True, eq=False)
class Scenario:
    """A built scenario: its run, its classification and where the long prompt sits."""

    params: Params
    run: Run
    fill: BudgetFill
    long: int
    arrival: int


def pool_blocks(p: Params) -> int:
    """vLLM's KV pool for the GPU and model at this budget (0 if the weights do not fit)."""
    return kv_pool(p.gpu, p.model, max_num_batched_tokens=p.budget).num_gpu_blocks


def problem(p: Params) -> str | None:
    """Why the scenario cannot run as asked (a text.md section name), or None."""
    if not kv_pool(p.gpu, p.model, max_num_batched_tokens=p.budget).fits:
        return "no-weights"
    if p.prompt >= p.max_model_len:
        return "too-long"
    if cdiv(p.prompt + LONG_OUTPUT, 16) > pool_blocks(p) - 1:
        return "no-room"
    return None


def _config(p: Params, prefix_caching: bool) -> SchedulerConfig:
    return SchedulerConfig(
        max_num_batched_tokens=p.budget,
        max_num_seqs=p.max_num_seqs,
        max_model_len=p.max_model_len,
        num_gpu_blocks=pool_blocks(p),
        enable_prefix_caching=prefix_caching,
    )


def _warmup(p: Params) -> tuple[list[int], list[int], list[int]]:
    """Prompts, prefix ids and prefix tokens of the requests that come before the long one."""
    prompts = [DECODE_PROMPT] * p.running
    pid = [-1] * p.running
    ptok = [0] * p.running
    if p.cached:
        # An earlier conversation that carried the same system prompt: its blocks stay cached.
        prompts.append(p.cached)
        pid.append(1)
        ptok.append(p.cached)
    return prompts, pid, ptok


def simulate(p: Params) -> Scenario:
    """The running requests get going, then the long prompt arrives; one detailed replay."""
    prompts, pid, ptok = _warmup(p)
    arrival = 1
    if prompts:
        # A short first replay finds the step by which every earlier request has started
        # decoding (and the cached request has finished); the long prompt arrives a step later.
        warm = run_steps(
            _config(p, p.cached > 0),
            Workload.build(prompts, [1] * len(prompts), arrival_step=[1] * len(prompts)),
        )
        arrival = int(warm.first_token_step.max()) + 2
    left_per_step = max(p.budget - p.running, 1)
    chunks = cdiv(max(p.prompt - p.cached, 1), left_per_step)
    decode_out = min(arrival + chunks + 4, MAX_WAIT_STEPS)
    outputs = [decode_out] * p.running + ([1] if p.cached else [])
    wl = Workload.build(
        prompts + [p.prompt],
        outputs + [LONG_OUTPUT],
        arrival_step=[1] * len(prompts) + [arrival],
        prefix_id=pid + [1 if p.cached else -1],
        prefix_tokens=ptok + [p.cached],
    )
    run = run_steps(_config(p, p.cached > 0), wl, record_detail=True)
    return Scenario(p, run, classify(run), long=len(prompts), arrival=arrival)


def long_chunks(s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """(steps, tokens) of the long request's prompt chunks, in order."""
    tokens = s.fill.request_tokens(s.long, PROMPT)
    steps = np.flatnonzero(tokens) + 1
    return steps, tokens[steps - 1]


def window(s: Scenario) -> tuple[int, int]:
    """The steps the timeline shows: from the step before the prompt arrives to two decodes on."""
    first_decode = int(s.run.first_token_step[s.long]) + 1
    first = max(1, s.arrival - 1)
    last = min(first_decode + 1, s.run.num_steps)
    return first, last


def step_ms(s: Scenario) -> np.ndarray:
    """Every step of the replay priced by the cost model (ms)."""
    p = s.params
    run = s.run
    return np.asarray(
        step_costs(
            Deployment(gpu=p.gpu, model=p.model),
            query_tokens=run.num_scheduled_tokens,
            num_seqs=run.num_scheduled_seqs,
            kv_read_tokens=run.kv_read_tokens,
            attn_pairs=run.attn_pairs,
        ).step_ms,
        dtype=np.float64,
    )


def _listing(tokens: list[int], total: int) -> str:
    if len(tokens) == 1:
        return f"{tokens[0]:,}"
    if total > len(tokens):
        return ", ".join(f"{t:,}" for t in tokens) + f", … ({total} chunks in all)"
    return ", ".join(f"{t:,}" for t in tokens[:-1]) + f" and {tokens[-1]:,}"


def numbers(s: Scenario) -> dict:
    """Values the text quotes, all read from the replay (and its cost-model prices)."""
    p = s.params
    run = s.run
    steps, tokens = long_chunks(s)
    first_token = int(run.first_token_step[s.long])
    at_arrival = run.detail[s.arrival - 1]
    others = [q for q in at_arrival.scheduled_req.tolist() if q != s.long]
    ms = step_ms(s)
    ttft = float(ms[s.arrival - 1 : first_token].sum())
    decode_only = [
        k for k, d in enumerate(run.detail) if d.scheduled_req.size and s.fill.prompt[k] == 0
    ]
    hit = int(run.num_prefix_hit_tokens[s.long])
    return {
        "gpu": p.gpu,
        "model": p.model,
        "budget": p.budget,
        "max_num_seqs": p.max_num_seqs,
        "decodes": p.decodes,
        "running": p.running,
        "running_at_arrival": len(others),
        "prompt": p.prompt,
        "cached": p.cached,
        "cached_pct": p.cached_pct,
        "hit_tokens": hit,
        "needed": p.prompt - hit,
        "arrival": s.arrival,
        "first_chunk_step": int(steps[0]),
        "first_chunk": int(tokens[0]),
        "last_chunk": int(tokens[-1]),
        "num_chunks": int(len(tokens)),
        "chunk_list": _listing(tokens[:6].tolist(), int(len(tokens))),
        "first_token_step": first_token,
        "first_decode_step": first_token + 1,
        "decode_ordinal": first_token + 1 - s.arrival + 1,
        "left_after_decodes": p.budget - len(others),
        "ttft_ms": ttft,
        "max_chunk_ms": float(ms[steps - 1].max()),
        "decode_step_ms": float(ms[decode_only[-1]]) if decode_only else float("nan"),
        "pool_blocks": int(run.kv_blocks_usable),
        "max_model_len": p.max_model_len,
    }


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def timeline_figure(s: Scenario) -> dict:
    """The budget-fill timeline of the scenario, with the step cursor animation."""
    first, last = window(s)
    names = {s.long: "the new prompt"}
    for i in range(s.params.running):
        names[i] = f"running request {i + 1}"
    if s.params.cached:
        names[s.long - 1] = "earlier chat with the same system prompt"
    return budget_timeline(
        s.run,
        first_step=first,
        last_step=last,
        names=names,
        fill=s.fill,
        title=(
            f"One {s.params.budget:,}-token budget per step: {s.params.running} running "
            f"requests and a {s.params.prompt:,}-token prompt"
        ),
    )


def spec_arithmetic(
    budget: int, decodes: int, prompt: int, ks: tuple[int, ...] = SPEC_KS
) -> dict[str, np.ndarray]:
    """The budget rule with k draft tokens: each running request asks 1 + k tokens per step.

    Arithmetic, not a replay: the scheduler engine has no speculative decoding yet. With k = 0 it
    gives the replay's own first chunk and chunk count (the tests check that).
    """
    k = np.asarray(ks, dtype=np.int64)
    decode_tokens = np.minimum(decodes * (1 + k), budget)
    left = budget - decode_tokens
    chunk = np.minimum(left, prompt)  # the first chunk: what is left, or the whole prompt
    steps = np.where(left > 0, -(-prompt // np.maximum(left, 1)), 0)
    return {"k": k, "decode": decode_tokens, "chunk": chunk, "steps": steps}


def spec_figure(budget: int, decodes: int, prompt: int, k: int) -> dict:
    """Bars: the first step's budget split for k = 0..5 draft tokens; the chosen k outlined."""
    a = spec_arithmetic(budget, decodes, prompt)
    labels = [f"k = {int(x)}" for x in a["k"]]
    outline = [3 if int(x) == k else 0 for x in a["k"]]
    data = [
        {
            "type": "bar",
            "name": "tokens of the running requests (1 + k each)",
            "x": labels,
            "y": a["decode"],
            "marker": {"color": color("decode"), "line": {"width": outline, "color": "black"}},
            "hovertemplate": "%{x}: %{y:,} tokens<extra>running requests</extra>",
        },
        {
            "type": "bar",
            "name": "left for the prompt chunk",
            "x": labels,
            "y": a["chunk"],
            "text": [
                f"{int(c):,} → {int(n)} steps" if c > 0 else "no room"
                for c, n in zip(a["chunk"], a["steps"], strict=True)
            ],
            "textposition": "inside",
            "marker": {"color": color("prefill"), "line": {"width": outline, "color": "black"}},
            "hovertemplate": "%{x}: %{y:,} prompt tokens per step<extra>prompt chunk</extra>",
        },
    ]
    layout = {
        "title": {
            "text": (
                f"Budget arithmetic: {decodes} running requests with k draft tokens each"
                "<br><sup>computed from the scheduler's rule, not replayed</sup>"
            )
        },
        "barmode": "stack",
        "height": 380,
        "xaxis": {"title": {"text": "draft tokens per running request (k)"}},
        "yaxis": {"title": {"text": "tokens in one step"}, "range": [0, budget * 1.08]},
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"t": 80},
    }
    return {"data": data, "layout": layout}


def defaults_table() -> list[dict]:
    """vLLM's `vllm serve` defaults for every GPU in the catalog, by the memory CUDA reports."""
    rows = []
    for key in gpu_keys():
        gpu = get_gpu(key)
        limits = default_batch_limits(key, usage="server")
        rows.append(
            {
                "key": key,
                "name": gpu.name,
                "memory_gib": gpu.cuda_memory_gib,
                "budget": limits["max_num_batched_tokens"],
                "seqs": limits["max_num_seqs"],
            }
        )
    return sorted(rows, key=lambda r: (r["memory_gib"], r["key"]))


def default_tiers() -> list[dict]:
    """The catalog's GPUs grouped by their default (budget, max_num_seqs), smallest first."""
    tiers: dict[tuple[int, int], list[str]] = {}
    for r in defaults_table():
        tiers.setdefault((r["budget"], r["seqs"]), []).append(r["key"])
    return [{"budget": b, "seqs": n, "gpus": ", ".join(g)} for (b, n), g in sorted(tiers.items())]


def defaults_figure(selected: str) -> dict:
    """Default token budget per GPU, ordered by memory; the selected GPU highlighted."""
    rows = defaults_table()
    data = [
        {
            "type": "bar",
            "name": "default max_num_batched_tokens",
            "x": [r["key"] for r in rows],
            "y": [r["budget"] for r in rows],
            "text": [f"{r['budget']:,}" for r in rows],
            "textposition": "outside",
            "customdata": [[r["memory_gib"], r["seqs"]] for r in rows],
            "marker": {
                "color": [
                    color("highlight") if r["key"] == selected else color("decode") for r in rows
                ]
            },
            "hovertemplate": (
                "%{x}: %{customdata[0]:.1f} GiB reported<br>budget %{y:,} tokens, "
                "max_num_seqs %{customdata[1]:,}<extra></extra>"
            ),
        },
    ]
    top = max(r["budget"] for r in rows) * 1.2
    layout = {
        "title": {"text": "vLLM's default token budget for vllm serve, GPU by GPU"},
        "height": 400,
        # Each GPU's memory (as CUDA reports it, the figure vLLM's rule reads) under its name.
        "xaxis": {
            "title": {"text": "GPU and the memory CUDA reports (GiB), ordered by memory"},
            "tickmode": "array",
            "tickvals": [r["key"] for r in rows],
            "ticktext": [f"{r['key']}<br>{r['memory_gib']:.0f} GiB" for r in rows],
        },
        "yaxis": {"title": {"text": "default budget (tokens per step)"}, "range": [0, top]},
        "showlegend": False,
    }
    return {"data": data, "layout": layout}


def spec_part(p: Params, k: int, needed: int | None = None) -> dict:
    """The speculative-decoding arithmetic for the lesson's setting and k draft tokens.

    `needed`: the prompt tokens the replay still had to compute (after prefix-cache hits);
    the whole prompt if not given.
    """
    needed = p.prompt if needed is None else int(needed)
    a = spec_arithmetic(p.budget, p.running, needed)
    return {
        "figure": spec_figure(p.budget, p.running, needed, k),
        # Which text section states the numbers: k = 0, the same step count, or more steps.
        "text_section": "spec-numbers-k0"
        if k == 0
        else "spec-numbers-same-steps"
        if int(a["steps"][k]) == int(a["steps"][0])
        else "spec-numbers",
        "numbers": {
            "k": k,
            "spec_decode": int(a["decode"][k]),
            "spec_chunk": int(a["chunk"][k]),
            "spec_steps": int(a["steps"][k]),
            "plain_chunk": int(a["chunk"][0]),
            "plain_steps": int(a["steps"][0]),
            "spec_running": p.running,
        },
        "alt": (
            f"Stacked bars for k = 0 to {SPEC_KS[-1]} draft tokens: with {p.running} running "
            f"requests and a {p.budget:,}-token budget, the running requests take "
            + ", ".join(f"{int(v):,}" for v in a["decode"])
            + " tokens and the prompt chunk gets "
            + ", ".join(f"{int(v):,}" for v in a["chunk"])
            + "."
        ),
    }


def defaults_part(gpu: str) -> dict:
    """vLLM's default limits for every GPU of the catalog, the chosen one highlighted."""
    rows = defaults_table()
    return {
        "figure": defaults_figure(gpu),
        "tiers": default_tiers(),
        "alt": (
            "Bar chart: vLLM's default token budget for each GPU in the catalog, ordered by "
            "memory: "
            + "; ".join(f"{r['key']} {r['memory_gib']:.0f} GiB: {r['budget']:,}" for r in rows)
            + "."
        ),
    }


def build(p: Params) -> dict:
    """The replay, its timeline and the numbers the text quotes (or why it cannot run)."""
    issue = problem(p)
    if issue is not None:
        return {
            "problem": issue,
            "numbers": {
                "prompt": p.prompt,
                "max_model_len": p.max_model_len,
                "gpu": p.gpu,
                "model": p.model,
                "pool_blocks": max(pool_blocks(p) - 1, 0),
            },
        }
    s = simulate(p)
    nums = numbers(s)
    nums["decode_ordinal_text"] = ordinal(nums["decode_ordinal"])
    first, last = window(s)
    return {
        "problem": None,
        "scenario": s,
        "numbers": nums,
        "timeline": timeline_figure(s),
        "alt": (
            f"Stacked bar chart, one bar per scheduler step from step {first} to {last}, each "
            f"up to the {p.budget:,}-token budget: {nums['running_at_arrival']} decode tokens at "
            f"the bottom, then the new prompt's chunks of {nums['chunk_list']} tokens from step "
            f"{nums['first_chunk_step']}; unused budget dashed. The new request decodes from "
            f"step {nums['first_decode_step']}."
        ),
    }
