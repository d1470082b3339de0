"""Lesson 4's exercise: a long prompt arrives while users decode; when does its first token come?

The numbers (budget, running decodes, prompt length) are drawn from a seed; seed 0 is the worked
example of the course (4,096 tokens, 128 decodes, a 20,000-token prompt), which is also the
lab's opening scene. The scene is the lab's own (`lesson.scenario`, imported as `lab_scene`:
each user holds about `lesson.CONTEXT` tokens of conversation when the prompt arrives), run on
the lab's GPU and model by the lab's own timed run (`lesson.lane`), so seed 0's answer is the
number the lab shows. Its chunks are those of vLLM's recording of the worked example
(tests/data/exercise.json), where the users had streamed less: how long they have streamed
changes the step times, not the chunks. The answer is read off the run with sim.metrics, never
from the formula the solution explains. Draws are cached (lesson.lane), because the quiz widget
redraws the exercise on every rerun.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from lessons.choosing_budget.lesson import CONTEXT, Params, lane, lane_config
from lessons.choosing_budget.lesson import scenario as lab_scene
from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from sim.config import SchedulerConfig
from sim.workload import Workload

TEXT = ROOT / "choosing_budget" / "text.md"
GPU = Params.gpu  # the lab's opening GPU and model
MODEL = Params.model
BUDGETS = (1024, 2048, 3072, 4096, 6144, 8192)
DECODES = (16, 32, 48, 64, 96, 128, 192, 255)
WORKED = (4096, 128, 20_000)


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


def setup(s: Scenario) -> tuple[SchedulerConfig, Workload, int]:
    """The scheduler configuration and workload of a draw (the lab's), and the long prompt's
    arrival step."""
    scene = lab_scene(s.decodes, s.prompt, s.budget)
    config = lane_config(GPU, MODEL, s.decodes, s.prompt, s.budget)
    ids = [f"d{i}" for i in range(s.decodes)] + ["long"]
    return config, scene.workload(request_ids=ids), scene.arrival()


@cache
def solve(seed: int) -> dict:
    """The draw's timed run (the lab's lane): every answer and the numbers the text quotes."""
    s = scenario(seed)
    run = lane(GPU, MODEL, s.decodes, s.prompt, s.budget)
    steps = run.steps
    return {
        "scenario": s,
        "chunks": run.chunks.tolist(),
        "chunk": int(run.chunks[0]),
        "steps": steps,
        "ttft_ms": run.ttft_ms,
        "mean_ms": float(np.mean(run.end_ms[:steps] - run.start_ms[:steps])),
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
        "context": CONTEXT,
        "gpu": GPU,
        "model": MODEL,
        "chunk": r["chunk"],
        "steps": r["steps"],
        "ratio": s.prompt / r["chunk"],
        "split": split,
        "mean_ms": r["mean_ms"],
        "ttft_ms": r["ttft_ms"],
        "ttft_s": r["ttft_ms"] / 1e3,
    }
    values["setup"] = section(TEXT, "exercise-setup", values)
    values["lab"] = section(TEXT, "exercise-lab", values) if s == Scenario(*WORKED) else ""
    return values


def draw_ttft(seed: int) -> Drawn:
    """The prompt's time to first token, from the mean time of the steps that read it."""
    v = _values(seed)
    params = {"budget": v["budget"], "decodes": v["decodes"], "prompt": v["prompt"]}
    return Drawn.from_text(TEXT, "ttft", v, v["ttft_ms"], "ms", rtol=0.03, params=params)


EXERCISES = [
    ExerciseSpec(id="ttft", title="Time to the first token", draw=draw_ttft),
]
