"""A learner's answers as a file, and such a file read back: every answer re-graded, never trusted.

The Progress page offers the learner's answer log as a small JSON file (format version 2):

    {"format": "stepwise-progress", "version": 2, "xp": 120, "answers": [
        {"item": "q:step_loop:order", "choice": "...", "correct": true, "at": 1764582000.0},
        {"item": "ex:step_loop:blocks", "seed": 0, "value": 39.0, "correct": true, "at": ...}]}

Loading reads only the answers. "xp" and "correct" are there for a person reading the file;
the loader ignores them. Each question answer is graded again against the current bank: a
choice that is not one of the question's choices is dropped, and so is an answer to an item
the course no longer has. Each exercise answer is checked again with
`spec.draw(seed).is_correct(value)`. The answers that pass are appended to the learner's log,
after the answers already there, and XP is derived from the log as always. A file therefore
never gives more than its answers earn, nor more than the course contains.

A file that cannot be read (not JSON, another format, too big, nested too deep, the wrong shape,
version 1) is refused as a whole with a one-line reason that quotes nothing from the file.
Version 1 files held only "right or wrong" flags, which cannot be checked, so they are refused.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from lessons.quiz.exercise import ExerciseSpec
from lessons.quiz.progress import (
    Answer,
    Course,
    Progress,
    exercise_key,
    question_key,
)

FORMAT = "stepwise-progress"
VERSION = 2
MAX_BYTES = 1_000_000
MAX_ANSWERS = 5_000
MAX_DRAWS = 300  # distinct exercise draws to re-check (each runs the simulator for a few ms)
MAX_SEED = 2**31
MAX_TEXT = 2_000


class ProgressFileError(ValueError):
    """A progress file that cannot be read; the message says why, in one line."""


@dataclass(frozen=True)
class Loaded:
    """The answers of a file that passed the checks, re-graded, and how many were dropped."""

    answers: tuple[Answer, ...]
    dropped: int


def dump(log: Progress | Iterable[Answer]) -> bytes:
    """A learner's answers (a Progress or the log itself) as a version-2 progress file."""
    if isinstance(log, Progress):
        xp, rows = log.xp, log.log
    else:
        xp, rows = None, tuple(log)
    out = []
    for a in rows:
        entry: dict = {"item": a.item}
        if a.kind == "ex":
            entry["seed"] = a.seed
            entry["value"] = a.value
        else:
            entry["choice"] = a.choice
        entry["correct"] = a.correct
        entry["at"] = round(a.at, 3)
        out.append(entry)
    body: dict = {
        "format": FORMAT,
        "version": VERSION,
        "note": "XP is recomputed from the answers on loading; xp and correct are not read.",
    }
    if xp is not None:
        body["xp"] = xp
    body["answers"] = out
    return json.dumps(body, indent=1, ensure_ascii=False).encode("utf-8")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _parse(data: bytes) -> list[dict]:
    """The file's list of answer entries, after every structural check."""
    if len(data) > MAX_BYTES:
        raise ProgressFileError(
            f"the file is {len(data):,} bytes; a progress file is at most {MAX_BYTES:,}"
        )
    try:
        body = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ProgressFileError("the file is not a Stepwise progress file (not JSON)") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ProgressFileError("the file is not a Stepwise progress file")
    version = body.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        version = None
    if version == 1:
        raise ProgressFileError(
            "the file is an old version 1 progress file, which only recorded right or wrong and "
            "cannot be checked; answer the questions again to earn their XP"
        )
    if version != VERSION:
        raise ProgressFileError(f"the file's version is not one this app reads (version {VERSION})")
    entries = body.get("answers")
    if not isinstance(entries, list):
        raise ProgressFileError("the file's list of answers is damaged")
    if len(entries) > MAX_ANSWERS:
        raise ProgressFileError(
            f"the file holds more than {MAX_ANSWERS:,} answers, more than a learner gives"
        )
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("item"), str):
            raise ProgressFileError("the file's list of answers is damaged")
        if len(entry["item"]) > MAX_TEXT or not _number(entry.get("at", 0)):
            raise ProgressFileError("the file's list of answers is damaged")
        if entry["item"].startswith("ex:"):
            seed, value = entry.get("seed"), entry.get("value")
            if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < MAX_SEED:
                raise ProgressFileError("an exercise answer in the file is damaged")
            if value is not None and not _number(value):
                raise ProgressFileError("an exercise answer in the file is damaged")
        else:
            choice = entry.get("choice")
            if not isinstance(choice, str) or len(choice) > MAX_TEXT:
                raise ProgressFileError("a question answer in the file is damaged")
    return entries


def load(data: bytes, course: Course, now: float | None = None) -> Loaded:
    """Read and re-grade a progress file against `course` (ProgressFileError if unreadable)."""
    entries = _parse(data)
    now = time.time() if now is None else now
    questions = {}
    specs: dict[str, ExerciseSpec] = {}
    for bank, exercises in course:
        for q in bank.questions:
            questions[question_key(bank.lesson, q.id)] = q
        for spec in exercises:
            specs[exercise_key(bank.lesson, spec.id)] = spec
    draws = {(e["item"], e["seed"]) for e in entries if e["item"] in specs}
    if len(draws) > MAX_DRAWS:
        raise ProgressFileError(
            f"the file holds more than {MAX_DRAWS} different exercise draws to check"
        )

    checked: dict[tuple[str, int], object] = {}
    kept: list[Answer] = []
    for entry in entries:
        item = entry["item"]
        at = float(entry.get("at", 0))
        at = min(max(at, 0.0), now) if math.isfinite(at) else 0.0
        if item in questions:
            q = questions[item]
            if entry["choice"] not in q.choices:
                continue
            kept.append(
                Answer(item, entry["choice"] == q.correct_choice, choice=entry["choice"], at=at)
            )
        elif item in specs:
            key = (item, entry["seed"])
            if key not in checked:
                try:
                    checked[key] = specs[item].draw(entry["seed"])
                except Exception:  # a seed the exercise cannot draw: that answer is dropped
                    checked[key] = None
            drawn = checked[key]
            if drawn is None:
                continue
            value = entry["value"]
            value = float(value) if value is not None and math.isfinite(value) else None
            kept.append(
                Answer(item, drawn.is_correct(value), seed=entry["seed"], value=value, at=at)
            )
    return Loaded(answers=tuple(kept), dropped=len(entries) - len(kept))


def _identity(a: Answer) -> tuple:
    return (a.item, a.choice, a.seed, a.value, round(a.at, 3))


def new_answers(loaded: Sequence[Answer], log: Sequence[Answer]) -> list[Answer]:
    """The loaded answers that are not already in the log (loading a file twice adds nothing)."""
    seen = {_identity(a) for a in log}
    out = []
    for a in loaded:
        key = _identity(a)
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out
