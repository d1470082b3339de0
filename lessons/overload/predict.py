"""The lesson's predict-then-reveal question, answered by the sweep the lesson opens with.

quiz.toml marks it `computed = "p99_growth"`: the opening setting's TTFT p99 at 100% of capacity
is given; how long is it at the opening load (lesson.Params().load_pct)? The choices are the
sweep's answer and three growth factors at least GAP apart from it and from one another: the
guess that latency grows with load in proportion, and factors above and below the answer.
"""

from __future__ import annotations

from functools import cache

from lessons.overload import lesson
from lessons.overload.figures import labels

FACTORS = (1.5, 2, 3, 5, 10, 20, 50, 100)
GAP = 1.6  # a wrong factor is at least this many times off the true one

# a question's `computed` name -> the entry of answers() that holds its choices (course.py)
CHOICES = {"p99_growth": "choices"}


def _nice(ratio: float) -> float:
    """The factor as the choice shows it: halves below 10, whole numbers above."""
    return round(ratio * 2) / 2 if ratio < 10 else float(round(ratio))


def _apart(a: float, b: float) -> bool:
    return max(a, b) / min(a, b) >= GAP


def _distractors(ratio: float, proportional: float) -> list[float]:
    """Three wrong factors, each at least GAP from the answer and from one another: the guess
    that latency grows in proportion to the load, then factors on either side of the answer
    (so that the answer is neither the largest choice nor the smallest), then FACTORS."""
    wrong: list[float] = []
    for f in [proportional, _nice(ratio * 3), _nice(ratio / 2), _nice(ratio * 8), *FACTORS]:
        if f >= 1 and _apart(f, ratio) and all(_apart(f, w) for w in wrong) and len(wrong) < 3:
            wrong.append(f)
    return wrong


@cache
def answers() -> dict:
    """The p99 at 100% and at the opening load, their ratio, and the choices (answer first)."""
    r = lesson.build(lesson.Params())
    low = float(r.ttft_p99_s[lesson.LOADS.index(100)])
    high = float(r.ttft_p99_s[lesson.LOADS.index(r.load_pct)])
    ratio = _nice(high / low)
    wrong = _distractors(ratio, _nice(r.load_pct / 100))
    words = labels()
    choices = [words["choice"].format(ratio=ratio, value=high)]
    choices += [words["choice"].format(ratio=f, value=low * f) for f in wrong]
    return {
        "low_s": low,
        "high_s": high,
        "ratio": ratio,
        "load_pct": r.load_pct,
        "extra": r.load_pct - 100,
        "choices": tuple(choices),
    }
