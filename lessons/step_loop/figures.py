"""Figures of the lesson "The step loop": one scheduler step at a time, on a small real scenario.

Five requests arrive over the first steps (one of them a long prompt). `simulate` replays them
with `sim.scheduler.run_steps` (vLLM's rules, with detail) on a deliberately small KV pool, then
prices every step with the cost model (`sim.cost.step_costs` on the run's own per-step token,
sequence, KV-read and attention counts). `StepState` turns the run's detail into what each frame
shows: the waiting queue and the running list in vLLM's order, the batch of the step (decode
tokens and prompt chunks), the KV blocks each request holds, and the tokens streamed so far.
The same per-step pictures feed the Plotly animation and the hand stepper, so both always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lessons.anim import animate, sample_steps
from lessons.text import section
from lessons.theme import color, palette
from lessons.timeline import DECODE, PROMPT, RECOMPUTE, BudgetFill, classify
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.hardware import get_gpu
from sim.kv import cdiv
from sim.models import GIB, KVPool, get_model, kv_pool
from sim.run import Run
from sim.scheduler import run_steps
from sim.workload import Workload

# The scenario: (prompt tokens, output tokens, arrival step) of each request.
REQUESTS = ((600, 48, 1), (300, 56, 1), (2500, 16, 3), (400, 40, 5), (200, 32, 8))
NAMES = tuple(f"R{i + 1}" for i in range(len(REQUESTS)))
BLOCK_SIZE = 16
MAX_MODEL_LEN = 8192
POOL_MIN = cdiv(max(p + o for p, o, _ in REQUESTS), BLOCK_SIZE) + 2
POOL_MAX = 1000
POOL_DEFAULT = 240
POOL_STEP = 10
ROW_SPARE = "unused / free"
KIND_LABEL = {DECODE: "decode", PROMPT: "prompt", RECOMPUTE: "recompute"}


@dataclass(frozen=True)
class Params:
    """Everything the lesson's controls set."""

    gpu: str = "L4"
    model: str = "Llama-3.1-8B"
    budget: int = 2048
    max_num_seqs: int = 256
    blocks: int = POOL_DEFAULT


@dataclass(frozen=True, eq=False)
class Replay:
    """The run, its classification, per-request state by step and the step times."""

    params: Params
    run: Run
    fill: BudgetFill
    step_ms: np.ndarray
    clock_ms: np.ndarray  # time at the end of each step
    blocks: np.ndarray  # (steps, requests): KV blocks held right after schedule()
    streamed: np.ndarray  # (steps, requests): output tokens after the step
    pool: KVPool


def workload() -> Workload:
    """The lesson's five requests."""
    prompts, outputs, arrivals = zip(*REQUESTS, strict=True)
    return Workload.build(prompts, outputs, arrival_step=arrivals, request_ids=NAMES)


def config(p: Params) -> SchedulerConfig:
    """vLLM's scheduler settings for the lesson (prefix caching off, FCFS, chunked prefill on)."""
    return SchedulerConfig(
        max_num_batched_tokens=p.budget,
        max_num_seqs=p.max_num_seqs,
        max_model_len=MAX_MODEL_LEN,
        num_gpu_blocks=p.blocks,
        block_size=BLOCK_SIZE,
    )


