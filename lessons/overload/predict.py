"""The lesson's predict-then-reveal question, answered by the sweep the lesson opens with.

quiz.toml marks it `computed = "p99_growth"`. The opening chart draws the TTFT up to the
capacity and leaves the loads past it blank; the question asks how the FCFS p99 line goes on
from 100% to the opening load (lesson.Params().load_pct): a shape the learner can reason out
from the chart and the capacity, not a number to guess. The four shapes are text.md labels
(`shape-*`); the sweep's own growth factor picks the right one (`shape`).
"""

from __future__ import annotations

from functools import cache

from lessons.overload import lesson
from lessons.overload.figures import labels

STEEP = 2.0  # at least this many times the load's own growth: the line shoots up
FALLS = 0.9  # below this share of its value at 100%: the line falls
SHAPES = ("steep", "step", "flat", "falls")

# a question's `computed` name -> the entry of answers() that holds its choices (course.py)
CHOICES = {"p99_growth": "choices"}


def shape(ratio: float, load_ratio: float) -> str:
    """How the p99 went on past the capacity: `ratio` is the p99 at the load over the p99 at
    100%, `load_ratio` the load over 100%. Far faster than the load ("steep"), about with it
    ("step"), less than half the load's growth ("flat") or down ("falls")."""
    if ratio < FALLS:
        return "falls"
    if ratio < 1 + (load_ratio - 1) / 2:
        return "flat"
    return "steep" if ratio >= STEEP * load_ratio else "step"


@cache
def answers() -> dict:
    """The p99 at 100% and at the opening load, their ratio, and the choices (answer first)."""
    r = lesson.build(lesson.Params())
    low = float(r.ttft_p99_s[lesson.LOADS.index(100)])
    high = float(r.ttft_p99_s[lesson.LOADS.index(r.load_pct)])
    ratio = high / low
    load_ratio = r.load_pct / 100
    right = shape(ratio, load_ratio)
    words = labels()
    order = [right, *(s for s in SHAPES if s != right)]
    choices = tuple(words[f"shape-{s}"].format(load_ratio=load_ratio) for s in order)
    return {
        "low_s": low,
        "high_s": high,
        "ratio": round(ratio * 2) / 2 if ratio < 10 else float(round(ratio)),
        "shape": right,
        "load_pct": r.load_pct,
        "extra": r.load_pct - 100,
        "choices": choices,
    }
