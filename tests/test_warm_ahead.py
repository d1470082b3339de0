"""Preparing the next settings in the background (ui/warm.py `ahead`, LessonPage.ahead): each
setting is queued once while it waits or runs and may be prepared again once built (a page's
cache may have let it go), off when STEPWISE_WARM=0, a failing one stops nothing, and a lesson's
next slider value comes from the cache its page filled in the background."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from lessons.course import lesson
from tests.apptest_util import past_predictions, run_page
from ui import warm


@pytest.fixture
def warm_on(monkeypatch):
    monkeypatch.setenv("STEPWISE_WARM", "1")


@pytest.fixture
def held(warm_on):
    """The worker busy on a job that waits for the returned event: what is queued meanwhile
    stays queued until the test sets it."""
    gate = threading.Event()
    assert warm.ahead(lambda s: gate.wait(10), [("hold", id(gate))]) == 1
    yield gate
    gate.set()
    warm.wait_idle()


def test_a_setting_waiting_or_being_built_is_not_queued_twice(held):
    calls, threads = [], set()

    def build(s):
        calls.append(s)
        threads.add(threading.current_thread().name)

    assert warm.ahead(build, [("a", 1), ("a", 2), ("a", 2)]) == 2
    assert warm.ahead(build, [("a", 1)]) == 0  # still waiting: not again
    held.set()
    warm.wait_idle()
    assert sorted(calls) == [("a", 1), ("a", 2)]
    assert threads == {"stepwise-ahead"}


def test_a_built_setting_can_be_prepared_again(warm_on):
    """Once built, a setting may be asked for again: a plain function runs again."""
    calls = []
    assert warm.ahead(calls.append, ["once"]) == 1
    warm.wait_idle()
    assert warm.ahead(calls.append, ["once"]) == 1
    warm.wait_idle()
    assert calls == ["once", "once"]


def test_a_page_rerun_does_not_queue_its_settings_again(held):
    """A page makes its st.cache_resource wrapper anew on every run; the setting is the same.
    Asked for again once built, the cache answers and nothing is built twice."""
    import streamlit as st

    calls = []

    def build(s):
        calls.append(s)

    assert warm.ahead(st.cache_resource(build), ["again"]) == 1
    assert warm.ahead(st.cache_resource(build), ["again"]) == 0
    held.set()
    warm.wait_idle()
    assert warm.ahead(st.cache_resource(build), ["again"]) == 1
    warm.wait_idle()
    assert calls == ["again"]


def test_a_setting_the_cache_let_go_is_built_again(warm_on):
    """The page's cache keeps a few entries: a neighbour it evicted is prepared anew when the
    learner comes back near it (it was never prepared again when `ahead` remembered it)."""
    import streamlit as st

    calls = []

    @st.cache_resource(max_entries=1)
    def build(s):
        calls.append(s)
        return s

    assert warm.ahead(build, ["near"]) == 1
    warm.wait_idle()
    build("elsewhere")  # the learner's own run pushes "near" out of the one-entry cache
    assert warm.ahead(build, ["near"]) == 1
    warm.wait_idle()
    assert calls == ["near", "elsewhere", "near"]


def test_a_failing_setting_stops_nothing(warm_on):
    done = []

    def build(s):
        if s == "bad":
            raise ValueError("no such setting")
        done.append(s)

    assert warm.ahead(build, ["bad", "good"]) == 2
    warm.wait_idle()
    assert done == ["good"]


def test_nothing_is_prepared_when_warming_is_off(monkeypatch):
    monkeypatch.setenv("STEPWISE_WARM", "0")
    calls = []
    assert warm.ahead(calls.append, ["x"]) == 0
    warm.wait_idle()
    assert calls == []


def test_the_queue_is_bounded(held):
    queued = warm.ahead(lambda s: None, [("many", i) for i in range(3 * warm.QUEUE_SIZE)])
    assert warm.QUEUE_SIZE - 1 <= queued <= warm.QUEUE_SIZE


def test_the_next_load_of_who_goes_first_is_built_before_the_learner_moves(warm_on, monkeypatch):
    """The page queues the loads next to the current one; moving the slider there finds the
    readout built (the page's cached build is not called again in the learner's rerun)."""
    from lessons.policies import lesson as policies

    real = policies.build
    built = []

    def counted_build(p):  # a name of its own: a cache of its own, empty at the start
        built.append(p.load_pct)
        return real(p)

    monkeypatch.setattr(policies, "build", counted_build)
    at = run_page(lesson("policies").page, timeout=180)
    past_predictions(at)
    warm.wait_idle()
    opening = policies.Params().load_pct
    options = list(policies.LOADS)
    i = options.index(opening)
    neighbours = {options[j] for j in (i - 1, i + 1) if 0 <= j < len(options)}
    assert set(built) == {opening} | neighbours
    moved = max(neighbours)
    at.select_slider(key="w:pol-load").set_value(moved).run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    warm.wait_idle()
    assert built.count(moved) == 1  # built ahead, not again in the learner's rerun
    k = options.index(moved)
    assert {options[j] for j in (k - 1, k + 1) if 0 <= j < len(options)} <= set(built)


def test_the_values_next_to_a_slider_stay_on_the_slider(monkeypatch):
    from lessons.memory import lesson as memory
    from ui.lesson_page import LessonPage

    asked = []
    monkeypatch.setattr(warm, "ahead", lambda build, settings: asked.extend(settings))
    page = LessonPage("memory", memory.Params, memory.PREFIX)
    first, second = memory.PROMPTS[:2]
    util_hi = memory.UTILIZATIONS[1]
    p = memory.Params(prompt_tokens=first, gpu_memory_utilization=util_hi)
    page.ahead(None, p, "prompt_tokens", "gpu_memory_utilization")
    assert asked == [
        dataclasses.replace(p, prompt_tokens=second),
        dataclasses.replace(p, gpu_memory_utilization=util_hi - 1),
    ]
    with pytest.raises(TypeError):
        page.ahead(None, p, "policy")  # a choice has no values next to its value


def test_a_prepared_run_waits_until_no_page_has_run_for_a_while(warm_on):
    """A page's run and a prepared run would share Python's one running thread: the prepared
    one starts only QUIET_S after the latest page run (`touch`), however often pages run."""
    started = []
    assert warm.ahead(lambda s: started.append(time.monotonic()), ["later"]) == 1
    for _ in range(3):  # a learner still moving a slider: each run puts the start off again
        time.sleep(warm.QUIET_S / 2)
        assert not started
        warm.touch()
    last = time.monotonic()
    warm.wait_idle()
    assert started and started[0] - last >= warm.QUIET_S * 0.99
