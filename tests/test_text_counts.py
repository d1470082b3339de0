"""Every count the lessons quote agrees with its noun, at the opening settings and with each
control at its smallest and largest value: "1 step", never "1 steps"; "an 8,000-token", never
"a 8,000-token"; and no "6.4 ms instead of 6.4 ms".

Why: a walk through the lessons at their controls' extremes found "Each of the 1 users", "needs
1 steps", "knee: 1 sequences" and "the step takes 6.4 ms instead of 6.4 ms". The text.md
templates carry the noun with the count (`{n:~step}`, lessons/kit/story.py); this reads every
section each setting shows."""

from __future__ import annotations

import dataclasses
import importlib
import re

import pytest

from lessons.course import lesson, lessons
from lessons.kit import story
from lessons.kit.controls import declared

NOUNS = (
    "decodes|decode tokens|users|steps|tokens|requests|running requests|sequences|clients|"
    "preemptions|blocks|chunks"
)
ONE_PLURAL = re.compile(rf"(?<![\d.,])1 ({NOUNS})\b")
A_AN = re.compile(r"\ba \**(8[\d,]*|11|18|11,[\d,]+|18,[\d,]+)\b")
SAME = re.compile(r"(\d[\d,.]*) ms\** instead of (?:the usual )?\**\1 ms")
LIGHT = ("step_loop", "step_cost", "token_budget", "chunked_prefill", "choosing_budget")
LIGHT += ("throughput_curve",)


def _settings(params: type) -> list:
    """The opening Params, then each control at its smallest and its largest value."""
    out = [params()]
    for d in declared(params):
        spec = d.spec
        options = getattr(spec, "options", None)
        if options:
            ends = [options[0], options[-1]]
        elif hasattr(spec, "lo") and hasattr(spec, "hi"):
            ends = [spec.lo, spec.hi]
        else:  # a toggle: the other value
            ends = [not d.default] if isinstance(d.default, bool) else []
        out += [dataclasses.replace(params(), **{d.name: v}) for v in ends]
    return out


def _shown(lesson_id: str, r) -> str:
    """Every section the Readout shows, filled (sections with a value from elsewhere, such as
    an exercise's or a frame's, are left out: the Readout lacks it)."""
    text = []
    for s in story.parse(lesson(lesson_id).text_path):
        if s.when is not None and not hasattr(r, s.when):
            continue  # a section of another readout of the lesson (a step's, a comparison's)
        if s.shows(r) and story.placeholders(s.body) <= set(story.values(r)):
            text.append(" ".join(s.fill(r).split()))
    return "\n".join(text)


@pytest.mark.parametrize("lesson_id", LIGHT)
def test_counts_agree_with_their_nouns_at_every_extreme(lesson_id):
    module = importlib.import_module(f"lessons.{lesson_id}.lesson")
    bad = []
    for p in _settings(module.Params):
        said = _shown(lesson_id, module.build(p))
        for pattern in (ONE_PLURAL, A_AN, SAME):
            bad += [(p, m.group(0)) for m in pattern.finditer(said)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("lesson_id", ["memory", "policies", "overload", "watch"])
def test_counts_agree_with_their_nouns_in_the_heavy_lessons_opening(lesson_id):
    """The heavy lessons (seconds per setting) at their opening settings only."""
    module = importlib.import_module(f"lessons.{lesson_id}.lesson")
    said = _shown(lesson_id, module.build(module.Params()))
    assert said  # sections were read
    bad = [m.group(0) for p in (ONE_PLURAL, A_AN, SAME) for m in p.finditer(said)]
    assert not bad, bad[:5]


def test_the_checks_catch_what_they_look_for():
    assert ONE_PLURAL.search("the prompt needs 1 steps") and not ONE_PLURAL.search("1 step")
    assert not ONE_PLURAL.search("2,001 steps") and not ONE_PLURAL.search("0.1 steps")
    assert A_AN.search("a 8,000-token prompt") and A_AN.search("a **11,000**")
    assert not A_AN.search("a 4,096-token prompt") and not A_AN.search("a 180-token")
    assert SAME.search("takes **6.4 ms** instead of **6.4 ms**")
    assert not SAME.search("takes 11.4 ms instead of the usual 11.2 ms")


def test_every_lesson_is_read():
    assert set(LIGHT) | {"memory", "policies", "overload", "watch"} == {
        lesson.id for lesson in lessons()
    }


def test_chart_titles_agree_with_their_counts():
    """Chart words moved from Python f-strings to text.md labels kept the f-strings' slips: "1
    running requests", "1 steps", "a 8,192-token prompt", "plus 1 decodes", "a step of 1 prompt
    tokens". The labels now say their counts with the `~noun` and `a` specs."""
    import lessons.step_cost.figures as cost_figures
    import lessons.step_cost.lesson as cost
    import lessons.token_budget.figures as budget_figures
    import lessons.token_budget.lesson as budget

    r = budget.build(budget.Params(decodes=1, prompt=8192))
    assert r.running == 1
    title = budget_figures.timeline(r)["layout"]["title"]["text"]
    assert "1 running request and an 8,192-token prompt" in title
    assert (
        "Budget arithmetic: 1 running request with"
        in budget_figures.spec(r)["layout"]["title"]["text"]
    )
    short = budget.build(budget.Params(decodes=1, prompt=16))  # the prompt in one step
    texts = [t for trace in budget_figures.spec(short)["data"] for t in (trace.get("text") or [])]
    assert texts and all(str(t).endswith("<br>1 step") for t in texts)
    c = cost.build(cost.Params(tokens=1, decodes=1, context_tokens=1))
    names = [t.get("name", "") for t in cost_figures.curve(c)["data"]]
    assert "plus 1 decode reading 1 token of KV each" in names
    assert "your step: 1 token" in " ".join(map(str, names)) or any(
        "your step: 1 token" in str(t.get("text")) for t in cost_figures.curve(c)["data"]
    )
    assert cost_figures.parts(c)["layout"]["title"]["text"].endswith("a step of 1 prompt token")


def test_the_kit_timeline_counts_one_decoding_request():
    """The budget timeline's hover said "1 requests, 1 token each" (its words now live in
    lessons/kit/labels.md, with the count spec)."""
    import lessons.token_budget.figures as budget_figures
    import lessons.token_budget.lesson as budget

    r = budget.build(budget.Params(decodes=1))
    hovers = [
        str(c)
        for trace in budget_figures.timeline(r)["data"]
        for c in trace.get("customdata") or []
    ]
    assert "1 request, 1 token each" in hovers and "1 requests, 1 token each" not in hovers
