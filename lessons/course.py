"""The course catalog: which lessons exist, in what order, and where their parts live."""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from lessons.quiz.bank import Bank, load_bank
from lessons.quiz.exercise import ExerciseSpec

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Lesson:
    """One entry of course.toml."""

    id: str
    title: str
    short: str  # where space is tight: the navigation and Practice's tabs
    summary: str
    page: str
    url: str
    icon: str

    @property
    def folder(self) -> Path:
        return ROOT / self.id

    @property
    def text_path(self) -> Path:
        return self.folder / "text.md"

    @property
    def prefix(self) -> str:
        """The lesson's key prefix: its widgets' and its link keys' (lessons/<id>/lesson.py)."""
        return importlib.import_module(f"lessons.{self.id}.lesson").PREFIX

    def bank(self, fill: bool = True) -> Bank:
        """The lesson's questions; predict-then-reveal ones filled from its run (`filled`).

        `fill=False` leaves them unfilled (no choices): their ids and XP are known without the
        run, which takes seconds for the lessons that simulate streams of requests."""
        bank = load_bank(self.folder / "quiz.toml")
        if not fill or not any(q.computed for q in bank.questions):
            return bank
        return filled(bank)

    def exercises(self) -> tuple[ExerciseSpec, ...]:
        module = importlib.import_module(f"lessons.{self.id}.exercise")
        return tuple(module.EXERCISES)


@cache
def filled(bank: Bank) -> Bank:
    """A bank with its predict-then-reveal questions filled from its lesson's opening run:
    lessons/<id>/predict.py's `answers()` gives the facts, and its `CHOICES` names, for each
    computed question, the fact that holds that question's choices (the right one first)."""
    module = importlib.import_module(f"lessons.{bank.lesson}.predict")
    facts = module.answers()
    return bank.filled({question: facts[key] for question, key in module.CHOICES.items()}, facts)


@cache
def lessons() -> tuple[Lesson, ...]:
    """Every lesson, in course order."""
    with (ROOT / "course.toml").open("rb") as fh:
        raw = tomllib.load(fh)
    return tuple(Lesson(**entry) for entry in raw["lesson"])


def lesson(lesson_id: str) -> Lesson:
    """One lesson by id (KeyError if unknown)."""
    for item in lessons():
        if item.id == lesson_id:
            return item
    raise KeyError(lesson_id)


SITE_TEXT = ROOT / "site.md"
