"""Predict-then-reveal: a lesson's computed questions (lessons/quiz/bank.py) drawn before its
animation, about the run the lesson opens with. Until all of them are answered (or the learner
asks for the runs without predicting), `predicting` is True and the page keeps back what gives
the answers away. Once they are, `reveal` says what the run did and the stepper jumps to the step
the answer is about (with the opening settings, where the animation shows it)."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from lessons.course import SITE_TEXT
from lessons.quiz.progress import question_key
from lessons.text import section
from ui import class_reveal
from ui.lesson_page import LessonPage
from ui.links import bad_link, write_url
from ui.quiz import render_question
from ui.state import progress


def _asked(page: LessonPage) -> list:
    return [q for q in page.lesson.bank().questions if q.computed]


def _room(page: LessonPage) -> tuple[str | None, bool]:
    """The class room whose reveal the page follows (ui/class_reveal.py), and whether it is new."""
    return class_reveal.followed(page.prefix, page.lesson.id, _asked(page))


def _by_class(page: LessonPage) -> dict:
    """The questions the followed class room has revealed, and how the class answered them."""
    room = _room(page)[0]
    return {} if room is None else class_reveal.answers(room, _asked(page))


def _answered(page: LessonPage, by_class: dict | None = None) -> bool:
    """Every computed question answered: by the learner, or revealed in the class room."""
    first = progress().first
    by_class = _by_class(page) if by_class is None else by_class
    return all(
        q.id in by_class or question_key(page.lesson.id, q.id) in first for q in _asked(page)
    )


def skip_key(prefix: str) -> str:
    """The session key that says the learner asked for the runs without predicting (a lesson's
    own key: Reset this lesson forgets it)."""
    return f"{prefix}-predict-skipped"


def _opening(page: LessonPage) -> bool:
    return page.params_cls(**{name: page.upcoming(name) for name in page.declared}) == (
        page.params_cls()
    )


def skip_url_key(prefix: str) -> str:
    """The address bar's record of "Show the runs without predicting" (`?mem-skip=1`): a link
    reopens the page as it was shown, the runs drawn, not the questions."""
    return f"{prefix}-skip"


def _skip_from_link(page: LessonPage) -> None:
    """Take a link's skip into the session (a bad value is reported and ignored), and keep the
    address bar saying whether the runs are shown without predicting."""
    url_key = skip_url_key(page.prefix)
    raw = st.query_params.get(url_key)
    if raw == "1":
        st.session_state[skip_key(page.prefix)] = True
    elif raw is not None:
        bad_link(url_key, raw, "1", section(SITE_TEXT, "predict-skip-link"))
    write_url(url_key, "1" if st.session_state.get(skip_key(page.prefix)) else None)


def _drawn_key(prefix: str) -> str:
    return f"{prefix}-predict-drawn"


def _follow(page: LessonPage, opening: bool) -> None:
    """A control moved inside the lesson's fragment reruns only the fragment, and the question
    box above it still shows what it drew for the settings before (its skip button, no note that
    the runs differ). When the settings cross into or out of the opening ones, rerun the whole
    page once so that the box follows, before and after the predictions are answered. Only a
    crossing pays the second run, with the new runs cached by then; a move that stays on one
    side does not. The same crossing is asked for once only, so a box and a fragment that ever
    disagreed could not rerun for ever."""
    drawn = st.session_state.get(_drawn_key(page.prefix))
    asked = f"{page.prefix}-predict-asked"
    if drawn is None or drawn == opening or st.session_state.get(asked) == (drawn, opening):
        return
    st.session_state[asked] = (drawn, opening)
    st.rerun(scope="app")


def predicting(page: LessonPage, params: Any = None) -> bool:
    """True while the learner is still predicting: the lesson's `params` (default: the controls'
    current values) are the opening ones, its computed questions are not all answered, and the
    learner has not asked for the runs without predicting. Call it with the fragment's `params`
    where the page draws what gives the answers away: a fragment's own rerun sees its new
    controls, and redraws the question box too when they cross into or out of the opening
    ones."""
    opening = _opening(page) if params is None else params == page.params_cls()
    asking = not st.session_state.get(skip_key(page.prefix)) and not _answered(page)
    if params is not None:
        _follow(page, opening)
        _whole_page_when_shown(page, opening and asking)
    return opening and asking


def _whole_page_when_shown(page: LessonPage, held: bool) -> None:
    """Answering the predictions (or skipping them) inside the lesson's fragment reruns only the
    fragment, and the page's other parts still showed what they drew while it was held (the
    practice at the end kept the questions now asked next to their charts): when the fragment
    crosses between held and shown, rerun the whole page once."""
    key = f"{page.prefix}-held-drawn"
    was = st.session_state.get(key)
    st.session_state[key] = held
    ctx = get_script_run_ctx()
    if was is not None and was != held and ctx is not None and ctx.fragment_ids_this_run:
        st.rerun(scope="app")


def _back_to_opening(page: LessonPage, step_key: str | None = None, step: int = 0) -> None:
    """on_click of "Back to the opening run": Reset this lesson, and set the
    settings that follow the learner (GPU, model, ...) to this lesson's opening values. A class
    room the lesson follows stays followed (Reset this lesson forgets it). With the predictions
    answered, a `step_key` stepper opens at the answer's `step`, as after the reveal."""
    room = class_reveal.kept(page.prefix)
    page.reset()
    class_reveal.keep(page.prefix, room)
    for name, d in page.declared.items():
        if d.spec.shared:
            page.set(name, d.default)
    if step_key is not None and _answered(page):
        st.session_state[step_key] = step


