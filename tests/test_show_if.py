"""A control hidden by a rule (show_if) is drawn exactly when its rule holds for the values the
page runs with, on every lesson: the limit sliders only with vLLM's defaults off (on with the
defaults they would change nothing), the memory lesson's pool controls with the way the pool is
sized. A rule once read the values of the controls to its left in its row as missing, so the
memory lesson hid its gpu_memory_utilization slider and showed limit sliders that did nothing."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from lessons.course import lessons
from lessons.kit import limits
from lessons.kit.controls import declared
from tests.apptest_util import run_page

LESSONS = list(lessons())


def _rules(module) -> dict:
    names = {d.name for d in declared(module.Params)}
    rules = {n: r for n, r in limits.SHOW_IF.items() if n in names}
    return rules | getattr(module, "SHOW_IF", {})


def _links(module) -> list[dict]:
    """The opening link, and one that turns each rule's condition the other way."""
    prefix = module.PREFIX
    found = [{}]
    names = {d.name: d for d in declared(module.Params)}
    if "vllm_defaults" in names:
        found.append({names["vllm_defaults"].url_key(prefix): "0"})
    if "pool_from" in names:
        d = names["pool_from"]
        other = [o for o in d.spec.options if o != d.default][0]
        found.append({d.url_key(prefix): d.spec.to_url(other)})
    return found


def _module(lesson):
    return importlib.import_module(f"lessons.{lesson.id}.lesson")


CASES = [
    pytest.param(lesson, link, id=f"{lesson.id}-{'&'.join(link) or 'opening'}")
    for lesson in LESSONS
    if _rules(_module(lesson))
    for link in _links(_module(lesson))
]


@pytest.mark.parametrize(("lesson", "link"), CASES)
def test_a_ruled_control_is_drawn_exactly_when_its_rule_holds(lesson, link):
    module = _module(lesson)
    at = run_page(lesson.page, query=link, timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    widgets = {w.key for w in [*at.slider, *at.select_slider, *at.selectbox, *at.toggle]}
    names = {d.name: d for d in declared(module.Params)}
    changed = {
        n: d.spec.parse(link[d.url_key(module.PREFIX)])
        for n, d in names.items()
        if d.url_key(module.PREFIX) in link
    }
    values = dataclasses.asdict(dataclasses.replace(module.Params(), **changed))
    for name, rule in _rules(module).items():
        key = "w:" + names[name].url_key(module.PREFIX)
        assert (key in widgets) == bool(rule(values)), (name, link)