def _blocks_and_streams(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """Blocks each request holds after each schedule(), and its output tokens after each step.

    Without prefix caching a request holds cdiv(computed tokens, 16) blocks; a preemption frees
    them all (and its computed count restarts from 0); a finish frees them at the end of the step.
    """
    n = run.workload.num_requests
    computed = np.zeros(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    blocks = np.zeros((run.num_steps, n), dtype=np.int64)
    streamed = np.zeros((run.num_steps, n), dtype=np.int64)
    for k, d in enumerate(run.detail or []):
        computed[d.preempted] = 0
        computed[d.scheduled_req] += d.scheduled_tokens
        held = cdiv(computed, BLOCK_SIZE)
        live = np.zeros(n, dtype=bool)
        live[d.running] = True
        blocks[k] = np.where(live, held, 0)
        out[d.sampled] += 1
        streamed[k] = out
        computed[d.finished] = 0
    return blocks, streamed


def simulate(p: Params) -> Replay:
    """Replay the scenario and price each step on the chosen GPU and model."""
    run = run_steps(config(p), workload(), record_detail=True)
    costs = step_costs(
        Deployment(gpu=p.gpu, model=p.model),
        query_tokens=run.num_scheduled_tokens,
        num_seqs=run.num_scheduled_seqs,
        kv_read_tokens=run.kv_read_tokens,
        attn_pairs=run.attn_pairs,
    )
    step_ms = np.asarray(costs.step_ms, dtype=np.float64)
    blocks, streamed = _blocks_and_streams(run)
    return Replay(
        params=p,
        run=run,
        fill=classify(run),
        step_ms=step_ms,
        clock_ms=np.cumsum(step_ms),
        blocks=blocks,
        streamed=streamed,
        pool=kv_pool(p.gpu, p.model, max_num_batched_tokens=p.budget),
    )


def _req_colors() -> list[str]:
    pal = palette()
    return [pal[i % len(pal)] for i in range(len(NAMES))]


def step_events(r: Replay, step: int) -> dict:
    """What happened in one step, as names and counts (the page words them from text.md)."""
    d = r.run.detail[step - 1]
    k = step - 1
    items = r.fill.items[k]
    by_kind = {kind: [(NAMES[q], t) for q, t, kd in items if kd == kind] for kind in KIND_LABEL}
    if k:
        prev = r.run.detail[k - 1]
        running_before = set(prev.running.tolist()) - set(prev.finished.tolist())
    else:
        running_before = set()
    entered = set(d.new.tolist()) | set(d.resumed.tolist())
    admitted = [NAMES[q] for q in d.running.tolist() if q in entered]
    p = r.params
    used = int(r.fill.used[k])
    waiting_left = [NAMES[q] for q in d.waiting.tolist()]
    if not waiting_left:
        blocked = "none"
    elif d.preempted.size:
        blocked = "preempted"
    elif used >= p.budget:
        blocked = "budget"
    elif d.running.shape[0] >= p.max_num_seqs:
        blocked = "seqs"
    else:
        blocked = "blocks"
    mid_prompt = [
        NAMES[q] for q, _, kd in items if kd != DECODE and q not in set(d.sampled.tolist())
    ]
    return {
        "step": step,
        "arrived": [NAMES[q] for q in d.arrived.tolist()],
        "decode": [nm for nm, _ in by_kind[DECODE]],
        "chunks": by_kind[PROMPT],
        "recompute": by_kind[RECOMPUTE],
        "admitted": admitted,
        "already_running": sorted(NAMES[q] for q in running_before),
        "preempted": [NAMES[q] for q in d.preempted.tolist()],
        "waiting_left": waiting_left,
        "blocked": blocked,
        "tokens": used,
        "seqs": int(r.run.num_scheduled_seqs[k]),
        "budget": p.budget,
        "step_ms": float(r.step_ms[k]),
        "clock_ms": float(r.clock_ms[k]),
        "sampled": [NAMES[q] for q in d.sampled.tolist()],
        "mid_prompt": mid_prompt,
        "finished": [NAMES[q] for q in d.finished.tolist()],
        "blocks_used": int(d.kv_blocks_used_after_schedule),
        "blocks_after": int(d.kv_blocks_used),
        "usable": int(r.run.kv_blocks_usable),
    }


def _state_points(r: Replay, k: int) -> dict:
    d = r.run.detail[k]
    xs: list[int] = []
    ys: list[str] = []
    text: list[str] = []
    cols: list[int] = []
    finished_so_far = [q for q in range(len(NAMES)) if 0 < r.run.finish_step[q] <= k + 1]
    done_now = set(d.finished.tolist())
    for row, members in (
        ("waiting queue", d.waiting.tolist()),
        ("running list", [q for q in d.running.tolist() if q not in done_now]),
        ("finished", finished_so_far),
    ):
        for pos, q in enumerate(members, start=1):
            xs.append(pos)
            ys.append(row)
            text.append(NAMES[q])
            cols.append(q)
    return {
        "type": "scatter",
        "x": xs or [None],
        "y": ys or [None],
        "text": text or [""],
        "marker": {"color": cols or [0]},
    }


def _rows() -> list[str]:
    return [*NAMES, ROW_SPARE]


def _frame_traces(r: Replay, k: int) -> list[dict]:
    """What changes in step k, and only that: the title line, queue, batch, blocks, streams.

    Frames carry only these arrays (Plotly merges a frame's trace into the existing trace);
    everything static (rows, axes, colours, hover text) is added by `_full` to the figure's own
    traces. Small frames keep Plotly's validation and copying cheap on every rerun.
    """
    n = len(NAMES)
    tokens = np.zeros(n + 1, dtype=np.int64)
    kinds = [""] * n
    for q, t, kd in r.fill.items[k]:
        tokens[q] += t
        kinds[q] = KIND_LABEL[kd]
    tokens[n] = int(r.fill.unused[k])
    held = np.append(r.blocks[k], r.run.kv_blocks_usable - r.blocks[k].sum())
    streamed = np.append(r.streamed[k], 0)
    return [
        {"type": "scatter", "text": [_frame_title(r, k)]},
        _state_points(r, k),
        {
            "type": "bar",
            "x": tokens.tolist(),
            "text": [
                f"{t:,} {kd}" if t else "" for t, kd in zip(tokens[:n].tolist(), kinds, strict=True)
            ]
            + [f"{tokens[n]:,} unused"],
        },
        {
            "type": "bar",
            "x": held.tolist(),
            "text": [f"{v:,}" if v else "" for v in held[:n].tolist()] + [f"{held[n]:,} free"],
        },
        {
            "type": "bar",
            "x": streamed.tolist(),
            "text": [f"{v}" if v else "" for v in streamed[:n].tolist()] + [""],
        },
    ]


def _full(traces: list[dict]) -> list[dict]:
    """Frame traces plus their static attributes (rows, axes, colours, hover, text placement)."""
    colors = _req_colors()
    n = len(colors)
    scale = [[i / max(n - 1, 1), c] for i, c in enumerate(colors)]
    rows = _rows()
    bar = {
        "orientation": "h",
        "y": rows,
        "textposition": "outside",
        "cliponaxis": False,
        "showlegend": False,
        "marker": {"color": [*colors, color("unused")], "opacity": [1.0] * n + [0.3]},
    }
    static = (
        {
            "mode": "text",
            "x": [0],
            "y": [0],
            "xaxis": "x5",
            "yaxis": "y5",
            "textposition": "middle right",
            "textfont": {"size": 14},
            "hoverinfo": "skip",
            "showlegend": False,
        },
        {
            "mode": "markers+text",
            "xaxis": "x",
            "yaxis": "y",
            "textfont": {"color": "white", "size": 13},
            "hovertemplate": "%{text}: %{y}, place %{x}<extra></extra>",
            "showlegend": False,
        },
        {
            **bar,
            "xaxis": "x2",
            "yaxis": "y2",
            "hovertemplate": "%{y}: %{x:,} tokens<extra></extra>",
        },
        {
            **bar,
            "xaxis": "x3",
            "yaxis": "y3",
            "hovertemplate": "%{y}: %{x:,} blocks<extra></extra>",
        },
        {
            **bar,
            "xaxis": "x4",
            "yaxis": "y4",
            "hovertemplate": "%{y}: %{x} streamed<extra></extra>",
        },
    )
    out = [{**t, **extra} for t, extra in zip(traces, static, strict=True)]
    out[1]["marker"] = {
        **out[1]["marker"],
        "symbol": "square",
        "size": 34,
        "colorscale": scale,
        "cmin": 0,
        "cmax": n - 1,
    }
    return out


def _frame_title(r: Replay, k: int) -> str:
    d = r.run.detail[k]
    p = r.params
    used = int(r.fill.used[k])
    events = []
    if d.arrived.size:
        events.append("arrives: " + ", ".join(NAMES[q] for q in d.arrived.tolist()))
    if d.new.size or d.resumed.size:
        events.append("admitted: " + ", ".join(NAMES[q] for q in [*d.new, *d.resumed]))
    if d.preempted.size:
        events.append("preempted: " + ", ".join(NAMES[q] for q in d.preempted.tolist()))
    entered = set(d.new.tolist()) | set(d.resumed.tolist())
    going_on = [NAMES[q] for q, _, kd in r.fill.items[k] if kd != DECODE and q not in entered]
    if going_on:
        events.append("prompt continues: " + ", ".join(going_on))
    if d.finished.size:
        events.append("finished: " + ", ".join(NAMES[q] for q in d.finished.tolist()))
    line = " · ".join(events) or "decode tokens only"
    return (
        f"Step {k + 1} of {r.run.num_steps}: {used:,} of {p.budget:,} tokens, "
        f"{r.step_ms[k]:.1f} ms on {p.gpu} (cost model); the clock reads {r.clock_ms[k]:,.0f} ms"
        f"<br>{line}"
    )


def _layout(r: Replay) -> dict:
    rows = _rows()
    n_req = len(NAMES)
    max_tokens = max(int(r.fill.used.max()), 1)
    max_out = max(o for _, o, _ in REQUESTS)
    cat = {"categoryorder": "array", "categoryarray": rows[::-1], "type": "category"}
    note = {"xref": "paper", "yref": "paper", "showarrow": False, "font": {"size": 13}}
    return {
        "height": 700,
        "margin": {"t": 60, "l": 110, "r": 40},
        "barmode": "overlay",
        "bargap": 0.25,
        "xaxis": {
            "domain": [0, 1],
            "anchor": "y",
            "range": [0.4, n_req + 0.6],
            "dtick": 1,
            "title": {"text": "place in line (1 = served first)"},
        },
        "yaxis": {
            "domain": [0.66, 0.88],
            "anchor": "x",
            "type": "category",
            "categoryorder": "array",
            "categoryarray": ["finished", "running list", "waiting queue"],
            "range": [-0.6, 2.6],
            "title": {"text": "state"},
        },
        "xaxis2": {
            "domain": [0, 0.3],
            "anchor": "y2",
            "range": [0, max_tokens * 1.45],
            "title": {"text": "tokens in this step"},
        },
        "yaxis2": {"domain": [0, 0.42], "anchor": "x2", "title": {"text": "request"}, **cat},
        "xaxis3": {
            "domain": [0.36, 0.66],
            "anchor": "y3",
            "range": [0, r.run.kv_blocks_usable * 1.3],
            "title": {"text": "KV blocks held (16 tokens each)"},
        },
        "yaxis3": {"domain": [0, 0.42], "anchor": "x3", "showticklabels": False, **cat},
        "xaxis4": {
            "domain": [0.72, 1.0],
            "anchor": "y4",
            "range": [0, max_out * 1.3],
            "title": {"text": "tokens streamed so far"},
        },
        "yaxis4": {"domain": [0, 0.42], "anchor": "x4", "showticklabels": False, **cat},
        "annotations": [
            {**note, "x": 0, "y": 0.47, "xanchor": "left", "text": "<b>The batch</b> (one pass)"},
            {**note, "x": 0.36, "y": 0.47, "xanchor": "left", "text": "<b>KV cache blocks</b>"},
            {**note, "x": 0.72, "y": 0.47, "xanchor": "left", "text": "<b>Tokens streamed</b>"},
        ],
        "xaxis5": {"domain": [0, 1], "anchor": "y5", "range": [0, 1], "visible": False},
        "yaxis5": {"domain": [0.92, 1.0], "anchor": "x5", "range": [-1, 1], "visible": False},
        "title": {"text": "The step loop, replayed step by step"},
        "showlegend": False,
    }


def _targets() -> dict:
    return {
        "type": "scatter",
        "mode": "markers",
        "name": "answer length",
        "y": list(NAMES),
        "x": [o for _, o, _ in REQUESTS],
        "marker": {"symbol": "line-ns-open", "size": 18, "color": color("neutral")},
        "hovertemplate": "%{y} stops after %{x} tokens<extra></extra>",
        "showlegend": False,
        "xaxis": "x4",
        "yaxis": "y4",
    }


def step_figure(r: Replay, step: int) -> dict:
    """The state of one step (1-based) as a still figure, for stepping by hand."""
    k = min(max(int(step), 1), r.run.num_steps) - 1
    layout = _layout(r)
    return {"data": [_targets(), *_full(_frame_traces(r, k))], "layout": layout}


def animation_figure(r: Replay) -> dict:
    """Every step (sampled evenly if there are more than 200) as Plotly frames."""
    shown = sample_steps(r.run.num_steps)
    layout = _layout(r)
    frames = []
    for k in shown.tolist():
        traces = _frame_traces(r, k)
        frames.append(
            {
                # The answer-length ticks (trace 0) are static, but Plotly drops them from
                # view when the bars around them redraw unless the frame repeats them.
                "data": [{"type": "scatter", "x": _targets()["x"]}, *traces],
                "traces": list(range(0, 1 + len(traces))),
            }
        )
    if shown.shape[0] < r.run.num_steps:
        layout["title"]["text"] += (
            f"<br><sup>animation: {shown.shape[0]} of {r.run.num_steps} steps, evenly sampled; "
            "the stepper below shows every step</sup>"
        )
    figure = {"data": [_targets(), *_full(frames[0]["data"][1:])], "layout": layout}
    labels = [str(k + 1) for k in shown.tolist()]
    return animate(figure, frames, labels, prefix="step ")


def numbers(r: Replay) -> dict:
    """Values the lesson text quotes, from the replay."""
    run = r.run
    p = r.params
    pre_steps = [d.step for d in run.detail if d.preempted.size]
    long_q = int(np.argmax([pr for pr, _, _ in REQUESTS]))
    chunk_steps = np.flatnonzero(r.fill.request_tokens(long_q, PROMPT))
    first_pre = pre_steps[0] if pre_steps else 0
    victims = run.detail[first_pre - 1].preempted.tolist() if first_pre else []
    return {
        "gpu_name": get_gpu(p.gpu).name,
        "model_name": get_model(p.model).key,
        "budget": p.budget,
        "max_num_seqs": p.max_num_seqs,
        "blocks": p.blocks,
        "usable": int(run.kv_blocks_usable),
        "pool_tokens": int(run.kv_blocks_usable) * BLOCK_SIZE,
        "real_pool": r.pool.num_gpu_blocks,
        "fits": r.pool.fits,
        "weight_gb": r.pool.weights_gib * GIB / 1e9,
        "memory_gib": get_gpu(p.gpu).memory_gib,
        "num_steps": int(run.num_steps),
        "total_ms": float(r.clock_ms[-1]),
        "min_ms": float(r.step_ms[r.step_ms > 0].min()),
        "max_ms": float(r.step_ms.max()),
        "max_step": int(np.argmax(r.step_ms)) + 1,
        "preemptions": int(run.total_preemptions),
        "first_preempt_step": first_pre,
        "victim": ", ".join(NAMES[q] for q in victims),
        "long_name": NAMES[long_q],
        "long_prompt": REQUESTS[long_q][0],
        "long_chunks": int(chunk_steps.shape[0]),
        "requests": len(NAMES),
        "last_arrival": max(a for _, _, a in REQUESTS),
    }


def build(p: Params) -> dict:
    """The replay, its numbers, the animation and the alt text of the lesson's figures."""
    r = simulate(p)
    nums = numbers(r)
    return {
        "replay": r,
        "numbers": nums,
        "anim": animation_figure(r),
        "alt": {
            "anim": (
                f"Animation over {nums['num_steps']} scheduler steps of {nums['requests']} "
                "requests: the waiting queue and running list as labelled squares, then three bar "
                "panels per request: tokens in the step's batch, KV blocks held, and tokens "
                f"streamed. Step times from the cost model range from {nums['min_ms']:.1f} to "
                f"{nums['max_ms']:.1f} ms."
            ),
            "step": (
                "The same four panels for the chosen step: queue and running list, the batch, "
                "KV blocks per request and tokens streamed so far."
            ),
        },
    }


TEXT = Path(__file__).with_name("text.md")


def join_names(names: list[str]) -> str:
    """ "R1", "R1 and R2", "R1, R2 and R3"."""
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def story(r: Replay, step: int) -> str:
    """What happened in `step`, told in the order of the loop (Markdown, from text.md)."""
    e = step_events(r, step)

    def sec(name: str, values: dict | None = None) -> str:
        return section(TEXT, name, values)

    arrived = (
        sec("ev-arrived", {"names": join_names(e["arrived"])})
        if e["arrived"]
        else sec("ev-no-arrival")
    )
    lists = sec(
        "ev-lists",
        {"arrived_text": arrived, "already_running": join_names(e["already_running"]) or "none"},
    )
    running_chunks = [nm for nm, _ in e["chunks"] if nm in e["already_running"]]
    running_chunks += [nm for nm, _ in e["recompute"] if nm in e["already_running"]]
    if e["decode"] or running_chunks:
        chunk_text = (
            sec("ev-chunk-running", {"chunks": join_names(running_chunks)})
            if running_chunks
            else ""
        )
        running = sec(
            "ev-running",
            {"decode": join_names(e["decode"]) or "none of them", "chunk_text": chunk_text},
        )
    else:
        running = sec("ev-running-none")
    parts = []
    if e["preempted"]:
        parts.append(sec("ev-preempted", {"preempted": join_names(e["preempted"])}))
    if e["admitted"]:
        sizes = {nm: sec("ev-tokens", {"tokens": t}) for nm, t in e["chunks"]}
        sizes.update({nm: sec("ev-tokens-again", {"tokens": t}) for nm, t in e["recompute"]})
        tokens_text = join_names([f"{nm}: {sizes[nm]}" for nm in e["admitted"]])
        parts.append(
            sec("ev-admitted", {"admitted": join_names(e["admitted"]), "tokens_text": tokens_text})
        )
    if e["blocked"] != "preempted":
        parts.append(
            sec(
                f"ev-blocked-{e['blocked']}",
                {"waiting": join_names(e["waiting_left"]), "max_num_seqs": r.params.max_num_seqs},
            )
        )
    pick = sec("ev-pick", {"running_text": running, "waiting_text": " ".join(parts)})
    sampled = (
        sec("ev-sampled", {"sampled": join_names(e["sampled"])})
        if e["sampled"]
        else sec("ev-sampled-none")
    )
    mid = " " + sec("ev-mid", {"mid": join_names(e["mid_prompt"])}) if e["mid_prompt"] else ""
    sample = sec("ev-sample", {"sampled_text": sampled, "mid_text": mid})
    finished = (
        " " + sec("ev-finished", {**e, "finished": join_names(e["finished"])})
        if e["finished"]
        else ""
    )
    kv = sec("ev-kv", {**e, "finished_text": finished})
    return "\n\n".join([lists, pick, sec("ev-pass", e), sample, kv])