def predict_box(
    page: LessonPage, facts: dict[str, Any], step_key: str | None = None, step: int = 0
) -> bool:
    """The lesson's computed questions side by side; text.md sections `predict` (before),
    `predict-revealed` (filled from `facts`, once all are answered) and `predict-other` (when
    the controls are not the opening ones). While predicting, a button shows the runs without
    a prediction. With a `step_key`, a reveal jumps its stepper to `step`. Returns
    `predicting(page)`."""
    lesson = page.lesson
    opening = _opening(page)

    def reveal() -> None:
        if step_key is not None and opening and _answered(page):
            st.session_state[step_key] = step

    def skip() -> None:
        st.session_state[skip_key(page.prefix)] = True
        write_url(skip_url_key(page.prefix), "1")

    _skip_from_link(page)
    asked = _asked(page)
    page.predicted = bool(asked)  # the footer's quiz does not ask them again
    new = _room(page)[1]
    by_class = _by_class(page)
    answered = _answered(page, by_class)
    if new and answered and step_key is not None and opening:  # the class answered them all
        st.session_state[step_key] = step
    page.say(None, "predict")
    for col, (number, q) in zip(st.columns(len(asked)), enumerate(asked, start=1), strict=True):
        with col:
            if q.id in by_class:
                class_reveal.show_answer(q, number, by_class[q.id])
            else:
                render_question(lesson, q, number, where="predict", on_checked=reveal)
    if answered:
        st.markdown(page.text("predict-revealed", None, **facts))
    room = _room(page)[0]
    if room is not None:  # the way back to the room (presenter mode has no sidebar)
        class_reveal.back_link(room)
    st.session_state[_drawn_key(page.prefix)] = opening
    if not opening:  # the note and its button side by side: the controls below move less
        note, back = st.columns([3, 1], vertical_alignment="center")
        note.info(page.text("predict-other"), icon=":material/info:")
        back.button(
            section(SITE_TEXT, "predict-opening"),
            key=f"{page.prefix}-predict-opening",
            on_click=_back_to_opening,
            args=(page, step_key, step),
            help=section(SITE_TEXT, "predict-opening-help"),
            icon=":material/restart_alt:",
            width="stretch",
        )
    held = predicting(page)
    if held:
        page.play = None  # a link's ?play=1 waits until the answers are in (ui/autoplay.py)
        st.button(
            section(SITE_TEXT, "predict-skip"),
            key=f"{page.prefix}-predict-skip",
            on_click=skip,
            help=section(SITE_TEXT, "predict-skip-help"),
            icon=":material/visibility:",
        )
    return held
