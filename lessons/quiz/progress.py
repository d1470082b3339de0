"""XP and progress rules: a pure function from a learner's answer log to what the learner earned.

A learner's work is an append-only log of answers (lessons/quiz/store.py keeps it). Nothing else
is stored: XP, awards and finished lessons are derived here from the log and the current quiz
banks, so they can never exceed what the course contains, and two browser tabs answering at once
cannot overwrite each other (each answer is one more row, never a read-modify-write).

Rules (the Progress page and lessons/site.md quote them from the constants below):
- a question pays its XP (+10) only if the learner's FIRST answer to it was right; later answers
  are recorded and show the explanation, but earn nothing;
- +25 for a perfect quiz: every question of the lesson right at the first answer;
- an exercise pays +10 the first time it is solved (any draw, after any number of tries);
- +50 for finishing a lesson: every question answered (right or wrong) and every exercise solved.
  "Answered" rather than "right" keeps the rule above exact: a second answer earns nothing,
  not even a bonus.

"First" means first in the log's order (the store's sequence number), never a timestamp, so
answers imported from a file come after the answers already in the log and cannot claim to be
earlier. A question is re-graded against the current bank by the text of the chosen answer; a
choice the bank no longer has counts as no answer at all, as does an answer to a question or
exercise that is no longer in the course.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lessons.quiz.bank import XP_PER_QUESTION, Bank
from lessons.quiz.exercise import XP_PER_EXERCISE, Drawn, ExerciseSpec

XP_PERFECT_QUIZ = 25
XP_LESSON_DONE = 50
XP_RULES = {
    "xp_question": XP_PER_QUESTION,
    "xp_perfect": XP_PERFECT_QUIZ,
    "xp_exercise": XP_PER_EXERCISE,
    "xp_lesson": XP_LESSON_DONE,
}

Course = Sequence[tuple[Bank, Sequence[ExerciseSpec]]]
"""What derivation reads: each lesson's bank and exercise specs, in course order."""


def question_key(lesson: str, question_id: str) -> str:
    return f"q:{lesson}:{question_id}"


def exercise_key(lesson: str, exercise_id: str) -> str:
    return f"ex:{lesson}:{exercise_id}"


def perfect_key(lesson: str) -> str:
    return f"perfect:{lesson}"


def lesson_key(lesson: str) -> str:
    return f"lesson:{lesson}"


@dataclass(frozen=True, slots=True)
class Answer:
    """One row of the answer log: a question's chosen text, or an exercise's seed and value.

    `correct` is the grade given when the answer was recorded; `seq` is the log's order (set by
    the store, None before the answer is written); `at` is the wall-clock time, for people only.
    """

    item: str
    correct: bool
    choice: str | None = None
    seed: int | None = None
    value: float | None = None
    at: float = 0.0
    seq: int | None = None

    @property
    def kind(self) -> str:
        return self.item.split(":", 1)[0]


def grade_question(bank: Bank, question_id: str, choice: str, at: float | None = None) -> Answer:
    """The log row for choosing `choice` (graded by text against the bank)."""
    q = bank.question(question_id)
    return Answer(
        item=question_key(bank.lesson, q.id),
        correct=choice == q.correct_choice,
        choice=choice,
        at=time.time() if at is None else at,
    )


def grade_exercise(
    lesson: str,
    spec: ExerciseSpec,
    seed: int,
    value: float | None,
    at: float | None = None,
    drawn: Drawn | None = None,
) -> Answer:
    """The log row for answering `value` to the exercise drawn from `seed` (`drawn`: that draw,
    if the caller has it already)."""
    drawn = spec.draw(seed) if drawn is None else drawn
    return Answer(
        item=exercise_key(lesson, spec.id),
        correct=drawn.is_correct(value),
        seed=seed,
        value=value,
        at=time.time() if at is None else at,
    )


@dataclass(frozen=True)
class LessonStatus:
    """Counts for one lesson, as the Progress page and the sidebar show them."""

    questions: int
    answered: int
    first_right: int
    exercises: int
    solved: int
    perfect: bool
    finished: bool
    xp: int


@dataclass(frozen=True)
class Feedback:
    """What a learner sees after checking an answer."""

    correct: bool
    explanation: str
    xp_gained: int
    first: bool = (
        True  # the learner's first answer to this item (for questions: the one that counts)
    )


