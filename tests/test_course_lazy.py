"""The frame's XP does not wait for the lessons' runs: ui.state.course(log) fills a lesson's
predict-then-reveal questions only when the log answers one of them, and the XP and every
lesson's status are the same as with every bank filled."""

import importlib

import pytest

from lessons import course as catalog
from lessons.course import lessons
from lessons.quiz.progress import derive, grade_question
from tests.apptest_util import run_page
from ui.state import course

COMPUTED = [
    lesson for lesson in lessons() if any(q.computed for q in lesson.bank(fill=False).questions)
]


def _forbid_filling(monkeypatch) -> None:
    """Make filling a bank from its lesson's run raise: a run built for the quiz fails the test
    (lessons.course.filled, and each lesson's answers() under it)."""

    def refuse(bank):
        raise AssertionError(f"the bank of {bank.lesson} was filled from its run")

    monkeypatch.setattr(catalog, "filled", refuse)
    for lesson in COMPUTED:
        monkeypatch.setattr(
            importlib.import_module(f"lessons.{lesson.id}.predict"), "answers", refuse
        )


def test_some_lessons_have_computed_questions():
    assert len(COMPUTED) >= 4  # the lessons that simulate streams of requests


def test_a_log_without_computed_answers_fills_no_bank(monkeypatch):
    plain = [q for q in lessons()[0].bank(fill=False).questions if not q.computed][0]
    log = [grade_question(lessons()[0].bank(fill=False), plain.id, plain.correct_choice)]
    _forbid_filling(monkeypatch)
    assert derive(log, course(log)).xp == 10
    assert derive((), course(())).xp == 0


def test_the_frame_first_run_builds_no_lesson(monkeypatch):
    _forbid_filling(monkeypatch)
    at = run_page()  # the Start page and the sidebar's XP, as a server's first session
    assert at.sidebar.metric[0].value == "0"


@pytest.mark.parametrize("lesson", COMPUTED, ids=lambda lesson: lesson.id)
def test_xp_is_the_same_as_with_every_bank_filled(lesson):
    full = lesson.bank()
    q = next(q for q in full.questions if q.computed)
    plain = next(q for q in full.questions if not q.computed)
    wrong = next(c for c in plain.choices if c != plain.correct_choice)
    log = [
        grade_question(full, q.id, q.correct_choice),  # right: +10 only if graded against the run
        grade_question(full, plain.id, wrong),
    ]
    lazy, filled = derive(log, course(log)), derive(log, course())
    assert lazy.xp == filled.xp == 10
    assert lazy.lesson_status(lesson.id) == filled.lesson_status(lesson.id)
    assert lazy.lesson_status(lesson.id).answered == 2
