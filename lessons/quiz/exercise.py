"""Parameterized numeric exercises: numbers are drawn from a seed, the answer is computed by sim.

A lesson's `exercise.py` lists `ExerciseSpec`s. `spec.draw(seed)` returns a `Drawn` exercise:
the prompt with its numbers, the answer computed by the simulator, a tolerance and a worked
solution. Seed 0 is the lesson's default draw (for example the seed text's own numbers), so an
instructor and a class see the same question.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lessons.text import section

XP_PER_EXERCISE = 10
ANSWER_DECIMALS = 2  # the answer box shows and takes this many decimals


@dataclass(frozen=True)
class Drawn:
    """One drawn instance of an exercise."""

    prompt: str
    answer: float
    unit: str
    solution: str
    rtol: float = 0.02
    atol: float = 0.0
    params: dict = field(default_factory=dict)

    @classmethod
    def from_text(
        cls,
        text: Path,
        name: str,
        values: dict,
        answer: float,
        unit: str,
        *,
        rtol: float = 0.02,
        atol: float = 0.0,
        params: dict | None = None,
    ) -> Drawn:
        """An instance whose prompt and solution are the sections `exercise-<name>-prompt` and
        `exercise-<name>-solution` of a lesson's `text`, filled from `values`."""
        return cls(
            prompt=section(text, f"exercise-{name}-prompt", values),
            answer=float(answer),
            unit=unit,
            solution=section(text, f"exercise-{name}-solution", values),
            rtol=rtol,
            atol=atol,
            params=params or {},
        )

    def is_correct(self, value: float | None) -> bool:
        """Within the tolerance of the computed answer: relative, absolute or half a unit of the
        answer box's last decimal (ANSWER_DECIMALS), whichever is largest, so that the answer
        rounded as the box shows it is always accepted."""
        if value is None or not math.isfinite(value):
            return False
        tol = max(self.atol, self.rtol * abs(self.answer), 0.5 * 10.0**-ANSWER_DECIMALS)
        return abs(value - self.answer) <= tol * (1 + 1e-9)


@dataclass(frozen=True)
class ExerciseSpec:
    """A named exercise and the function that draws an instance from a seed."""

    id: str
    title: str
    draw: Callable[[int], Drawn]
    xp: int = XP_PER_EXERCISE
