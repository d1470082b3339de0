"""The lesson's predict-then-reveal question, answered by the runs the lesson opens with.

quiz.toml marks it `computed = "lowest_int_p99"`: which policy gives the interactive class the
lowest TTFT p99 in the opening setting (lesson.Params())? The choices are the true answer and
three other policies, each with a few words on what it does (from text.md's `choice-` labels).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from lessons.policies import lesson
from lessons.policies.figures import labels

# a question's `computed` name -> the entry of answers() that holds its choices (course.py)
CHOICES = {"lowest_int_p99": "choices"}


@cache
def answers() -> dict:
    """The facts the question is about: the policy with the lowest interactive p99, its p99,
    FCFS's, and the choices (the answer first)."""
    r = lesson.build(lesson.Params())
    words = labels()
    best = int(np.argmin(r.int_ttft_p99_s))
    keys = lesson.POLICIES
    others = [k for i, k in enumerate(keys) if i != best and k != "prefix-aware"][:3]
    choices = [words[f"choice-{k}"] for k in (keys[best], *others)]
    return {
        "best": r.names[best],
        "best_s": float(r.int_ttft_p99_s[best]),
        "fcfs_s": r.fcfs_int_p99_s,
        "load_pct": r.load_pct,
        "interactive": r.interactive,
        "batch": r.batch,
        "choices": tuple(choices),
    }
