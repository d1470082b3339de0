"""The lesson's predict-then-reveal question, answered by the run the lesson opens with.

quiz.toml marks it `computed = "waiting_end"`: how many requests wait at the last arrival on
Dashboard 1 (lesson.Params())? The choices are the run's answer and three counts a wrong model
of overload gives: none (the queue drains), a quarter and three times as many.
"""

from __future__ import annotations

from functools import cache

from lessons.watch import lesson
from lessons.watch.figures import labels

# a question's `computed` name -> the entry of answers() that holds its choices (course.py)
CHOICES = {"waiting_end": "choices"}


@cache
def answers() -> dict:
    """The opening run's count, its setting, the estimate a learner can reason out from it
    (the share of arrivals left over above capacity), and the choices (the answer first)."""
    r = lesson.build(lesson.Params())
    n = r.problem.waiting_end
    words = labels()
    wrong = [0, max(n // 4, 1), 3 * n]
    wrong = [w for w in dict.fromkeys(wrong) if w != n][:3]
    choices = [words["choice"].format(value=v) for v in (n, *wrong)]
    finished = 100 / r.load_pct  # the share of the arrivals the engine keeps up with
    return {
        "answer": n,
        "requests": r.requests,
        "load_pct": r.load_pct,
        "finished_pct": finished * 100,
        "left_over": r.requests * (1 - finished),  # the reasoning's estimate of the queue
        "choices": tuple(choices),
    }
