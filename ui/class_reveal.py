"""A lesson opened from the class quiz after the reveal of one of its predictions: the host's
link (ui/classroom.py) carries `<prefix>-room=CODE`. The class has predicted, so the lesson shows
how the class answered in place of asking, and the runs that answer it (with `?play=1`, its first
animation plays: ui/autoplay.py).

The room is read from the link once, and again whenever a link names another room, and checked:
it must be open, be this lesson's, and have revealed at least one of the lesson's predict
questions; otherwise a plain-text note says so and the lesson asks as usual. The lesson counts
a revealed question as answered (ui/predict.py). The code stays in the address bar while the
page follows the room; Back to the opening run keeps it, Reset this lesson forgets it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import sqlalchemy as sa
import streamlit as st

from lessons.course import SITE_TEXT, Lesson
from lessons.kit.controls import shown
from lessons.quiz.bank import Question
from lessons.quiz.rooms import CODE_LEN, clean_code
from lessons.text import section
from ui import autoplay
from ui.links import write_url
from ui.state import rooms


@dataclass(frozen=True)
class ClassAnswer:
    """How a room answered one revealed question."""

    right: int
    answered: int


def url_key(prefix: str) -> str:
    return f"{prefix}-room"


def _state_key(prefix: str) -> str:
    return f"{prefix}-predict-room"


def link_params(taught: Lesson, code: str) -> dict[str, str]:
    """The host's link to the lesson after a reveal: presenting, following the room, playing."""
    return {"present": "1", url_key(taught.prefix): code, autoplay.KEY: "1"}


def answers(code: str, asked: list[Question]) -> dict[str, ClassAnswer]:
    """How the room answered each of `asked` it has revealed (question id -> answer); none
    while the progress database cannot be used (the sidebar says so; the lesson asks)."""
    try:
        return _answers(code, asked)
    except sa.exc.SQLAlchemyError:
        return {}


def _answers(code: str, asked: list[Question]) -> dict[str, ClassAnswer]:
    r = rooms()
    revealed = r.revealed(code)
    out = {}
    for q in asked:
        if q.id in revealed:
            number = revealed[q.id]
            counts = r.counts(code, number)
            out[q.id] = ClassAnswer(counts.get(q.correct_choice, 0), sum(counts.values()))
    return out


def _checked(lesson_id: str, raw: str, asked: list[Question]) -> str | None:
    code = clean_code(raw)
    try:
        room = rooms().room(code) if code else None
    except sa.exc.SQLAlchemyError:  # the progress database cannot be used: no room to follow
        room = None
    if room is None or room.closed(time.time()) or room.lesson != lesson_id:
        ok = False
    else:
        ok = bool(answers(code, asked))
    if not ok:
        values = {"code": shown(raw, limit=2 * CODE_LEN)}
        st.warning(section(SITE_TEXT, "class-link-bad", values), icon=":material/link_off:")
        return None
    return code


def followed(prefix: str, lesson_id: str, asked: list[Question]) -> tuple[str | None, bool]:
    """The room this session's lesson follows (None: none), and whether the link set it just
    now (the page then opens where the answer is shown). A link naming another room than the
    one followed (a second class, or a lesson seen before the class) is checked afresh."""
    key = _state_key(prefix)
    raw = st.query_params.get(url_key(prefix))
    new = False
    if key not in st.session_state or (raw is not None and raw != st.session_state[key]):
        st.session_state[key] = None if raw is None else _checked(lesson_id, raw, asked)
        new = st.session_state[key] is not None
    code = st.session_state[key]
    write_url(url_key(prefix), code)
    return code, new


def forget(prefix: str) -> None:
    """Let the lesson read its room from the next link afresh (the host's Run it)."""
    st.session_state.pop(_state_key(prefix), None)


def kept(prefix: str) -> str | None:
    """The room the lesson follows, to carry over a reset of its own values (`keep`)."""
    return st.session_state.get(_state_key(prefix))


def keep(prefix: str, code: str | None) -> None:
    """Follow `code` again after a reset (the address bar follows at the next run)."""
    if code is not None:
        st.session_state[_state_key(prefix)] = code


def show_answer(q: Question, number: int, answer: ClassAnswer) -> None:
    """A predict question's card as the class answered it."""
    with st.container(border=True):
        st.markdown(f"**{number}.** {q.prompt}")
        values = {"right": answer.right, "answered": answer.answered, "answer": q.correct_choice}
        name = "class-answered" if answer.answered else "class-answered-none"
        st.markdown(section(SITE_TEXT, name, values))


def back_link(code: str) -> None:
    """A link to the class room (its host's view in the session that hosts it)."""
    label = section(SITE_TEXT, "class-back", {"code": code})
    st.page_link(
        "views/classroom.py", label=label, query_params={"room": code}, icon=":material/groups:"
    )
