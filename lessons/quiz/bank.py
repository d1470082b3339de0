"""Question banks: one TOML file per lesson, loaded and checked into frozen dataclasses.

A bank file has `lesson = "id"` and `[[question]]` tables with id, prompt, choices, answer (the
index of the correct choice, 0-based), explanation and optionally xp (default 10). Learners see
the choices shuffled (`Question.shown_choices`); answers are graded by text, not position.
Loading fails loudly on a malformed bank (duplicate ids, an answer out of range), so a typo is
caught by the tests rather than by a learner.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

XP_PER_QUESTION = 10


@dataclass(frozen=True)
class Question:
    """One multiple-choice question."""

    id: str
    prompt: str
    choices: tuple[str, ...]
    answer: int
    explanation: str
    xp: int = XP_PER_QUESTION

    @property
    def correct_choice(self) -> str:
        return self.choices[self.answer]

    @property
    def shown_choices(self) -> tuple[str, ...]:
        """The choices in the order a learner sees them: shuffled with the question's id as the
        seed, so the right answer's place in the list gives nothing away (a bank tends to list
        it first or second) and stays put from one rerun or session to the next."""
        order = list(self.choices)
        random.Random(f"choices:{self.id}").shuffle(order)
        return tuple(order)


@dataclass(frozen=True)
class Bank:
    """The questions of one lesson, in order."""

    lesson: str
    questions: tuple[Question, ...]

    def question(self, question_id: str) -> Question:
        for q in self.questions:
            if q.id == question_id:
                return q
        raise KeyError(f"no question {question_id!r} in lesson {self.lesson!r}")


class BankError(ValueError):
    """A question bank file is malformed."""


@cache
def load_bank(path: str | Path) -> Bank:
    """Read and validate one bank file."""
    path = Path(path)
    with path.open("rb") as fh:
        raw = tomllib.load(fh)
    lesson = raw.get("lesson")
    if not isinstance(lesson, str) or not lesson:
        raise BankError(f'{path}: needs a top-level lesson = "id"')
    questions = []
    for i, q in enumerate(raw.get("question", []), start=1):
        missing = {"id", "prompt", "choices", "answer", "explanation"} - set(q)
        if missing:
            raise BankError(f"{path}: question {i} lacks {sorted(missing)}")
        choices = tuple(str(c) for c in q["choices"])
        if len(choices) < 2 or len(set(choices)) != len(choices):
            raise BankError(f"{path}: question {q['id']} needs 2 or more distinct choices")
        if not isinstance(q["answer"], int) or not 0 <= q["answer"] < len(choices):
            raise BankError(f"{path}: question {q['id']} has answer out of range")
        questions.append(
            Question(
                id=str(q["id"]),
                prompt=str(q["prompt"]).strip(),
                choices=choices,
                answer=q["answer"],
                explanation=str(q["explanation"]).strip(),
                xp=int(q.get("xp", XP_PER_QUESTION)),
            )
        )
    ids = [q.id for q in questions]
    if len(set(ids)) != len(ids):
        raise BankError(f"{path}: duplicate question ids")
    if not questions:
        raise BankError(f"{path}: no questions")
    return Bank(lesson=lesson, questions=tuple(questions))
