"""Per-session state: who the learner is, where their answers are kept, and what they have earned.

The learner is an anonymous id the browser keeps in a cookie (no login). The first visit has no
cookie: a random id is made and the page sets the cookie with a few lines of script, so the next
visit (a reload, a link, the next day) reads it back through `st.context.cookies`. Within one
session the id is kept in session state, so it stays put across reruns (and in AppTest, which
has no cookies, each AppTest is a new learner). A cookie that is not a well-formed id is
replaced by a new one.

The answers live in the database of lessons/quiz/store.py; `progress()` is what the learner
earned, derived from their log, and refreshed once per script run by `refresh_progress()` (the
frame calls it), so work done in another tab shows up at the next rerun.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Sequence

import sqlalchemy as sa
import streamlit as st

from lessons.course import Lesson, lessons
from lessons.quiz.progress import Answer, Course, Progress, derive, question_key
from lessons.quiz.rooms import Rooms
from lessons.quiz.store import ENV_URL, Store, open_store, valid_learner

COOKIE = "stepwise_learner"
COOKIE_MAX_AGE_S = 365 * 24 * 3600
LEARNER_KEY = "learner-id"
COOKIE_SET_KEY = "learner-cookie-set"
PROGRESS_KEY = "progress"
STORE_DOWN_KEY = "progress-store-down"
_log = logging.getLogger(__name__)


def course(log: Sequence[Answer] | None = None) -> Course:
    """Every lesson's bank and exercises, in course order (what XP is derived over).

    Given the learner's `log`, a lesson's predict-then-reveal questions are filled from its run
    only if the log answers one of them: `derive` reads a question's choices only for the rows
    that answer it, so the XP is the same, and a session's first page (the sidebar's XP) does not
    wait for every lesson's opening runs."""
    items = None if log is None else {row.item for row in log}
    return tuple(
        (lesson.bank(fill=items is None or _answers_computed(lesson, items)), lesson.exercises())
        for lesson in lessons()
    )


def _answers_computed(lesson: Lesson, items: set[str]) -> bool:
    bank = lesson.bank(fill=False)
    return any(question_key(bank.lesson, q.id) in items for q in bank.questions if q.computed)


def database_url() -> str | None:
    """STEPWISE_DATABASE_URL, else `[connections.sql] url` of .streamlit/secrets.toml, else None
    (the SQLite file)."""
    env = os.environ.get(ENV_URL, "").strip()
    if env:
        return env
    try:
        if not st.secrets.load_if_toml_exists():
            return None
        url = st.secrets.get("connections", {}).get("sql", {}).get("url")
    except (FileNotFoundError, KeyError, AttributeError, TypeError):
        return None
    return url if isinstance(url, str) and url.strip() else None


def store() -> Store:
    """The process's store (one engine per database, shared by every session)."""
    return open_store(database_url())


@st.cache_resource(show_spinner=False)
def _rooms(url: str | None) -> Rooms:
    return Rooms(open_store(url).engine)


def rooms() -> Rooms:
    """The class quiz's rooms in the progress database (one per process, sharing its engine)."""
    return _rooms(database_url())


def _cookie() -> str | None:
    """The learner cookie the browser sent when this session connected (None in AppTest)."""
    return st.context.cookies.get(COOKIE)


def learner_id() -> str:
    """This browser's learner id: from session state, else a valid cookie, else a new one."""
    learner = st.session_state.get(LEARNER_KEY)
    if valid_learner(learner):
        return learner
    cookie = _cookie()
    learner = cookie if valid_learner(cookie) else secrets.token_urlsafe(18)
    st.session_state[LEARNER_KEY] = learner
    return learner


def keep_learner_cookie() -> None:
    """Set the cookie from the page if the browser did not send this id (once per session).

    The value is our own id (checked by `valid_learner`), never text from the request."""
    learner = learner_id()
    if _cookie() == learner or st.session_state.get(COOKIE_SET_KEY):
        return
    st.session_state[COOKIE_SET_KEY] = True
    st.html(
        "<script>document.cookie = "
        f"'{COOKIE}={learner}; path=/; max-age={COOKIE_MAX_AGE_S}; SameSite=Lax'"
        " + (location.protocol === 'https:' ? '; Secure' : '');</script>",
        unsafe_allow_javascript=True,
        width="content",
    )


def store_down() -> bool:
    """Whether the last read or write of this session failed (the database is unreachable)."""
    return bool(st.session_state.get(STORE_DOWN_KEY))


def _failed(exc: Exception) -> None:
    st.session_state[STORE_DOWN_KEY] = True
    _log.warning("progress database unavailable: %s", (str(exc) or repr(exc)).splitlines()[0])


def refresh_progress() -> Progress:
    """Read the learner's log and derive their progress (once per run, and after each answer).

    If the database cannot be reached, the last progress this session saw stays on screen (and
    the sidebar says the answers cannot be saved) instead of every page failing."""
    try:
        log = store().answers(learner_id())
    except sa.exc.SQLAlchemyError as exc:
        _failed(exc)
        prog = st.session_state.get(PROGRESS_KEY)
        if not isinstance(prog, Progress):
            prog = st.session_state[PROGRESS_KEY] = derive((), course(()))
        return prog
    st.session_state[STORE_DOWN_KEY] = False
    prog = derive(log, course(log))
    st.session_state[PROGRESS_KEY] = prog
    return prog


def progress() -> Progress:
    """What this learner has earned, as of this run."""
    prog = st.session_state.get(PROGRESS_KEY)
    if not isinstance(prog, Progress):
        prog = refresh_progress()
    return prog


def record(new: Sequence[Answer], *, source: str = "app") -> tuple[list[Answer], Progress]:
    """Append answers to the learner's log; returns them as written (none if the database
    cannot be reached) and the fresh progress."""
    try:
        written = store().append(learner_id(), new, source=source)
    except sa.exc.SQLAlchemyError as exc:
        _failed(exc)
        return [], progress()
    return written, refresh_progress()