@dataclass(frozen=True)
class Progress:
    """A learner's standing, derived from the answer log (see `derive`); never edited in place."""

    xp: int = 0
    awarded: frozenset[str] = frozenset()
    first: Mapping[str, bool] = field(default_factory=dict)  # question key -> first answer right
    solved: frozenset[str] = frozenset()
    lessons: Mapping[str, LessonStatus] = field(default_factory=dict)
    log: tuple[Answer, ...] = ()  # the rows this was derived from, in log order

    @property
    def finished(self) -> int:
        return sum(status.finished for status in self.lessons.values())

    def lesson_status(self, lesson: str) -> LessonStatus:
        return self.lessons[lesson]

    # The award keys, reachable from the class as before.
    question_key = staticmethod(question_key)
    exercise_key = staticmethod(exercise_key)
    perfect_key = staticmethod(perfect_key)
    lesson_key = staticmethod(lesson_key)


def _in_order(log: Iterable[Answer]) -> list[Answer]:
    rows = list(log)
    if all(r.seq is not None for r in rows):
        rows.sort(key=lambda r: r.seq)
    return rows  # rows not yet written keep the order they were given in


def derive(log: Iterable[Answer], course: Course) -> Progress:
    """Everything a learner has earned, from the answer log and the current course.

    Pure and deterministic: the same log and course give the same result on any backend.
    """
    rows = tuple(_in_order(log))
    questions = {}  # key -> Question, for every question in the course
    exercises = set()
    for bank, specs in course:
        for q in bank.questions:
            questions[question_key(bank.lesson, q.id)] = q
        for spec in specs:
            exercises.add(exercise_key(bank.lesson, spec.id))

    first: dict[str, bool] = {}
    solved: set[str] = set()
    for row in rows:
        q = questions.get(row.item)
        if q is not None:
            if row.item not in first and row.choice in q.choices:
                first[row.item] = row.choice == q.correct_choice
        elif row.item in exercises and row.correct:
            solved.add(row.item)

    xp = 0
    awarded: set[str] = set()
    statuses: dict[str, LessonStatus] = {}
    for bank, specs in course:
        lesson_xp = 0
        keys = [question_key(bank.lesson, q.id) for q in bank.questions]
        for q, key in zip(bank.questions, keys, strict=True):
            if first.get(key):
                awarded.add(key)
                lesson_xp += q.xp
        ex_keys = [exercise_key(bank.lesson, spec.id) for spec in specs]
        for spec, key in zip(specs, ex_keys, strict=True):
            if key in solved:
                awarded.add(key)
                lesson_xp += spec.xp
        answered = sum(k in first for k in keys)
        first_right = sum(bool(first.get(k)) for k in keys)
        done = sum(k in solved for k in ex_keys)
        perfect = bool(keys) and first_right == len(keys)
        finished = bool(keys) and answered == len(keys) and done == len(ex_keys)
        if perfect:
            awarded.add(perfect_key(bank.lesson))
            lesson_xp += XP_PERFECT_QUIZ
        if finished:
            awarded.add(lesson_key(bank.lesson))
            lesson_xp += XP_LESSON_DONE
        statuses[bank.lesson] = LessonStatus(
            questions=len(keys),
            answered=answered,
            first_right=first_right,
            exercises=len(ex_keys),
            solved=done,
            perfect=perfect,
            finished=finished,
            xp=lesson_xp,
        )
        xp += lesson_xp
    return Progress(
        xp=xp,
        awarded=frozenset(awarded),
        first=first,
        solved=frozenset(solved),
        lessons=statuses,
        log=rows,
    )


def max_xp(course: Course) -> int:
    """The most XP the course can give (every award once)."""
    total = 0
    for bank, specs in course:
        total += sum(q.xp for q in bank.questions) + sum(s.xp for s in specs)
        total += XP_PERFECT_QUIZ + XP_LESSON_DONE
    return total


def feedback_for(
    answer: Answer, log: Sequence[Answer], course: Course, explanation: str
) -> Feedback:
    """The feedback for `answer`, which is already in `log`: what this one answer earned (the XP
    of the whole log minus the XP of the log without it), and whether it was the first."""
    rest = [row for row in log if row is not answer and (row.seq is None or row.seq != answer.seq)]
    gained = derive(log, course).xp - derive(rest, course).xp
    earlier = [
        row
        for row in rest
        if row.item == answer.item
        and (answer.seq is None or row.seq is None or row.seq < answer.seq)
    ]
    return Feedback(
        correct=answer.correct, explanation=explanation, xp_gained=gained, first=not earlier
    )
