"""The class quiz on screen: the instructor's room (code, QR, live answers, reveal, leaderboard)
and a student's view (join, answer once, see the reveal), over lessons/quiz/rooms.py.

The instructor's host token lives in the session (never in the address bar, which the class can
see on the projector); a host link to reopen the room is shown once. A student is this browser's
anonymous learner id (ui/state.py). The live parts are fragments that rerun by themselves (the
instructor's every second, a student's every two), so an answer reaches the instructor's chart
within about a second and a new question a student's page within two. Nicknames and codes come
from people: they are shown as plain text only.
"""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import segno
import sqlalchemy as sa
import streamlit as st

from lessons.course import Lesson, lesson, lessons
from lessons.kit import story
from lessons.kit.controls import shown
from lessons.kit.figures import axis, bars
from lessons.quiz.bank import Question
from lessons.quiz.rooms import CLOSE_AFTER_S, CODE_LEN, RoomError, clean_code
from lessons.quiz.store import StorePathError
from lessons.text import section
from ui import class_reveal, present
from ui.charts import show
from ui.state import learner_id, rooms

TEXT = Path(__file__).resolve().parents[1] / "lessons" / "quiz" / "classroom.md"
HOSTED = "class-hosted"  # session: {room code: host token}
REFRESH_S = 1.0  # the instructor's chart
STUDENT_REFRESH_S = 2.0  # a student's page: a class of 30 polls 15 times a second in all
HOURS = CLOSE_AFTER_S // 3600
DOWN = "class-down"  # session: the database refused a button (its message, plain text)
QR_PX = 200  # the QR code on the host's screen: beside the chart, on a 720-line projector


def say(name: str, **values) -> None:
    st.markdown(section(TEXT, name, {"hours": HOURS, **values}))


def words(name: str, **values) -> str:
    return section(TEXT, name, {"hours": HOURS, **values})


def trouble(exc: Exception) -> str:
    """One plain-text message for a progress database the class quiz cannot use (rooms,
    rounds and answers live there): a path to fix, or a database that does not answer."""
    if isinstance(exc, StorePathError):
        values = {"path": shown(exc.path, limit=200), "reason": shown(exc.reason, limit=200)}
        return words("store-path", **values)
    first = (str(exc) or type(exc).__name__).splitlines()[0]
    return words("store-down", reason=shown(first, limit=200))


def hosted() -> dict[str, str]:
    return st.session_state.setdefault(HOSTED, {})


def take_host_link() -> None:
    """A host link (?room=CODE&host=TOKEN) makes this session the host, and leaves the URL."""
    token = st.query_params.get("host")
    code = clean_code(st.query_params.get("room", ""))
    if token is None:
        return
    del st.query_params["host"]
    if code and rooms().is_host(code, token):
        hosted()[code] = token


def join_link(code: str) -> str:
    base = (st.context.url or "").split("?")[0]
    return f"{base}?room={code}"


def qr_png(text: str) -> bytes:
    """The join link as a QR code, a PNG drawn here (segno needs no network and no Pillow)."""
    buffer = io.BytesIO()
    segno.make(text, error="m").save(buffer, kind="png", scale=8, border=2, dark="#1b1b1f")
    return buffer.getvalue()


def questions(room_lesson: str) -> tuple[Question, ...]:
    return lesson(room_lesson).bank().questions


def open_or_join(default_lesson: str | None) -> None:
    """The two forms of the page without a room: open one (teach), or join one (learn)."""
    teach, learn = st.columns(2, gap="large")
    with teach:
        say("open-title")
        ids = [x.id for x in lessons()]
        pick = st.selectbox(
            words("open-lesson"),
            ids,
            index=ids.index(default_lesson) if default_lesson in ids else 0,
            format_func=lambda i: lesson(i).title,
            key="class-lesson",
        )
        if st.button(words("open-button"), key="class-open", type="primary"):
            code, token = rooms().open(pick)
            hosted()[code] = token
            st.session_state["class-host-link"] = code
            st.query_params["room"] = code
            st.rerun()
    with learn:
        say("join-title")
        with st.form("class-join"):
            # no max_chars: a browser drops a longer paste whole; the server cuts a nickname
            code = st.text_input(words("join-code"), key="class-code")
            name = st.text_input(words("join-nickname"), key="class-nick")
            if st.form_submit_button(words("join-button")):
                join(code, name)


def join(raw_code: str, name: str) -> None:
    code = clean_code(raw_code)
    if code is None:
        blank = not str(raw_code).strip()
        st.error(words("no-code") if blank else words("bad-code", code=shown(raw_code, limit=20)))
        return
    try:
        rooms().join(code, learner_id(), name)
    except RoomError as exc:
        st.error(words("refused", problem=shown(str(exc), limit=120)))
        return
    st.query_params["room"] = code
    st.rerun()


