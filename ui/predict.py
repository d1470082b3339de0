"""Predict-then-reveal: a lesson's computed questions (lessons/quiz/bank.py) drawn before its
animation, about the run the lesson opens with. When all of them are answered, `reveal` says
what the run did and the stepper jumps to the step the answer is about (with the opening
settings, where the animation shows it)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from lessons.quiz.progress import question_key
from ui.lesson_page import LessonPage
from ui.quiz import render_question
from ui.state import progress


def predict_box(
    page: LessonPage, facts: dict[str, Any], step_key: str | None = None, step: int = 0
) -> bool:
    """The lesson's computed questions side by side; text.md sections `predict` (before),
    `predict-revealed` (filled from `facts`, once all are answered) and `predict-other` (when
    the controls are not the opening ones). With a `step_key`, a reveal jumps its stepper to
    `step`. True while the learner is still predicting (the opening settings, not all
    answered): the page then keeps back the text that gives the answers away."""
    lesson = page.lesson
    asked = [q for q in lesson.bank().questions if q.computed]
    now = page.params_cls(**{name: page.value(name) for name in page.declared})
    opening = now == page.params_cls()

    def answered() -> bool:
        first = progress().first
        return all(question_key(lesson.id, q.id) in first for q in asked)

    def reveal() -> None:
        if step_key is not None and opening and answered():
            st.session_state[step_key] = step

    page.say(None, "predict")
    for col, (number, q) in zip(st.columns(len(asked)), enumerate(asked, start=1), strict=True):
        with col:
            render_question(lesson, q, number, where="predict", on_checked=reveal)
    if answered():
        st.markdown(page.text("predict-revealed", None, **facts))
    if not opening:
        st.info(page.text("predict-other"), icon=":material/info:")
    return opening and not answered()
