"""Saving progress to a file and loading it back (lessons/quiz/saved.py, views/progress.py).

Why: the file carries a learner's answers to another browser. Loading re-grades every answer
against the current course, so a file cannot carry XP the course does not give nor more than
its answers earn, it appends after what the learner already has (their first answers stay
first), and a bad file is refused with one clear line that changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from lessons.course import lesson, lessons
from lessons.quiz.progress import (
    XP_LESSON_DONE,
    XP_PERFECT_QUIZ,
    Answer,
    derive,
    grade_exercise,
    grade_question,
    lesson_key,
    perfect_key,
)
from lessons.quiz.saved import (
    MAX_ANSWERS,
    ProgressFileError,
    dump,
    load,
    new_answers,
)
from tests.apptest_util import answer, run_page

COURSE = [(lsn.bank(), lsn.exercises()) for lsn in lessons()]
PAGE = "views/progress.py"


def _seq(answers):
    return [replace(a, seq=i) for i, a in enumerate(answers, start=1)]


def _three_right() -> list[Answer]:
    bank = lesson("step_loop").bank()
    return _seq(grade_question(bank, q.id, q.correct_choice) for q in bank.questions[:3])


def _file(answers: list[dict], **extra) -> bytes:
    body = {"format": "stepwise-progress", "version": 2, **extra, "answers": answers}
    return json.dumps(body).encode()


def test_a_saved_file_loads_back_the_same_answers():
    log = _three_right()
    loaded = load(dump(derive(log, COURSE)), COURSE)
    assert loaded.dropped == 0
    assert [(a.item, a.choice, a.correct) for a in loaded.answers] == [
        (a.item, a.choice, a.correct) for a in log
    ]
    assert derive(_seq(loaded.answers), COURSE).xp == derive(log, COURSE).xp == 30


def test_xp_and_awards_in_the_file_are_ignored():
    """A hand-edited file claiming 1000 XP and every lesson finished, with no answers: 0 XP."""
    claims = {
        "xp": 1000,
        "awarded": [lesson_key(lsn.id) for lsn in lessons()],
        "finished": True,
    }
    loaded = load(_file([], **claims), COURSE)
    assert loaded.answers == () and derive(loaded.answers, COURSE).xp == 0


def test_a_forged_correct_flag_is_regraded():
    bank = lesson("step_loop").bank()
    q = bank.questions[0]
    wrong = next(c for c in q.choices if c != q.correct_choice)
    ex = lesson("step_loop").exercises()[0]
    drawn = ex.draw(5)
    entries = [
        {"item": f"q:step_loop:{q.id}", "choice": wrong, "correct": True, "at": 1.0},
        {
            "item": f"ex:step_loop:{ex.id}",
            "seed": 5,
            "value": drawn.answer * 3 + 7,
            "correct": True,
        },
        {"item": "q:step_loop:no_such_question", "choice": "x", "correct": True},
        {"item": f"q:step_loop:{q.id}", "choice": "a choice no question has", "correct": True},
        {"item": "ex:step_loop:no_such_exercise", "seed": 0, "value": 1.0, "correct": True},
    ]
    loaded = load(_file(entries, xp=500), COURSE)
    assert loaded.dropped == 3
    assert [a.correct for a in loaded.answers] == [False, False]
    assert derive(_seq(loaded.answers), COURSE).xp == 0


def test_an_exercise_answer_is_rechecked_with_its_draw():
    ex = lesson("step_loop").exercises()[0]
    drawn = ex.draw(7)
    entries = [{"item": f"ex:step_loop:{ex.id}", "seed": 7, "value": drawn.answer}]
    loaded = load(_file(entries), COURSE)
    assert [a.correct for a in loaded.answers] == [True]
    assert derive(_seq(loaded.answers), COURSE).xp == ex.xp


def test_a_whole_course_file_gives_at_most_what_the_course_contains():
    log = []
    for bank, specs in COURSE:
        log += [grade_question(bank, q.id, q.correct_choice) for q in bank.questions]
        log += [grade_exercise(bank.lesson, s, 0, s.draw(0).answer) for s in specs]
    data = json.loads(dump(_seq(log * 2)))
    data["xp"] = 10**9
    loaded = load(json.dumps(data).encode(), COURSE)
    prog = derive(_seq(loaded.answers), COURSE)
    per_lesson = [
        sum(q.xp for q in b.questions) + sum(s.xp for s in e) + XP_PERFECT_QUIZ + XP_LESSON_DONE
        for b, e in COURSE
    ]
    assert prog.xp == sum(per_lesson)
    assert all(perfect_key(b.lesson) in prog.awarded for b, _ in COURSE)


def test_loading_appends_after_the_learners_own_answers():
    """A question answered wrongly here stays wrong at the first answer, whatever the file says."""
    bank = lesson("step_loop").bank()
    q = bank.questions[0]
    wrong = next(c for c in q.choices if c != q.correct_choice)
    here = _seq([grade_question(bank, q.id, wrong, at=2_000.0)])
    file_log = [grade_question(bank, q.id, q.correct_choice, at=1_000.0)]  # "earlier"
    loaded = load(dump(file_log), COURSE)
    merged = _seq(here + new_answers(loaded.answers, here))
    assert derive(merged, COURSE).xp == 0


def test_loading_the_same_file_twice_adds_nothing():
    log = _three_right()
    loaded = load(dump(log), COURSE)
    assert new_answers(loaded.answers, log) == []


def _nested(depth: int) -> bytes:
    return b'{"format": "stepwise-progress", "version": 2, "answers": [' + b"[" * depth + b"]"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x89PNG\r\n", "not JSON"),
        (b"[1, 2, 3]", "not a Stepwise progress file"),
        (b'{"format": "something-else", "version": 2, "answers": []}', "not a Stepwise"),
        (b'{"format": "stepwise-progress", "version": 99, "answers": []}', "version 2"),
        (b'{"format": "stepwise-progress", "version": true, "answers": []}', "version 2"),
        (
            b'{"format": "stepwise-progress", "version": 1, "awarded": ["q:step_loop:order"]}',
            "cannot be checked",
        ),
        (b'{"format": "stepwise-progress", "version": 2, "answers": "all"}', "answers is damaged"),
        (b'{"format": "stepwise-progress", "version": 2}', "answers is damaged"),
        (b'{"format": "stepwise-progress", "version": 2, "answers": [1]}', "answers is damaged"),
        (
            b'{"format": "stepwise-progress", "version": 2, "answers": [{"item": "q:a:b",'
            b' "choice": {"nested": ["deep"]}}]}',
            "question answer in the file is damaged",
        ),
        (
            b'{"format": "stepwise-progress", "version": 2, "answers": [{"item": "ex:a:b",'
            b' "seed": -1, "value": 1}]}',
            "exercise answer in the file is damaged",
        ),
        (
            b'{"format": "stepwise-progress", "version": 2, "answers": [{"item": "ex:a:b",'
            b' "seed": 1, "value": "39"}]}',
            "exercise answer in the file is damaged",
        ),
        (b" " * 2_000_000, "at most"),
        (b"[" * 200_000, "not JSON"),  # nested too deep for the parser: no RecursionError
        (_nested(100_000), "not JSON"),
        (_file([{"item": "q:a:b", "choice": "x"}] * (MAX_ANSWERS + 1)), "more than"),
    ],
)
def test_a_bad_file_is_refused_with_one_line(data, words):
    with pytest.raises(ProgressFileError, match=words) as info:
        load(data, COURSE)
    assert "\n" not in str(info.value)


def test_a_refusal_quotes_nothing_from_the_file():
    """The reason is shown on the page as Markdown: it must not carry file content."""
    evil = "<img src=x onerror=alert(1)> **bold** [link](http://example.com)"
    for body in (
        {"format": "stepwise-progress", "version": evil, "answers": []},
        {"format": evil},
        {"format": "stepwise-progress", "version": 2, "answers": [{"item": evil, "choice": 1}]},
    ):
        with pytest.raises(ProgressFileError) as info:
            load(json.dumps(body).encode(), COURSE)
        assert "onerror" not in str(info.value) and "bold" not in str(info.value)


def test_the_page_saves_and_loads_progress():
    at = run_page("views/lesson_step_loop.py")
    q = lesson("step_loop").bank().questions[0]
    answer(at, "step_loop", q.id, q.correct_choice)
    assert at.session_state["progress"].xp == 10
    saved = dump(at.session_state["progress"])

    fresh = run_page(PAGE)  # another learner (another browser)
    assert fresh.session_state["progress"].xp == 0
    assert len(fresh.download_button) == 1
    fresh.file_uploader(key="progress-file").upload("mine.json", saved, "application/json").run()
    assert fresh.session_state["progress"].xp == 10
    assert any("10 XP added" in s.value for s in fresh.success)
    assert not fresh.exception
    # The learner's log now holds the answer: the Progress table counts it.
    row = fresh.dataframe[0].value.iloc[0]
    assert row["Right at the first answer"].startswith("1 of")
    # Loading the same file again adds nothing.
    fresh.file_uploader(key="progress-file").upload("again.json", saved, "application/json")
    fresh.run()
    assert fresh.session_state["progress"].xp == 10
    assert any("0 XP added" in s.value and "1 already" in s.value for s in fresh.success)


def test_the_page_refuses_a_bad_file_and_keeps_the_progress():
    at = run_page("views/practice.py")
    q = lessons()[0].bank().questions[0]
    answer(at, lessons()[0].id, q.id, q.correct_choice)
    at.switch_page(PAGE).run()
    for data in (b"{not json", b'{"format": "stepwise-progress", "version": 1, "xp": 900}'):
        at.file_uploader(key="progress-file").upload("x.json", data, "application/json").run()
        assert any("could not be loaded" in e.value for e in at.error)
        assert at.session_state["progress"].xp == 10
        assert len(at.session_state["progress"].log) == 1
        assert not at.exception


def test_a_lesson_finished_across_two_browsers_earns_its_bonuses_on_loading():
    """Questions in one browser, exercises in another: loading one into the other completes the
    lesson, so the perfect-quiz and lesson bonuses are derived then, not at some later click."""
    lsn = lesson("step_loop")
    bank, exercises = lsn.bank(), lsn.exercises()
    quiz = _seq(grade_question(bank, q.id, q.correct_choice) for q in bank.questions)
    practice = [grade_exercise(bank.lesson, s, 1, s.draw(1).answer) for s in exercises]
    loaded = load(dump(quiz), COURSE)
    prog = derive(_seq(practice + new_answers(loaded.answers, practice)), COURSE)
    assert lesson_key(bank.lesson) in prog.awarded and perfect_key(bank.lesson) in prog.awarded
    questions_xp = sum(q.xp for q in bank.questions)
    exercises_xp = sum(e.xp for e in exercises)
    assert prog.xp == questions_xp + exercises_xp + XP_PERFECT_QUIZ + XP_LESSON_DONE


def test_the_uploader_states_the_limit_a_progress_file_has():
    """Streamlit's uploader would say "200MB per file"; a progress file is refused over
    MAX_BYTES, so the uploader says 1 MB."""
    from lessons.quiz.saved import MAX_BYTES

    at = run_page(PAGE)
    limit_mb = at.file_uploader(key="progress-file").proto.max_upload_size_mb
    assert limit_mb == 1 and (limit_mb - 1) * 2**20 < MAX_BYTES <= limit_mb * 2**20
