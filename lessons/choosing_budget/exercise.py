"""Lesson 4's exercise: a long prompt arrives while users decode; chunk size, steps, first token.

The numbers (budget, running decodes, prompt length) are drawn from a seed; seed 0 is the worked
example of the course (4,096 tokens, 128 decodes, a 20,000-token prompt), built exactly like
vLLM's recording of it (tests/data/exercise.json). Every answer comes from running the scenario
through Stepwise's scheduler (`sim.scheduler.run_steps`) and timing its steps with the cost model
(`sim.cost.step_costs`), never from the formula the solution explains. Draws are cached, because
the quiz widget redraws the exercise on every rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.run import Run
from sim.scheduler import run_steps
from sim.workload import Workload

TEXT = ROOT / "choosing_budget" / "text.md"
GPU = "H100-SXM"
MODEL = "Llama-3.1-8B"
DECODE_PROMPT = 16  # the running users' prompts, as in vLLM's recording
BUDGETS = (1024, 2048, 3072, 4096, 6144, 8192)
DECODES = (16, 32, 48, 64, 96, 128, 192, 255)
MAX_NUM_SEQS = 256
MAX_MODEL_LEN = 32_768


@dataclass(frozen=True)
class Scenario:
    """One draw: the budget, the running decodes and the long prompt."""

    budget: int
    decodes: int
    prompt: int


def scenario(seed: int) -> Scenario:
    """Seed 0: the worked example; other seeds: a random budget, decode count and prompt."""
    if seed == 0:
        return Scenario(4096, 128, 20_000)
    rng = np.random.default_rng(seed)
    budget = int(rng.choice(BUDGETS))
    decodes = int(rng.choice([d for d in DECODES if d < budget // 2]))
    room = budget - decodes
    prompt = int(rng.integers(max(2 * room // 100 + 1, 20), 300)) * 100  # two chunks or more
    return Scenario(budget, decodes, prompt)


def setup(s: Scenario) -> tuple[SchedulerConfig, Workload, int]:
    """The scheduler configuration and workload of a draw, and the long prompt's arrival step.

    `decodes` short requests arrive at step 1 and are all decoding before the long prompt
    arrives; their outputs are long enough to keep them running until it is read in.
    """
    arrive = -(-s.decodes * DECODE_PROMPT // (s.budget - s.decodes)) + 2
    steps = -(-s.prompt // (s.budget - s.decodes))
    decode_out = 100 if s == Scenario(4096, 128, 20_000) else arrive + steps + 8
    prompts = [DECODE_PROMPT] * s.decodes + [s.prompt]
    outputs = [decode_out] * s.decodes + [4]
    arrivals = [1] * s.decodes + [arrive]
    blocks = (s.decodes * (DECODE_PROMPT + decode_out) + s.prompt + 16) // 16 + s.decodes + 64
    config = SchedulerConfig(
        max_num_batched_tokens=s.budget,
        max_num_seqs=MAX_NUM_SEQS,
        max_model_len=MAX_MODEL_LEN,
        num_gpu_blocks=max(blocks, 4000),
    )
    ids = [f"d{i}" for i in range(s.decodes)] + ["long"]
    workload = Workload.build(prompts, outputs, arrival_step=arrivals, request_ids=ids)
    return config, workload, arrive


def step_ms(run: Run) -> np.ndarray:
    """Every step of a run priced by the cost model (the exercise's GPU and model)."""
    costs = step_costs(
        Deployment(gpu=GPU, model=MODEL),
        query_tokens=run.num_scheduled_tokens,
        num_seqs=run.num_scheduled_seqs,
        kv_read_tokens=run.kv_read_tokens,
        attn_pairs=run.attn_pairs,
    )
    return np.asarray(costs.step_ms, dtype=np.float64)


@cache
def solve(seed: int) -> dict:
    """Run the draw through the scheduler and the cost model; return every answer."""
    s = scenario(seed)
    config, workload, arrive = setup(s)
    run = run_steps(config, workload, record_detail=True)
    long = workload.num_requests - 1
    first = int(run.first_scheduled_step[long])
    last = int(run.first_token_step[long])
    chunks = []
    for d in run.detail[first - 1 : last]:
        hit = np.flatnonzero(d.scheduled_req == long)
        chunks.append(int(d.scheduled_tokens[hit[0]]) if hit.size else 0)
    ms = step_ms(run)[first - 1 : last]
    return {
        "scenario": s,
        "arrive": arrive,
        "first_step": first,
        "chunks": chunks,
        "chunk": chunks[0],
        "steps": last - first + 1,
        "ttft_ms": float(ms.sum()),
        "mean_ms": float(ms.mean()),
    }


def _values(seed: int) -> dict:
    r = solve(seed)
    s = r["scenario"]
    full = sum(1 for c in r["chunks"] if c == r["chunk"])
    rest = r["chunks"][-1]
    if full == len(r["chunks"]):
        split = f"{full} × {r['chunk']:,}"
    else:
        split = f"{full} × {r['chunk']:,} + {rest:,}"
    values = {
        "budget": s.budget,
        "decodes": s.decodes,
        "prompt": s.prompt,
        "gpu": GPU,
        "model": MODEL,
        "chunk": r["chunk"],
        "steps": r["steps"],
        "ratio": s.prompt / r["chunk"],
        "split": split,
        "mean_ms": r["mean_ms"],
        "ttft_ms": r["ttft_ms"],
    }
    values["setup"] = section(TEXT, "exercise-setup", values)
    return values


def _draw(kind: str, answer_key: str, unit: str, rtol: float, atol: float):
    def draw(seed: int) -> Drawn:
        v = _values(seed)
        return Drawn(
            prompt=section(TEXT, f"exercise-{kind}", v),
            answer=float(v[answer_key]),
            unit=unit,
            solution=section(TEXT, "exercise-solution", v),
            rtol=rtol,
            atol=atol,
            params={"budget": v["budget"], "decodes": v["decodes"], "prompt": v["prompt"]},
        )

    return draw


EXERCISES = [
    ExerciseSpec(
        id="chunk",
        title="The chunk size",
        draw=_draw("chunk", "chunk", "tokens", 0.0, 0.5),
    ),
    ExerciseSpec(
        id="steps",
        title="Steps to read the prompt in",
        draw=_draw("steps", "steps", "steps", 0.0, 0.5),
    ),
    ExerciseSpec(
        id="ttft",
        title="Time to the first token",
        draw=_draw("ttft", "ttft_ms", "ms", 0.03, 0.0),
    ),
]
