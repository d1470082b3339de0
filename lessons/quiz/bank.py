"""Question banks: one TOML file per lesson, loaded and checked into frozen dataclasses.

A bank file has `lesson = "id"` and `[[question]]` tables with id, prompt, choices, answer (the
index of the correct choice, 0-based), explanation and optionally xp (default 10). Learners see
the choices shuffled (`Question.shown_choices`); answers are graded by text, not position.
Loading fails loudly on a malformed bank (duplicate ids, an answer out of range), so a typo is
caught by the tests rather than by a learner.

A question with `computed = "name"` is a predict-then-reveal question about a simulated run: its
choices and answer come from the run, not from the file. The file gives the prompt and the
explanation as templates; the lesson's predict.py fills them (`Question.resolved`) and the
course hands out the filled bank (lessons/course.py), so grading stays by text as for any
question.
"""

from __future__ import annotations

import dataclasses
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
    computed: str = ""  # predict-then-reveal: the lesson's predict.py fills choices and answer

    def resolved(self, choices: tuple[str, ...], answer: int, values: dict) -> Question:
        """This computed question with its choices, answer and filled templates."""
        if len(choices) < 2 or len(set(choices)) != len(choices) or not 0 <= answer < len(choices):
            raise BankError(
                f"question {self.id}: computed choices must be distinct, answer in range"
            )
        return Question(
            id=self.id,
            prompt=self.prompt.format_map(values),
            choices=tuple(choices),
            answer=answer,
            explanation=self.explanation.format_map(values),
            xp=self.xp,
            computed=self.computed,
        )

    @property
    def correct_choice(self) -> str:
        return self.choices[self.answer]

    @property
    def shown_choices(self) -> tuple[str, ...]:
        """The choices in the order a learner sees them: shuffled with the question's id and its
        choices as the seed, so the right answer's place in the list gives nothing away (a bank
        tends to list it first or second, and a computed question always lists it first) and
        stays put from one rerun or session to the next."""
        order = list(self.choices)
        random.Random("\n".join(("choices", self.id, *self.choices))).shuffle(order)
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

    def filled(self, choices: dict[str, tuple[str, ...]], values: dict) -> Bank:
        """This bank with each computed question resolved: `choices[q.computed]` (the right
        answer first) and its templates filled from `values`; an unknown name is a KeyError."""
        out = []
        for q in self.questions:
            if q.computed:
                if q.computed not in choices:
                    raise KeyError(f"no computed question {q.computed!r}")
                q = q.resolved(choices[q.computed], 0, values)
            out.append(q)
        return dataclasses.replace(self, questions=tuple(out))


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
        if "computed" in q:
            missing = {"id", "prompt", "explanation"} - set(q)
            if missing or "choices" in q or "answer" in q:
                raise BankError(
                    f"{path}: computed question {i} needs id, prompt and explanation, and no "
                    "choices or answer (the run gives them)"
                )
            questions.append(
                Question(
                    id=str(q["id"]),
                    prompt=str(q["prompt"]).strip(),
                    choices=(),
                    answer=-1,
                    explanation=str(q["explanation"]).strip(),
                    xp=int(q.get("xp", XP_PER_QUESTION)),
                    computed=str(q["computed"]),
                )
            )
            continue
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
