"""A live class quiz: rooms, rounds, members and answers, in the progress database.

An instructor opens a room for a lesson and gets a short code and a secret host token (only its
hash is stored). Students join with a nickname; a student is the anonymous learner id of their
browser (ui/state.py), never a name typed in, so no one can answer for someone else. The host
pushes one question at a time (a round); each student answers a round once: the answer's
primary key is (room, round, student), so a second answer, from another tab or another app
server, is refused by the database itself and nothing is counted twice. The host reveals the
round; before that the right answer is never given out (the page grades on the server and
shows the grade only after the reveal). A room closes by itself CLOSE_AFTER_S after it opened.

Every state is read back from the tables, so several app servers on one PostgreSQL agree.
SQLite (the default) or PostgreSQL, through the engine of lessons/quiz/store.py. No streamlit.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lessons.quiz.store import create_tables, valid_learner

CLOSE_AFTER_S = 4 * 3600
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read off a projector
CODE_LEN = 5
MAX_NICKNAME = 24
MAX_ROUNDS = 200

metadata = sa.MetaData()
rooms = sa.Table(
    "stepwise_rooms",
    metadata,
    sa.Column("code", sa.String(CODE_LEN), primary_key=True),
    sa.Column("lesson", sa.String(64), nullable=False),
    sa.Column("host_hash", sa.String(64), nullable=False),
    sa.Column("opened_at", sa.Float(precision=53), nullable=False),
    sa.Column("closes_at", sa.Float(precision=53), nullable=False),
)
rounds = sa.Table(
    "stepwise_rounds",
    metadata,
    sa.Column("code", sa.String(CODE_LEN), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("question", sa.String(200), nullable=False),
    sa.Column("opened_at", sa.Float(precision=53), nullable=False),
    sa.Column("revealed_at", sa.Float(precision=53), nullable=True),
)
members = sa.Table(
    "stepwise_members",
    metadata,
    sa.Column("code", sa.String(CODE_LEN), primary_key=True),
    sa.Column("student", sa.String(64), primary_key=True),
    sa.Column("nickname", sa.String(MAX_NICKNAME), nullable=False),
    sa.Column("joined_at", sa.Float(precision=53), nullable=False),
)
room_answers = sa.Table(
    "stepwise_room_answers",
    metadata,
    sa.Column("code", sa.String(CODE_LEN), primary_key=True),
    sa.Column("number", sa.Integer(), primary_key=True, autoincrement=False),
    sa.Column("student", sa.String(64), primary_key=True),
    sa.Column("choice", sa.Text(), nullable=False),
    sa.Column("correct", sa.Boolean(), nullable=False),
    sa.Column("answered_at", sa.Float(precision=53), nullable=False),
)

# An answer joined to its round, when that round has been revealed: what a score counts.
_REVEALED = sa.and_(
    rounds.c.code == room_answers.c.code,
    rounds.c.number == room_answers.c.number,
    rounds.c.revealed_at.is_not(None),
)


class RoomError(ValueError):
    """Why a room action is refused (no such room, closed, not the host, not a member...)."""


@dataclass(frozen=True)
class Room:
    code: str
    lesson: str
    opened_at: float
    closes_at: float

    def closed(self, now: float) -> bool:
        return now >= self.closes_at


@dataclass(frozen=True)
class Round:
    number: int
    question: str
    opened_at: float
    revealed: bool


@dataclass(frozen=True)
class Standing:
    """One student on the leaderboard: right answers over the revealed rounds."""

    nickname: str
    right: int
    answered: int
    student: str = ""  # the learner id (never shown)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def clean_code(raw: object) -> str | None:
    """A room code as typed or linked (any case, spaces ignored), or None if it cannot be one."""
    code = "".join(str(raw).split()).upper()
    if len(code) == CODE_LEN and all(c in CODE_ALPHABET for c in code):
        return code
    return None


def clean_nickname(raw: object) -> str:
    """A nickname: one line, at most MAX_NICKNAME characters (shown later as plain text)."""
    name = " ".join(str(raw).split())[:MAX_NICKNAME]
    if not name:
        raise RoomError("a nickname is needed")
    return name


class Rooms:
    """The class quiz's tables in one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        create_tables(engine, metadata)

    # -- the instructor -----------------------------------------------------------------------
    def open(self, lesson: str, now: float | None = None) -> tuple[str, str]:
        """A new room for `lesson`: (code, host token). The token is the only key to host it."""
        now = time.time() if now is None else now
        token = secrets.token_urlsafe(24)
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LEN))
            row = {"code": code, "lesson": lesson, "host_hash": _hash(token)}
            row |= {"opened_at": now, "closes_at": now + CLOSE_AFTER_S}
            try:
                with self.engine.begin() as conn:
                    conn.execute(rooms.insert().values(**row))
                return code, token
            except sa.exc.IntegrityError:
                continue  # that code is taken: draw another
        raise RoomError("could not find a free room code")

    def room(self, code: str | None) -> Room | None:
        if code is None:
            return None
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(rooms).where(rooms.c.code == code)).first()
        if row is None:
            return None
        return Room(row.code, row.lesson, row.opened_at, row.closes_at)

    def is_host(self, code: str, token: str | None) -> bool:
        if not token:
            return False
        query = sa.select(rooms.c.host_hash).where(rooms.c.code == code)
        with self.engine.connect() as conn:
            stored = conn.execute(query).scalar()
        return stored is not None and secrets.compare_digest(stored, _hash(token))

    def _open_room(self, code: str, now: float) -> Room:
        room = self.room(code)
        if room is None:
            raise RoomError("there is no room with that code")
        if room.closed(now):
            raise RoomError("this room has closed")
        return room

    def _host(self, code: str, token: str, now: float) -> Room:
        room = self._open_room(code, now)
        if not self.is_host(code, token):
            raise RoomError("only the instructor who opened the room can do this")
        return room

    def push(self, code: str, token: str, question: str, now: float | None = None) -> int:
        """Start the next round with `question` (a question id of the room's lesson)."""
        now = time.time() if now is None else now
        self._host(code, token, now)
        current = self.current(code)
        number = 1 if current is None else current.number + 1
        if number > MAX_ROUNDS:
            raise RoomError(f"a room holds at most {MAX_ROUNDS} rounds")
        row = {"code": code, "number": number, "question": question, "opened_at": now}
        try:
            with self.engine.begin() as conn:
                conn.execute(rounds.insert().values(**row))
        except sa.exc.IntegrityError:
            raise RoomError("another round was started at the same moment") from None
        return number

    def reveal(self, code: str, token: str, number: int, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self._host(code, token, now)
        query = (
            rounds.update()
            .where(rounds.c.code == code, rounds.c.number == number)
            .where(rounds.c.revealed_at.is_(None))
            .values(revealed_at=now)
        )
        with self.engine.begin() as conn:
            conn.execute(query)

    # -- everyone -----------------------------------------------------------------------------
    def current(self, code: str) -> Round | None:
        """The room's latest round, or None before the first."""
        query = (
            sa.select(rounds).where(rounds.c.code == code).order_by(rounds.c.number.desc()).limit(1)
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        if row is None:
            return None
        return Round(row.number, row.question, row.opened_at, row.revealed_at is not None)

    def asked(self, code: str) -> list[str]:
        """The question ids pushed so far, in order."""
        query = sa.select(rounds.c.question).where(rounds.c.code == code).order_by(rounds.c.number)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def revealed(self, code: str) -> dict[str, int]:
        """The questions whose answer has been revealed in the room: id -> its latest round."""
        query = (
            sa.select(rounds.c.question, sa.func.max(rounds.c.number))
            .where(rounds.c.code == code, rounds.c.revealed_at.is_not(None))
            .group_by(rounds.c.question)
        )
        with self.engine.connect() as conn:
            return {question: int(number) for question, number in conn.execute(query)}

    def counts(self, code: str, number: int) -> dict[str, int]:
        """How many students chose each answer in a round."""
        query = (
            sa.select(room_answers.c.choice, sa.func.count())
            .where(room_answers.c.code == code, room_answers.c.number == number)
            .group_by(room_answers.c.choice)
        )
        with self.engine.connect() as conn:
            return {choice: int(n) for choice, n in conn.execute(query)}

    def num_members(self, code: str) -> int:
        query = sa.select(sa.func.count()).select_from(members).where(members.c.code == code)
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    def leaderboard(self, code: str) -> list[Standing]:
        """Every member, most right answers (over revealed rounds) first, then by name."""
        right = sa.func.coalesce(
            sa.func.sum(sa.case((sa.and_(_REVEALED, room_answers.c.correct), 1), else_=0)), 0
        )
        query = (
            sa.select(
                members.c.nickname, right, sa.func.count(room_answers.c.number), members.c.student
            )
            .select_from(
                members.outerjoin(
                    room_answers,
                    sa.and_(
                        room_answers.c.code == members.c.code,
                        room_answers.c.student == members.c.student,
                    ),
                ).outerjoin(rounds, _REVEALED)
            )
            .where(members.c.code == code)
            .group_by(members.c.student, members.c.nickname)
        )
        with self.engine.connect() as conn:
            rows = [Standing(n, int(r), int(a), s) for n, r, a, s in conn.execute(query)]
        return sorted(rows, key=lambda s: (-s.right, s.nickname.lower()))

    def score(self, code: str, student: str) -> int:
        """One student's right answers over the revealed rounds (what the leaderboard counts)."""
        query = (
            sa.select(sa.func.count())
            .select_from(room_answers.join(rounds, _REVEALED))
            .where(
                room_answers.c.code == code,
                room_answers.c.student == student,
                room_answers.c.correct.is_(True),
            )
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    # -- a student ----------------------------------------------------------------------------
    def join(self, code: str, student: str, nickname: str, now: float | None = None) -> None:
        """Join (or rename oneself in) a room."""
        now = time.time() if now is None else now
        if not valid_learner(student):
            raise RoomError("not a learner id")
        self._open_room(code, now)
        name = clean_nickname(nickname)
        with self.engine.begin() as conn:
            done = conn.execute(
                members.update()
                .where(members.c.code == code, members.c.student == student)
                .values(nickname=name)
            ).rowcount
            if not done:
                try:
                    with conn.begin_nested():
                        row = {"code": code, "student": student, "nickname": name}
                        conn.execute(members.insert().values(**row, joined_at=now))
                except sa.exc.IntegrityError:
                    pass  # the same student joined from another tab at the same moment

    def nickname(self, code: str, student: str) -> str | None:
        query = sa.select(members.c.nickname).where(
            members.c.code == code, members.c.student == student
        )
        with self.engine.connect() as conn:
            return conn.execute(query).scalar()

    def answer(
        self,
        code: str,
        number: int,
        student: str,
        choice: str,
        correct: bool,
        now: float | None = None,
        *,
        options: Sequence[str],
    ) -> bool:
        """Record a student's answer to the current, unrevealed round. True if recorded, False
        if this student had answered it already (the first answer stands). `options`: the
        question's choices; anything else (a forged message can send any string of any length)
        is refused and counts nowhere."""
        if choice not in options:
            raise RoomError("that is not one of this question's choices")
        now = time.time() if now is None else now
        self._open_room(code, now)
        if self.nickname(code, student) is None:
            raise RoomError("join the room first")
        current = self.current(code)
        if current is None or current.number != number:
            raise RoomError("that round is over")
        if current.revealed:
            raise RoomError("the answer has been revealed: this round is closed")
        row = {"code": code, "number": number, "student": student, "choice": choice}
        try:
            with self.engine.begin() as conn:
                conn.execute(room_answers.insert().values(**row, correct=correct, answered_at=now))
        except sa.exc.IntegrityError:
            return False
        return True

    def answer_of(self, code: str, number: int, student: str) -> tuple[str, bool] | None:
        """(choice, correct) of a student's answer to a round, or None."""
        query = sa.select(room_answers.c.choice, room_answers.c.correct).where(
            room_answers.c.code == code,
            room_answers.c.number == number,
            room_answers.c.student == student,
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else (row.choice, bool(row.correct))
