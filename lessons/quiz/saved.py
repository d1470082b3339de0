"""Saving a learner's progress to a file and loading it back, so a reload loses nothing.

XP lives in the browser session; the Progress page offers the session as a small JSON file and
takes such a file back. The file lists the awards earned (and the first-try record the perfect-
quiz rule reads); XP is recomputed from the awards against the current quiz banks, so a file
cannot carry XP the course does not give, and awards for questions that no longer exist are
dropped (and counted). Loading merges: nothing already earned in the session is lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from lessons.quiz.bank import Bank
from lessons.quiz.exercise import ExerciseSpec
from lessons.quiz.progress import XP_LESSON_DONE, XP_PERFECT_QUIZ, Progress

FORMAT = "stepwise-progress"
VERSION = 1
MAX_BYTES = 1_000_000


class ProgressFileError(ValueError):
    """A progress file that cannot be read; the message says why, in one line."""


def award_values(course: Iterable[tuple[Bank, tuple[ExerciseSpec, ...]]]) -> dict[str, int]:
    """Every award the course can give, with its XP: questions, exercises and bonuses."""
    values: dict[str, int] = {}
    for bank, exercises in course:
        for q in bank.questions:
            values[Progress.question_key(bank.lesson, q.id)] = q.xp
        for e in exercises:
            values[Progress.exercise_key(bank.lesson, e.id)] = e.xp
        values[Progress.perfect_key(bank.lesson)] = XP_PERFECT_QUIZ
        values[Progress.lesson_key(bank.lesson)] = XP_LESSON_DONE
    return values


def dump(progress: Progress) -> bytes:
    """The progress as a JSON file (awards and first-try records; feedback is not kept)."""
    body = {
        "format": FORMAT,
        "version": VERSION,
        "xp": progress.xp,
        "awarded": sorted(progress.awarded),
        "tries": {k: list(v) for k, v in sorted(progress.tries.items())},
    }
    return json.dumps(body, indent=1).encode("utf-8")


def load(data: bytes, values: dict[str, int]) -> tuple[Progress, int]:
    """Read a progress file. Returns the progress and how many unknown awards were dropped."""
    if len(data) > MAX_BYTES:
        raise ProgressFileError(f"the file is {len(data):,} bytes; a progress file is far smaller")
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ProgressFileError("the file is not a Stepwise progress file (not JSON)") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ProgressFileError("the file is not a Stepwise progress file")
    if body.get("version") != VERSION:
        raise ProgressFileError(
            f"the file has version {body.get('version')!r}; this app reads version {VERSION}"
        )
    awarded, tries = body.get("awarded"), body.get("tries", {})
    if not isinstance(awarded, list) or not all(isinstance(a, str) for a in awarded):
        raise ProgressFileError("the file's list of awards is damaged")
    if not isinstance(tries, dict) or not all(
        isinstance(v, list) and v and all(isinstance(b, bool) for b in v) for v in tries.values()
    ):
        raise ProgressFileError("the file's answer history is damaged")
    known = {a for a in awarded if a in values}
    progress = Progress(
        xp=sum(values[a] for a in known),
        awarded=known,
        tries={k: list(v) for k, v in tries.items() if k in values},
    )
    return progress, len(set(awarded) - known)


def merge(
    into: Progress,
    loaded: Progress,
    values: dict[str, int],
    course: Iterable[tuple[Bank, tuple[ExerciseSpec, ...]]] = (),
) -> int:
    """Add the loaded awards to a session's progress; returns the XP gained.

    With `course`, the perfect-quiz and lesson bonuses are checked again, since the two halves
    of a lesson may have been done in different sessions.
    """
    before = into.xp
    into.awarded |= loaded.awarded
    for key, record in loaded.tries.items():
        into.tries.setdefault(key, list(record))
    into.xp = sum(values.get(a, 0) for a in into.awarded)
    for bank, exercises in course:
        into.recheck_bonuses(bank, exercises)
    return into.xp - before
