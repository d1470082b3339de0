"""Quiz and exercise widgets: a question card, a numeric exercise card, immediate feedback.

Grading happens in `on_click` callbacks, which run before the script reruns, so the XP in the
sidebar is already up to date when the page draws (a grade computed in the script body would lag
one rerun behind).
"""

from __future__ import annotations

import random

import streamlit as st

from lessons.course import SITE_TEXT, Lesson
from lessons.quiz.exercise import ANSWER_DECIMALS, ExerciseSpec
from lessons.quiz.progress import Feedback, Progress
from lessons.text import section
from ui.state import progress


def _slug(*parts: str) -> str:
    return "-".join(p.replace("_", "-") for p in parts)


def _show(feedback: Feedback | None) -> None:
    if feedback is None:
        return
    if feedback.correct:
        gained = f" +{feedback.xp_gained} XP" if feedback.xp_gained else ""
        st.success(
            section(SITE_TEXT, "quiz-correct", {"gained": gained}), icon=":material/check_circle:"
        )
    else:
        st.error(section(SITE_TEXT, "quiz-wrong"), icon=":material/cancel:")
    st.markdown(feedback.explanation)


def _check_question(lesson: Lesson, question_id: str, radio_key: str) -> None:
    choice = st.session_state.get(radio_key)
    prog = progress()
    key = Progress.question_key(lesson.id, question_id)
    if choice is None:
        prog.feedback.pop(key, None)
        st.session_state[f"{radio_key}-empty"] = True
        return
    st.session_state[f"{radio_key}-empty"] = False
    prog.answer_question(lesson.bank(), question_id, choice)
    prog.maybe_finish_lesson(lesson.bank(), lesson.exercises())


def _clear_feedback(key: str) -> None:
    progress().feedback.pop(key, None)


def render_quiz(lesson: Lesson) -> None:
    """Every question of a lesson's bank, each with its own Check button and feedback."""
    prog = progress()
    for number, q in enumerate(lesson.bank().questions, start=1):
        key = Progress.question_key(lesson.id, q.id)
        radio_key = _slug("quiz", lesson.id, q.id)
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
                args=(lesson, q.id, radio_key),
            )
            if st.session_state.get(f"{radio_key}-empty"):
                st.warning(section(SITE_TEXT, "quiz-empty"))
            _show(prog.feedback.get(key))


def _check_exercise(lesson: Lesson, spec: ExerciseSpec, seed: int, value_key: str) -> None:
    prog = progress()
    prog.answer_exercise(lesson.id, spec, spec.draw(seed), st.session_state.get(value_key))
    prog.maybe_finish_lesson(lesson.bank(), lesson.exercises())


def _new_numbers(lesson: Lesson, spec: ExerciseSpec, seed_key: str) -> None:
    st.session_state[seed_key] = random.randrange(1, 1_000_000)
    progress().feedback.pop(Progress.exercise_key(lesson.id, spec.id), None)


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
        _show(progress().feedback.get(Progress.exercise_key(lesson.id, spec.id)))


def render_lesson_practice(lesson: Lesson) -> None:
    """The quiz and then the exercises of one lesson."""
    render_quiz(lesson)
    for spec in lesson.exercises():
        render_exercise(lesson, spec)
