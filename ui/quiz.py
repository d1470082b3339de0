"""Quiz and exercise widgets: a question card, a numeric exercise card, immediate feedback.

Grading happens in `on_click` callbacks, which run before the script reruns, so the XP in the
sidebar is already up to date when the page draws (a grade computed in the script body would lag
one rerun behind). Each Check appends one answer to the learner's log (ui/state.py); the XP it
earned is derived from the log, so only a question's first answer can pay. The explanation is
shown after every answer, right or wrong. What a card shows after Check is session state only.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from lessons.course import SITE_TEXT, Lesson
from lessons.kit.words import join
from lessons.quiz.exercise import ANSWER_DECIMALS, ExerciseSpec
from lessons.quiz.progress import (
    XP_RULES,
    Answer,
    Feedback,
    exercise_key,
    feedback_for,
    grade_exercise,
    grade_question,
    question_key,
)
from lessons.text import section
from ui.state import course, progress, record, unsaved

FEEDBACK_KEY = "quiz-feedback"


def _slug(*parts: str) -> str:
    return "-".join(p.replace("_", "-") for p in parts)


def _feedback() -> dict[str, Feedback]:
    return st.session_state.setdefault(FEEDBACK_KEY, {})


def _show(feedback: Feedback | None, *, question: bool, item: str = "") -> None:
    if feedback is None:
        return
    if unsaved(item):  # graded, held in this session until the database answers (ui/state.py)
        st.warning(section(SITE_TEXT, "quiz-not-saved"), icon=":material/cloud_off:")
    if feedback.correct:
        if feedback.xp_gained:
            name, gained = "quiz-correct", f" +{feedback.xp_gained} XP"
        elif question and not feedback.first:
            name, gained = "quiz-correct-later", ""
        else:
            name, gained = "quiz-correct", ""
        st.success(section(SITE_TEXT, name, {"gained": gained}), icon=":material/check_circle:")
    else:
        st.error(section(SITE_TEXT, "quiz-wrong"), icon=":material/cancel:")
        if feedback.xp_gained:  # the last answer of a lesson finishes it, right or wrong
            gained = {"gained": feedback.xp_gained}
            st.info(section(SITE_TEXT, "quiz-wrong-finished", gained), icon=":material/flag:")
    st.markdown(feedback.explanation)


def _graded(answer: Answer, explanation: str) -> Feedback:
    """Record the answer and say what it earned. If it could not be saved yet, the session holds
    it and counts it (ui/state.py `record`): the same grade and XP, and the card says it is not
    saved (`_show`)."""
    written, prog = record([answer])
    row = written[0] if written else answer
    if row not in prog.log:  # neither written nor held: the grade and explanation, no XP
        return Feedback(correct=answer.correct, explanation=explanation, xp_gained=0)
    return feedback_for(row, prog.log, course(prog.log), explanation)


def _check_question(lesson: Lesson, question_id: str, radio_key: str, on_checked=None) -> None:
    choice = st.session_state.get(radio_key)
    key = question_key(lesson.id, question_id)
    if choice is None:
        _feedback().pop(key, None)
        st.session_state[f"{radio_key}-empty"] = True
        return
    st.session_state[f"{radio_key}-empty"] = False
    bank = lesson.bank()
    _feedback()[key] = _graded(
        grade_question(bank, question_id, choice), bank.question(question_id).explanation
    )
    st.session_state[GRADED_KEY] = True
    if on_checked is not None:
        on_checked()


def _clear_feedback(key: str) -> None:
    _feedback().pop(key, None)


def _answered_before(key: str) -> None:
    """A question answered in an earlier session (or tab): say how its first answer went."""
    first = progress().first.get(key)
    if first is None or key in _feedback():
        return
    st.caption(section(SITE_TEXT, "quiz-answered-right" if first else "quiz-answered-wrong"))


GRADED_KEY = "quiz-graded"  # a Check graded an answer since the last run


def _whole_page_after_grading() -> None:
    """A Check pressed inside a fragment (a question next to its chart, in a lesson's lab)
    reruns only that fragment, so the sidebar's XP and the page's other parts (the held runs
    of a prediction, the practice at the end) would lag: rerun the whole page once."""
    if not st.session_state.pop(GRADED_KEY, False):
        return
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:
        st.rerun(scope="app")


def render_question(lesson: Lesson, q, number: int, where: str = "quiz", on_checked=None) -> None:
    """One question card: its choices, Check and the feedback. `where` keeps the widget keys of
    a card drawn twice on a page (a predict question above its animation and in the quiz)
    apart; `on_checked()` runs after a Check has graded an answer."""
    _whole_page_after_grading()
    key = question_key(lesson.id, q.id)
    radio_key = _slug(where, lesson.id, q.id)
    with st.container(border=True):
        st.markdown(f"**{number}.** {q.prompt}")
        st.radio(
            f"Answer to question {number}",
            q.shown_choices,
            index=None,
            key=radio_key,
            label_visibility="collapsed",
            on_change=_clear_feedback,
            args=(key,),
        )
        st.button(
            "Check",
            key=f"{radio_key}-check",
            on_click=_check_question,
            args=(lesson, q.id, radio_key, on_checked),
        )
        if st.session_state.get(f"{radio_key}-empty"):
            st.warning(section(SITE_TEXT, "quiz-empty"))
        _answered_before(key)
        _show(_feedback().get(key), question=True, item=key)


def render_quiz(
    lesson: Lesson, asked_above: bool = False, asked_here: frozenset[str] | set[str] = frozenset()
) -> None:
    """Every question of a lesson's bank, each with its own Check button and feedback.
    `asked_above`: the page asked the computed questions as predictions above its runs
    (ui/predict.py), so they are not asked again here; the others keep their numbers.
    `asked_here`: the ids the page drew next to their charts (LessonPage.ask), left out too."""
    st.caption(section(SITE_TEXT, "quiz-first-answer-rule", XP_RULES))
    questions = [
        (number, q)
        for number, q in enumerate(lesson.bank().questions, start=1)
        if q.id not in asked_here
    ]
    if asked_above:
        above = [number for number, q in questions if q.computed]
        if above:
            name = "quiz-asked-above-one" if len(above) == 1 else "quiz-asked-above"
            st.caption(section(SITE_TEXT, name, {"numbers": join([str(n) for n in above])}))
        questions = [(number, q) for number, q in questions if not q.computed]
    for number, q in questions:
        render_question(lesson, q, number)


def _check_exercise(lesson: Lesson, spec: ExerciseSpec, seed: int, value_key: str) -> None:
    drawn = spec.draw(seed)
    answer = grade_exercise(lesson.id, spec, seed, st.session_state.get(value_key), drawn=drawn)
    _feedback()[exercise_key(lesson.id, spec.id)] = _graded(answer, drawn.solution)


def _new_numbers(lesson: Lesson, spec: ExerciseSpec, seed_key: str) -> None:
    st.session_state[seed_key] = random.randrange(1, 1_000_000)
    _feedback().pop(exercise_key(lesson.id, spec.id), None)


def render_exercise(lesson: Lesson, spec: ExerciseSpec) -> None:
    """A numeric exercise: drawn numbers, an answer box, Check, and New numbers."""
    seed_key = _slug("seed", lesson.id, spec.id)
    seed = st.session_state.setdefault(seed_key, 0)
    drawn = spec.draw(seed)
    value_key = _slug("answer", lesson.id, spec.id, str(seed))
    with st.container(border=True):
        st.markdown(f"**Exercise: {spec.title}**")
        st.markdown(drawn.prompt)
        st.number_input(
            f"Your answer ({drawn.unit})",
            value=None,
            key=value_key,
            format=f"%.{ANSWER_DECIMALS}f",
        )
        left, right = st.columns(2)
        left.button(
            "Check",
            key=_slug("exercise", lesson.id, spec.id, "check"),
            on_click=_check_exercise,
            args=(lesson, spec, seed, value_key),
            type="primary",
        )
        right.button(
            "New numbers",
            key=_slug("exercise", lesson.id, spec.id, "new"),
            on_click=_new_numbers,
            args=(lesson, spec, seed_key),
        )
        key = exercise_key(lesson.id, spec.id)
        if key in progress().solved and key not in _feedback():
            st.caption(section(SITE_TEXT, "exercise-solved-before"))
        _show(_feedback().get(key), question=False, item=key)


def render_lesson_practice(
    lesson: Lesson,
    asked_above: bool = False,
    asked_here: frozenset[str] | set[str] = frozenset(),
    folded: bool = False,
) -> None:
    """The quiz and then the exercises of one lesson (`asked_above`, `asked_here`: see
    `render_quiz`). `folded`: inside one expander that counts what it holds (a lesson page,
    whose questions about a chart sit next to it)."""
    left = [
        q
        for q in lesson.bank().questions
        if q.id not in asked_here and not (asked_above and q.computed)
    ]
    exercises = lesson.exercises()
    box: Any = contextlib.nullcontext()
    if folded:
        counts = {"questions": len(left), "exercises": len(exercises)}
        only = "" if left and exercises else "-questions" if left else "-exercises"
        label = section(SITE_TEXT, "practice-here" + only, counts)
        box = st.expander(label, icon=":material/quiz:")
    with box:
        render_quiz(lesson, asked_above, asked_here)
        for spec in exercises:
            render_exercise(lesson, spec)
