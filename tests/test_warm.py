"""The background warm-up (ui/warm.py): it builds a lesson's opening runs into the lesson's own
caches, and STEPWISE_WARM=0 (set for the tests) keeps it off.

Why: a class opens the heavy lessons at the same moment; if the warm-up left the caches empty,
or ran during tests and benchmarks, the first visits would be slow or the timings wrong."""

from __future__ import annotations

import threading

from lessons.course import lesson
from lessons.overload import lesson as ovl
from ui import warm


def test_warming_fills_the_lessons_own_caches(monkeypatch):
    monkeypatch.setattr(warm, "lessons", lambda: [lesson("overload")])
    from lessons.overload import predict

    predict.answers.cache_clear()
    ovl.probe.cache_clear()
    ovl.sweep.cache_clear()
    assert warm.warm_all() == ["overload"]
    assert ovl.probe.cache_info().currsize == 1
    assert ovl.sweep.cache_info().currsize >= 4  # the opening sweeps, ready for the page
    hits = ovl.sweep.cache_info().hits
    ovl.build(ovl.Params())  # what the page's first visit does: every sweep from the cache
    assert ovl.sweep.cache_info().hits >= hits + 4


def test_the_switch_turns_it_off_and_on(monkeypatch):
    monkeypatch.setenv("STEPWISE_WARM", "0")
    assert not warm.enabled() and warm.start() is False
    ran = threading.Event()
    monkeypatch.setattr(warm, "warm_all", lambda: ran.set())
    monkeypatch.setenv("STEPWISE_WARM", "1")
    assert warm.start() is True
    assert ran.wait(10)


def test_warming_also_makes_what_a_lesson_lists_in_warm_also(monkeypatch):
    """The memory page draws its comparisons (more runs) once the predictions are answered:
    the warm-up makes them too, so a warmed server's first visit finds them cached."""
    from lessons.memory import lesson as mem

    monkeypatch.setattr(warm, "lessons", lambda: [lesson("memory")])
    assert mem.comparison in mem.WARM_ALSO
    mem._comparison.cache_clear()
    assert warm.warm_all() == ["memory"]
    assert mem._comparison.cache_info().currsize == 1
    hits = mem._comparison.cache_info().hits
    mem.comparison(mem.Params())
    assert mem._comparison.cache_info().hits == hits + 1
