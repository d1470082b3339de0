"""Saving progress to a file and loading it back (lessons/quiz/saved.py, pages/progress.py).

Why: XP lives in the browser session, so the file is the only thing that carries a learner's work
across a reload. It must round-trip exactly, never add XP the course does not give, merge without
losing what the session holds, and refuse a bad file with one clear line.
"""

from __future__ import annotations

import json

import pytest

from lessons.course import lesson, lessons
from lessons.quiz.progress import Progress
from lessons.quiz.saved import ProgressFileError, award_values, dump, load, merge
from tests.apptest_util import answer, run_page

VALUES = award_values((lsn.bank(), lsn.exercises()) for lsn in lessons())
PAGE = "pages/progress.py"


def _earned() -> Progress:
    prog = Progress()
    bank = lesson("step_loop").bank()
    for q in bank.questions[:3]:
        prog.answer_question(bank, q.id, q.correct_choice)
    return prog


def test_a_saved_file_loads_back_the_same_progress():
    prog = _earned()
    loaded, dropped = load(dump(prog), VALUES)
    assert dropped == 0
    assert loaded.awarded == prog.awarded and loaded.xp == prog.xp == 30
    assert loaded.tries == prog.tries


def test_xp_is_recomputed_from_the_awards_not_read_from_the_file():
    body = json.loads(dump(_earned()))
    body["xp"] = 1_000_000
    body["awarded"].append("q:step_loop:no_such_question")
    loaded, dropped = load(json.dumps(body).encode(), VALUES)
    assert loaded.xp == 30
    assert dropped == 1


def test_loading_merges_and_keeps_what_the_session_earned():
    session = Progress()
    bank = lesson("token_budget").bank()
    q = bank.questions[0]
    session.answer_question(bank, q.id, q.correct_choice)
    loaded, _ = load(dump(_earned()), VALUES)
    gained = merge(session, loaded, VALUES)
    assert gained == 30 and session.xp == 40
    assert Progress.question_key("token_budget", q.id) in session.awarded
    assert merge(session, loaded, VALUES) == 0  # loading the same file twice adds nothing


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x89PNG\r\n", "not JSON"),
        (b"[1, 2, 3]", "not a Stepwise progress file"),
        (b'{"format": "stepwise-progress", "version": 99, "awarded": []}', "version 99"),
        (b'{"format": "stepwise-progress", "version": 1, "awarded": "all"}', "awards is damaged"),
        (
            b'{"format": "stepwise-progress", "version": 1, "awarded": [], "tries": {"a": [1]}}',
            "history is damaged",
        ),
        (b" " * 2_000_000, "far smaller"),
        (b"[" * 200_000, "not JSON"),  # nested too deep for the parser: no RecursionError
        (
            b'{"format": "stepwise-progress", "version": 1, "awarded": [], "tries": {"a": []}}',
            "history is damaged",
        ),
    ],
)
def test_a_bad_file_is_refused_with_one_line(data, words):
    with pytest.raises(ProgressFileError, match=words) as info:
        load(data, VALUES)
    assert "\n" not in str(info.value)


def test_the_page_saves_and_loads_progress():
    at = run_page("pages/lesson_step_loop.py")
    q = lesson("step_loop").bank().questions[0]
    answer(at, "step_loop", q.id, q.correct_choice)
    saved = dump(at.session_state["progress"])
    assert at.session_state["progress"].xp == 10

    fresh = run_page(PAGE)  # a new session: a reload
    assert fresh.session_state["progress"].xp == 0
    assert len(fresh.download_button) == 1
    fresh.file_uploader(key="progress-file").upload("mine.json", saved, "application/json").run()
    assert fresh.session_state["progress"].xp == 10
    assert any("10 XP added" in s.value for s in fresh.success)
    assert not fresh.exception


def test_the_page_refuses_a_bad_file_and_keeps_the_progress():
    at = run_page(PAGE)
    at.session_state["progress"].xp = 20  # earned earlier in this session
    at.file_uploader(key="progress-file").upload("x.json", b"{not json", "application/json").run()
    assert any("could not be loaded" in e.value for e in at.error)
    assert at.session_state["progress"].xp == 20
    assert not at.exception


def test_a_lesson_finished_across_two_sessions_earns_its_bonuses_on_loading():
    """Questions in one session, exercises in another: loading one into the other completes the
    lesson, so the perfect-quiz and lesson bonuses are awarded then, not at some later click."""
    from lessons.quiz.progress import XP_LESSON_DONE, XP_PERFECT_QUIZ

    lsn = lesson("step_loop")
    bank, exercises = lsn.bank(), lsn.exercises()
    quiz = Progress()
    for q in bank.questions:
        quiz.answer_question(bank, q.id, q.correct_choice)
    assert f"perfect:{bank.lesson}" in quiz.awarded
    practice = Progress()
    for spec in exercises:
        drawn = spec.draw(1)
        practice.answer_exercise(bank.lesson, spec, drawn, drawn.answer)
    loaded, _ = load(dump(quiz), VALUES)
    course = [(x.bank(), x.exercises()) for x in lessons()]
    merge(practice, loaded, VALUES, course)
    assert f"lesson:{bank.lesson}" in practice.awarded
    questions_xp = sum(q.xp for q in bank.questions)
    exercises_xp = sum(e.xp for e in exercises)
    assert practice.xp == questions_xp + exercises_xp + XP_PERFECT_QUIZ + XP_LESSON_DONE
