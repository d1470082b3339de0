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

Nothing a learner saw graded is lost when the database does not answer: a Check waits for it at
most WRITE_WITHIN_S (a lock, a lost connection), then the answer is held in this session, the
card and the sidebar say it is not saved yet, and each later run tries to write it (every
FLUSH_EVERY_S at most). XP is derived from the log and the held answers, so it stays on screen;
a held answer the log turns out to have already is dropped, never written twice. When the store
reopens an SQLite file that was deleted (its `generation` moves on), the session holds again
the rows it had read and the new file lacks, and writes them back.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import time
from collections.abc import Sequence

import sqlalchemy as sa
import streamlit as st

from lessons.course import SITE_TEXT, Lesson, lessons
from lessons.kit.controls import shown
from lessons.quiz.progress import Answer, Course, Progress, derive, question_key
from lessons.quiz.rooms import Rooms
from lessons.quiz.store import (
    ENV_URL,
    WRITE_WITHIN_S,
    Store,
    StorePathError,
    log_key,
    open_store,
    valid_learner,
)
from lessons.text import section

COOKIE = "stepwise_learner"
COOKIE_MAX_AGE_S = 365 * 24 * 3600
LEARNER_KEY = "learner-id"
COOKIE_SET_KEY = "learner-cookie-set"
PROGRESS_KEY = "progress"
STORE_DOWN_KEY = "progress-store-down"
PENDING_KEY = "progress-pending"  # answers graded and shown, not written yet (oldest first)
PATH_ERROR_KEY = "progress-store-path"  # (path, reason): the SQLite file cannot be created
TRIED_KEY = "progress-pending-tried"  # time.monotonic() of the last write that failed
GENERATION_KEY = "progress-store-generation"  # the store's generation at the last read
FLUSH_WITHIN_S = 0.25  # a later run's try at writing held answers waits at most this long
FLUSH_EVERY_S = 1.0  # and comes at most this often
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
    """The class quiz's rooms in the progress database (one per process, sharing its engine);
    a deleted SQLite file is made again first (lessons/quiz/store.py, `Store.check_file`)."""
    store().check_file()
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
    """Whether progress cannot be saved right now: the last read or write of this session
    failed, or answers this session graded are still waiting to be written."""
    return bool(st.session_state.get(STORE_DOWN_KEY)) or bool(_held())


def store_note() -> str:
    """What the sidebar says when `store_down()`, the path and reason shown as plain text."""
    path_error = st.session_state.get(PATH_ERROR_KEY)
    if path_error:
        path, reason = path_error
        values = {"path": shown(path, limit=200), "reason": shown(reason, limit=200)}
        return section(SITE_TEXT, "progress-store-path", values)
    held = _held()
    if held:
        return section(SITE_TEXT, "progress-pending", {"n": len(held), "within": WRITE_WITHIN_S})
    return section(SITE_TEXT, "progress-store-down")


def unsaved(item: str) -> bool:
    """Whether this session holds an answer to `item` that is not written yet."""
    return any(a.item == item for a in _held())


def _held() -> list[Answer]:
    held = st.session_state.get(PENDING_KEY)
    return list(held) if isinstance(held, list) else []


def _hold(answers: Sequence[Answer]) -> None:
    st.session_state[PENDING_KEY] = list(answers)


def _failed(exc: Exception) -> None:
    st.session_state[STORE_DOWN_KEY] = True
    path_error = (exc.path, exc.reason) if isinstance(exc, StorePathError) else None
    st.session_state[PATH_ERROR_KEY] = path_error
    _log.warning("progress database unavailable: %s", (str(exc) or repr(exc)).splitlines()[0])


def _answered() -> None:
    st.session_state[STORE_DOWN_KEY] = False
    st.session_state[PATH_ERROR_KEY] = None


def _lost(s: Store, learner: str, log: Sequence[Answer] | None = None) -> list[Answer]:
    """The rows this session read before the store reopened its file (deleted, replaced) that
    the new file lacks (`log`: the learner's log, read here if needed and not given), without
    their old sequence numbers: to be held again and written back before anything newer."""
    s.check_file()
    seen = st.session_state.get(GENERATION_KEY)
    before = st.session_state.get(PROGRESS_KEY)
    if seen is None or seen == s.generation or not isinstance(before, Progress):
        st.session_state[GENERATION_KEY] = s.generation
        return []
    have = {log_key(a) for a in (s.answers(learner) if log is None else log)}
    st.session_state[GENERATION_KEY] = s.generation
    return [
        dataclasses.replace(a, seq=None)
        for a in before.log
        if a.seq is not None and log_key(a) not in have
    ]


def _flush_due() -> bool:
    tried = st.session_state.get(TRIED_KEY)
    return tried is None or time.monotonic() - tried >= FLUSH_EVERY_S


def _derived(log: Sequence[Answer] | None) -> Progress:
    """Progress from `log` (None: the rows this session last read) and the held answers."""
    if log is None:
        before = st.session_state.get(PROGRESS_KEY)
        log = [a for a in before.log if a.seq is not None] if isinstance(before, Progress) else []
    rows = [*log, *_held()]
    prog = derive(rows, course(rows))
    st.session_state[PROGRESS_KEY] = prog
    return prog


def refresh_progress() -> Progress:
    """Read the learner's log and derive their progress (once per run, and after each answer);
    write the answers this session holds, if any, when a try is due.

    If the database cannot be reached, the last progress this session saw (and what it holds)
    stays on screen, and the sidebar says the answers cannot be saved, instead of every page
    failing."""
    learner = learner_id()
    log: list[Answer] | None = None
    try:
        s = store()
        log = s.answers(learner)
        have = {log_key(a) for a in log}
        held = [*_lost(s, learner, log), *(a for a in _held() if log_key(a) not in have)]
        _hold(held)
        if held and _flush_due():
            log += s.append(learner, held, within_s=FLUSH_WITHIN_S)
            _hold([])
    except sa.exc.SQLAlchemyError as exc:
        _failed(exc)
        st.session_state[TRIED_KEY] = time.monotonic()
    else:
        _answered()
    return _derived(log)


def progress() -> Progress:
    """What this learner has earned, as of this run."""
    prog = st.session_state.get(PROGRESS_KEY)
    if not isinstance(prog, Progress):
        prog = refresh_progress()
    return prog


def record(new: Sequence[Answer], *, source: str = "app") -> tuple[list[Answer], Progress]:
    """Append answers to the learner's log, after the ones this session holds; returns them as
    written and the fresh progress.

    A write waits at most WRITE_WITHIN_S. If it still fails, nothing is returned as written;
    answers given in the app (source "app") are then held in the session, counted in the
    progress returned, and written by a later run. A loaded file's are not: its message says
    it was not loaded, and loading it again adds them."""
    keep = source == "app"
    learner = learner_id()
    try:
        s = store()
        _hold([*_lost(s, learner), *_held()])
        held = _held()
        if held and not keep:  # held answers first, in their own write: they are older
            s.append(learner, held, within_s=WRITE_WITHIN_S)
            held = []
            _hold(held)
        written = s.append(learner, [*held, *new], source=source, within_s=WRITE_WITHIN_S)
    except sa.exc.SQLAlchemyError as exc:
        _failed(exc)
        st.session_state[TRIED_KEY] = time.monotonic()
        if keep:
            _hold([*_held(), *new])
        return [], _derived(None)
    _hold([])
    return written[len(held) :], refresh_progress()