def answers_figure(q: Question, counts: dict[str, int], number: int, reveal: bool) -> dict:
    label = story.labels(TEXT)
    choices = list(q.shown_choices)
    role = ["healthy" if reveal and c == q.correct_choice else "primary" for c in choices]
    data = [  # each bar carries its count, just past its end (0 at the axis)
        bars([counts.get(c, 0)], [c], c, r, horizontal=True, showlegend=False,
             text=[counts.get(c, 0)], textposition="outside", cliponaxis=False)
        for c, r in zip(choices, role, strict=True)
    ]  # fmt: skip
    top = max(counts.values(), default=0)
    layout = {
        "title": {"text": f"Question {number}"},
        "height": 90 + 45 * len(choices),
        "xaxis": axis(label["students"], range=[0, max(1, top) * 1.15], dtick=max(1, top // 8)),
        "yaxis": axis(label["choice"], autorange="reversed", automargin=True),
        "margin": {"l": 40, "r": 30, "t": 50, "b": 50},
    }
    return {"data": data, "layout": layout}


def closes_at(ts: float) -> str:
    """The closing time in the viewer's time zone (the browser's, st.context), else UTC."""
    when = dt.datetime.fromtimestamp(ts, dt.UTC)
    try:
        return when.astimezone(ZoneInfo(st.context.timezone or "")).strftime("%H:%M")
    except (ZoneInfoNotFoundError, ValueError):
        pass
    offset = st.context.timezone_offset  # minutes, as JavaScript's getTimezoneOffset()
    if isinstance(offset, int):
        return when.astimezone(dt.timezone(dt.timedelta(minutes=-offset))).strftime("%H:%M")
    return words("utc-time", time=when.strftime("%H:%M"))


def room_lesson(code: str) -> Lesson | None:
    room = rooms().room(code)
    return None if room is None else lesson(room.lesson)


# -- the instructor ---------------------------------------------------------------------------
def host_view(code: str, token: str) -> None:
    """The room on one 1280x720 screen: the round, its chart and buttons on the left; the
    room's code, join link and QR code on the right."""
    room = rooms().room(code)
    taught = lesson(room.lesson)
    left, right = st.columns([3, 1], gap="medium")
    with right:
        say("host-title", code=code)
        say("host-join", link=join_link(code), code=code)
        with st.container(key="class-qr"):
            scan = words("qr-caption", code=code)
            st.image(qr_png(join_link(code)), caption=scan, alt=scan, width=QR_PX)
        if st.session_state.pop("class-host-link", None) == code:
            host_link = f"{join_link(code)}&host={token}"
            # folded: this screen goes on the projector, and the link makes its holder the host
            with st.expander(words("host-link-title"), expanded=False):
                st.caption(words("host-link", host_link=host_link))
    with left:
        live_round(code, token, taught, room.closes_at)


def _act(action, *args) -> None:
    """on_click of a host button: do it; a refusal (RoomError) or a database that cannot be
    used is shown, never raised."""
    try:
        action(*args)
    except RoomError as exc:
        st.session_state["class-refused"] = str(exc)
    except sa.exc.SQLAlchemyError as exc:
        st.session_state[DOWN] = trouble(exc)


def _problems() -> None:
    """What a button of this session ran into at its last press (plain text)."""
    refused = st.session_state.pop("class-refused", None)
    if refused:
        st.warning(words("refused", problem=shown(refused, limit=120)))
    down = st.session_state.pop(DOWN, None)
    if down:
        st.error(down)


@st.fragment(run_every=REFRESH_S)
def live_round(code: str, token: str, taught: Lesson, closes: float) -> None:
    """The current round, its answers as they come in, and the host's buttons; a database that
    stops answering is one message here, and the round comes back when it answers again."""
    _problems()
    try:
        _live_round(code, token, taught, closes)
    except sa.exc.SQLAlchemyError as exc:
        st.error(trouble(exc))


def _live_round(code: str, token: str, taught: Lesson, closes: float) -> None:
    r = rooms()
    members = r.num_members(code)
    name = "host-members-one" if members == 1 else "host-members"
    say(name, members=members, lesson=taught.title, closes=closes_at(closes))
    bank = questions(taught.id)
    current = r.current(code)
    asked = set(r.asked(code))
    left = [q for q in bank if q.id not in asked]
    q = None if current is None else next(x for x in bank if x.id == current.question)
    if current is None:
        say("host-none")
    else:
        st.markdown(f"**{current.number}.** {q.prompt}")
    # the buttons above the chart: on the first screen whatever the question's length
    with st.container(horizontal=True, key="class-controls"):
        if current is not None and not current.revealed:
            st.button(words("host-reveal"), key="class-reveal", type="primary",
                      on_click=_act, args=(r.reveal, code, token, current.number))  # fmt: skip
        elif left:
            st.button(words("host-next"), key="class-next", type="primary",
                      on_click=_act, args=(r.push, code, token, left[0].id))  # fmt: skip
        if current is not None and current.revealed and q.computed:
            run = st.button(words("host-run", lesson=taught.title), key="class-run",
                            icon=":material/play_arrow:")  # fmt: skip
            if run:
                present.turn_on()  # a link's present=1 is read only by a new session
                class_reveal.forget(taught.prefix)  # the lesson reads the room afresh
                st.switch_page(taught.page, query_params=class_reveal.link_params(taught, code))
    if (current is None or current.revealed) and not left:
        say("host-done")
    if current is not None:
        counts = r.counts(code, current.number)
        alt = words("alt-answers", number=current.number, answered=sum(counts.values()))
        show(answers_figure(q, counts, current.number, current.revealed), alt=alt,
             key=f"class-answers-{current.number}")  # fmt: skip
        say("host-count", answered=sum(counts.values()), members=members)
        if current.revealed:
            say("right-answer", answer=q.correct_choice)
            st.markdown(q.explanation)
            if q.computed:
                say("host-predict")
    board = r.leaderboard(code)
    if board:
        say("leaderboard")
        rows = {"nickname": [b.nickname for b in board], "right": [b.right for b in board]}
        rows["answered"] = [b.answered for b in board]
        if present.on():  # a plain table, at projector size (the data grid's canvas stays small)
            rows["nickname"] = [shown(name) for name in rows["nickname"]]  # st.table reads Markdown
            st.table(rows, hide_index=True)
        else:
            st.dataframe(rows, hide_index=True)


# -- a student --------------------------------------------------------------------------------
def student_view(code: str) -> None:
    me = learner_id()
    nickname = rooms().nickname(code, me)
    if nickname is None:
        say("join-title")
        with st.form("class-join-here"):
            name = st.text_input(words("join-nickname"), key="class-nick")
            if st.form_submit_button(words("join-button")):
                join(code, name)
        return
    st.markdown(words("student-hello", nickname=shown(nickname, limit=30), code=code))
    student_round(code, me, room_lesson(code))


def _send(code: str, number: int, q: Question, key: str) -> None:
    choice = st.session_state.get(key)
    if choice is None:
        return
    try:  # graded here, on the server: the page never holds the right answer before the reveal
        correct = choice == q.correct_choice
        rooms().answer(code, number, learner_id(), choice, correct, options=q.shown_choices)
    except RoomError as exc:
        st.session_state["class-refused"] = str(exc)
    except sa.exc.SQLAlchemyError as exc:
        st.session_state[DOWN] = trouble(exc)


@st.fragment(run_every=STUDENT_REFRESH_S)
def student_round(code: str, me: str, taught: Lesson) -> None:
    """A student's round; a database that stops answering is one message, until it answers."""
    _problems()
    try:
        _student_round(code, me, taught)
    except sa.exc.SQLAlchemyError as exc:
        st.error(trouble(exc))


def _student_round(code: str, me: str, taught: Lesson) -> None:
    r = rooms()
    current = r.current(code)
    if current is None:
        say("student-wait")
        return
    q = next(x for x in questions(taught.id) if x.id == current.question)
    mine = r.answer_of(code, current.number, me)
    st.markdown(f"**{current.number}.** {q.prompt}")
    if mine is None and not current.revealed:
        key = f"class-choice-{code}-{current.number}"
        st.radio(q.prompt, q.shown_choices, index=None, key=key, label_visibility="collapsed")
        st.button(words("student-send"), key=f"{key}-send", type="primary",
                  on_click=_send, args=(code, current.number, q, key))  # fmt: skip
    elif not current.revealed:
        say("student-sent", choice=mine[0])
    else:
        say("right-answer", answer=q.correct_choice)
        if mine is None:
            say("student-missed")
        else:
            say("student-right" if mine[1] else "student-wrong", choice=mine[0])
        st.markdown(q.explanation)
    if current.revealed:  # the score changes only at a reveal: read it then
        st.caption(words("student-score", right=r.score(code, me), rounds=current.number))


def page() -> None:
    """The whole page: a room from the link (as its host or as a student), else the forms.
    A progress database the page cannot use is one plain-text message, never a traceback."""
    try:
        take_host_link()
        raw = st.query_params.get("room")
        code = None if raw is None else clean_code(raw)
        r = rooms()  # the database opens here: a path it cannot use fails at once
        room = r.room(code) if code else None
    except sa.exc.SQLAlchemyError as exc:
        say("title")
        st.error(trouble(exc))
        st.page_link("views/practice.py", label=words("store-practice"), icon=":material/quiz:")
        return
    is_open = room is not None and not room.closed(dt.datetime.now(dt.UTC).timestamp())
    token = hosted().get(code) if is_open else None
    if token is None:  # the host's screen is the room alone: one screen on a projector
        say("title")
        say("intro")
    try:
        if raw is None:
            open_or_join(st.query_params.get("lesson"))
        elif not is_open:
            name = "bad-code" if code is None else "no-room"
            st.warning(words(name, code=shown(raw, limit=2 * CODE_LEN)))
            open_or_join(None)
        elif token is not None:
            host_view(code, token)
        else:
            student_view(code)
    except sa.exc.SQLAlchemyError as exc:
        st.error(trouble(exc))
