"""Lesson 5's exercises: the total throughput of a decode step, and the cap an ITL target allows.

Numbers are drawn from a seed (seed 0 is the lesson's opening setting: Llama-3.1-8B on an H100,
2,048 tokens of context). "throughput" runs the sequences through Stepwise's scheduler
(`sim.scheduler.run_steps`: one step reads all their prompts, the next has each decode one token)
and prices that decode step with the cost model; the answer is sequences x steps per second.
"pick" tabulates the cost model's steady decode steps (the lesson's own `lesson.decode_curves`)
and asks for the largest concurrency within a latency target. The KV cache is sized as the
lesson sizes it with vLLM's defaults for the GPU (`lesson.kv_capacity`). Draws are cached: the
quiz widget redraws an exercise on every rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from lessons.course import ROOT
from lessons.kit import limits
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from lessons.throughput_curve import lesson
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.kv import cdiv
from sim.run import Run
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = ROOT / "throughput_curve" / "text.md"
SETUPS = (
    ("H100-SXM", "Llama-3.1-8B"),
    ("A100-80GB", "Llama-3.1-8B"),
    ("L40S", "Mistral-7B-v0.3"),
    ("H200", "Qwen2.5-7B"),
    ("H100-SXM", "Mistral-7B-v0.3"),
)
CONTEXTS = (512, 1024, 2048, 4096, 8192)
SEQS = (8, 16, 32, 48, 64, 96, 128, 192, 256)
TABLE_N = (8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class Draw:
    """One draw: where it runs, how many sequences, how much context each holds."""

    gpu: str
    model: str
    n: int
    context: int


def kv_capacity(gpu: str, model: str, context: int) -> int:
    """How many sequences of `context` tokens the GPU's KV pool holds with vLLM's defaults."""
    budget, _ = limits.effective(gpu, True, 0, 0)
    return lesson.kv_capacity(Deployment(gpu=gpu, model=model), context, budget)


def draw_setting(seed: int) -> Draw:
    """Seed 0: the lesson's opening setting with 64 sequences; other seeds: random.

    Every draw fits: the sequences' KV cache fits the GPU's pool, with room for at least 64
    sequences (so the "pick" table has four rows or more).
    """
    if seed == 0:
        return Draw("H100-SXM", "Llama-3.1-8B", 64, 2048)
    rng = np.random.default_rng(seed)
    gpu, model = SETUPS[int(rng.integers(len(SETUPS)))]
    contexts = [c for c in CONTEXTS if kv_capacity(gpu, model, c) >= 64]
    context = int(rng.choice(contexts))
    cap = kv_capacity(gpu, model, context)
    n = int(rng.choice([s for s in SEQS if s <= cap]))
    return Draw(gpu, model, n, context)


def decode_run(d: Draw) -> Run:
    """`n` requests of `context`-token prompts: step 1 reads every prompt, step 2 decodes them."""
    block = SchedulerConfig.block_size  # the config's default block size
    config = SchedulerConfig(
        max_num_batched_tokens=d.n * d.context,
        max_num_seqs=d.n,
        max_model_len=d.context + 8,
        num_gpu_blocks=d.n * cdiv(d.context + 2, block) + 8,
        block_size=block,
    )
    workload = Workload.build([d.context] * d.n, [2] * d.n, arrival_step=[1] * d.n)
    return run_steps(config, workload)


@cache
def solve_throughput(seed: int) -> dict:
    """The decode step of the draw, from the scheduler, priced by the cost model."""
    d = draw_setting(seed)
    run = decode_run(d)
    k = 1  # step 2: every sequence decodes its first output token
    ms = step_costs(
        Deployment(gpu=d.gpu, model=d.model),
        query_tokens=run.num_scheduled_tokens[k : k + 1],
        num_seqs=run.num_scheduled_seqs[k : k + 1],
        kv_read_tokens=run.kv_read_tokens[k : k + 1],
        attn_pairs=run.attn_pairs[k : k + 1],
    ).step_ms
    step_ms = float(ms[0])
    return {
        "draw": d,
        "step_ms": step_ms,
        "answer": d.n * 1e3 / step_ms,
        "scheduled_seqs": int(run.num_scheduled_seqs[k]),
        "scheduled_tokens": int(run.num_scheduled_tokens[k]),
    }


@cache
def solve_pick(seed: int) -> dict:
    """A latency target between two rows of the table, and the largest row within it."""
    d = draw_setting(seed)
    c = lesson.decode_curves(d.gpu, d.model, 1, "bf16", d.context)
    cap = kv_capacity(d.gpu, d.model, d.context)
    rows = tuple(n for n in TABLE_N if n <= cap)  # only what the KV cache can hold
    table_ms = np.array([c.step_ms[n - 1] for n in rows])
    rng = np.random.default_rng(seed + 1)
    j = 3 if seed == 0 else int(rng.integers(1, len(rows) - 1))
    target = int(np.floor(table_ms[j] + 0.5 * (table_ms[j + 1] - table_ms[j])))
    target = max(target, int(np.ceil(table_ms[j])))
    # Judge by the times as the table shows them (0.1 ms), so what the learner reads decides.
    within = np.flatnonzero(np.round(table_ms, 1) <= target)
    answer = int(rows[within[-1]]) if within.size else 0
    return {"draw": d, "rows": rows, "table_ms": table_ms, "target": target, "answer": answer}


def _throughput(seed: int) -> Drawn:
    r = solve_throughput(seed)
    d = r["draw"]
    v = {
        "gpu": d.gpu,
        "model": d.model,
        "n": d.n,
        "context": d.context,
        "step_ms": r["step_ms"],
        "steps_per_s": 1e3 / r["step_ms"],
        "answer": r["answer"],
    }
    params = {"gpu": d.gpu, "model": d.model, "n": d.n, "context": d.context}
    return Drawn.from_text(TEXT, "throughput", v, r["answer"], "tokens/s", params=params)


def _pick(seed: int) -> Drawn:
    r = solve_pick(seed)
    d = r["draw"]
    rows = r["rows"]
    lines = "\n".join(f"| {n:,} | {ms:.1f} |" for n, ms in zip(rows, r["table_ms"], strict=True))
    table = section(TEXT, "exercise-pick-table-head") + "\n" + lines
    i = rows.index(r["answer"]) if r["answer"] else -1
    nxt = ""
    if 0 <= i < len(rows) - 1:
        after = {"n": rows[i + 1], "ms": r["table_ms"][i + 1]}
        nxt = section(TEXT, "exercise-pick-next", after)
    v = {
        "gpu": d.gpu,
        "model": d.model,
        "context": d.context,
        "table": table,
        "target": r["target"],
        "answer": r["answer"],
        "answer_ms": float(r["table_ms"][i]) if i >= 0 else float("nan"),
        "next_note": nxt,
    }
    params = {"gpu": d.gpu, "model": d.model, "context": d.context, "target": r["target"]}
    return Drawn.from_text(
        TEXT, "pick", v, r["answer"], "sequences", rtol=0.0, atol=0.5, params=params
    )


EXERCISES = [
    ExerciseSpec(id="throughput", title="Tokens per second from one step", draw=_throughput),
    ExerciseSpec(id="pick", title="The cap a latency target allows", draw=_pick),
]
