"""Lesson 4's exercise: a long prompt arrives while users decode; chunk size, steps, first token.

The numbers (budget, running decodes, prompt length) are drawn from a seed; seed 0 is the worked
example of the course (4,096 tokens, 128 decodes, a 20,000-token prompt), built exactly like
vLLM's recording of it (tests/data/exercise.json). The workload is the course's shared scene
(`sim.scenarios.stream_then_prompt`, the lesson's too), and every answer comes from a timed run
of it through Stepwise's scheduler (`sim.scenarios.timed_run`, on the clock of sim.timed) read
with sim.metrics, never from the formula the solution explains. Draws are cached, because the
quiz widget redraws the exercise on every rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from sim import metrics
from sim.config import SchedulerConfig
from sim.cost import Deployment
from sim.scenarios import StreamThenPrompt, stream_then_prompt, timed_run
from sim.workload import Workload

TEXT = ROOT / "choosing_budget" / "text.md"
GPU = "H100-SXM"
MODEL = "Llama-3.1-8B"
DECODE_PROMPT = 16  # the running users' prompts, as in vLLM's recording
BUDGETS = (1024, 2048, 3072, 4096, 6144, 8192)
DECODES = (16, 32, 48, 64, 96, 128, 192, 255)
MAX_NUM_SEQS = 256
MAX_MODEL_LEN = 32_768
BLOCK_SIZE = SchedulerConfig.block_size
WORKED = (4096, 128, 20_000)
WORKED_USER_OUTPUT = 100  # the running users' output length in vLLM's recording


@dataclass(frozen=True)
class Scenario:
    """One draw: the budget, the running decodes and the long prompt."""

    budget: int
    decodes: int
    prompt: int


def scenario(seed: int) -> Scenario:
    """Seed 0: the worked example; other seeds: a random budget, decode count and prompt."""
    if seed == 0:
        return Scenario(*WORKED)
    rng = np.random.default_rng(seed)
    budget = int(rng.choice(BUDGETS))
    decodes = int(rng.choice([d for d in DECODES if d < budget // 2]))
    room = budget - decodes
    prompt = int(rng.integers(max(2 * room // 100 + 1, 20), 300)) * 100  # two chunks or more
    return Scenario(budget, decodes, prompt)


def scene(s: Scenario) -> StreamThenPrompt:
    """The draw as the shared scene: `decodes` short requests arrive at step 1 and are all
    decoding before the long prompt arrives (at the step vLLM's recording has for seed 0); their
    outputs are long enough to keep them running until it is read in."""
    arrive = -(-s.decodes * DECODE_PROMPT // (s.budget - s.decodes)) + 2
    worked = s == Scenario(*WORKED)
    return stream_then_prompt(
        s.decodes,
        DECODE_PROMPT,
        s.prompt,
        s.budget,
        arrival_step=arrive,
        user_output_tokens=WORKED_USER_OUTPUT if worked else None,
    )


def setup(s: Scenario) -> tuple[SchedulerConfig, Workload, int]:
    """The scheduler configuration and workload of a draw, and the long prompt's arrival step."""
    st = scene(s)
    blocks = (s.decodes * (DECODE_PROMPT + st.outputs()) + s.prompt + 16) // BLOCK_SIZE
    config = SchedulerConfig(
        max_num_batched_tokens=s.budget,
        max_num_seqs=MAX_NUM_SEQS,
        max_model_len=MAX_MODEL_LEN,
        num_gpu_blocks=max(blocks + s.decodes + 64, 4000),
        block_size=BLOCK_SIZE,
    )
    ids = [f"d{i}" for i in range(s.decodes)] + ["long"]
    return config, st.workload(request_ids=ids), st.arrival()


@cache
def solve(seed: int) -> dict:
    """Run the draw through the scheduler on the cost model's clock; return every answer."""
    s = scenario(seed)
    config, workload, arrive = setup(s)
    st = scene(s)
    run = timed_run(st, config, Deployment(gpu=GPU, model=MODEL), record_detail=True)
    long = st.long_index
    first = int(run.first_scheduled_step[long])
    last = int(run.first_token_step[long])
    chunks = []
    for d in run.detail[first - 1 : last]:
        hit = np.flatnonzero(d.scheduled_req == long)
        chunks.append(int(d.scheduled_tokens[hit[0]]) if hit.size else 0)
    ttft_ms = float(metrics.request_metrics(run).ttft_ms[long])
    return {
        "scenario": s,
        "arrive": arrive,
        "first_step": first,
        "chunks": chunks,
        "chunk": chunks[0],
        "steps": last - first + 1,
        "ttft_ms": ttft_ms,
        "mean_ms": float(np.mean(run.step_ms[first - 1 : last])),
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
