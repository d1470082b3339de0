"""The class quiz's storage (lessons/quiz/rooms.py), on SQLite and on PostgreSQL: a round's
answers are counted once each, whoever sends them twice and from however many threads; only
the host runs the room; the answer is not given before the reveal; rooms close on their own."""

from __future__ import annotations

import secrets
import threading

import pytest

from lessons.quiz.rooms import (
    CLOSE_AFTER_S,
    RoomError,
    Rooms,
    clean_code,
    clean_nickname,
)
from lessons.quiz.store import create_engine, sqlite_url


@pytest.fixture(params=["sqlite", "postgresql"])
def rooms(request, tmp_path):
    if request.param == "sqlite":
        url = sqlite_url(tmp_path / "progress.db")
    else:
        url = request.getfixturevalue("pg_url")
    engine = create_engine(url)
    yield Rooms(engine)
    engine.dispose()


def _student() -> str:
    return secrets.token_urlsafe(18)


CHOICES = ("first", "second", "a", "b")  # the choices of the questions these tests push


def test_a_round_from_open_to_reveal(rooms):
    code, token = rooms.open("step_loop", now=100.0)
    assert clean_code(code.lower()) == code and rooms.room(code).lesson == "step_loop"
    ann, bob = _student(), _student()
    rooms.join(code, ann, "  Ann \n Lee ", now=101)
    rooms.join(code, bob, "Bob", now=101)
    assert rooms.nickname(code, ann) == "Ann Lee" and rooms.num_members(code) == 2
    n = rooms.push(code, token, "order", now=102)
    assert n == 1 and rooms.current(code).question == "order"
    assert rooms.answer(code, 1, ann, "first", True, now=103, options=CHOICES)
    assert not rooms.answer(
        code, 1, ann, "second", False, now=104, options=CHOICES
    )  # the first one stands
    assert rooms.answer(code, 1, bob, "second", False, now=104, options=CHOICES)
    assert rooms.counts(code, 1) == {"first": 1, "second": 1}
    assert rooms.answer_of(code, 1, ann) == ("first", True)
    board = rooms.leaderboard(code)
    assert [s.right for s in board] == [0, 0]  # nothing counts before the reveal
    assert rooms.score(code, ann) == 0
    rooms.reveal(code, token, 1, now=105)
    late = _student()
    rooms.join(code, late, "Cy", now=105)
    with pytest.raises(RoomError, match="revealed"):
        rooms.answer(code, 1, late, "first", True, now=106, options=CHOICES)
    board = rooms.leaderboard(code)
    assert (board[0].nickname, board[0].right, board[0].answered) == ("Ann Lee", 1, 1)
    assert [(s.nickname, s.right) for s in board[1:]] == [("Bob", 0), ("Cy", 0)]
    assert [rooms.score(code, s.student) for s in board] == [s.right for s in board] == [1, 0, 0]
    assert rooms.push(code, token, "budget", now=107) == 2
    with pytest.raises(RoomError, match="round is over"):
        rooms.answer(code, 1, bob, "first", True, now=108, options=CHOICES)
    assert rooms.asked(code) == ["order", "budget"]


def test_only_the_host_runs_the_room_and_only_members_answer(rooms):
    code, token = rooms.open("step_loop", now=0.0)
    near = token[:-1] + ("B" if token.endswith("A") else "A")  # one character off
    for wrong in ("", "x", near):
        assert not rooms.is_host(code, wrong)
        with pytest.raises(RoomError, match="only the instructor"):
            rooms.push(code, wrong, "order", now=1)
    rooms.push(code, token, "order", now=1)
    with pytest.raises(RoomError, match="join"):
        rooms.answer(code, 1, _student(), "a", True, now=2, options=CHOICES)
    with pytest.raises(RoomError, match="nickname"):
        rooms.join(code, _student(), "   ", now=2)
    with pytest.raises(RoomError, match="no room"):
        rooms.join("ZZZZZ", _student(), "Ann", now=2)


def test_rooms_close_on_their_own(rooms):
    code, token = rooms.open("step_loop", now=0.0)
    student = _student()
    rooms.join(code, student, "Ann", now=1)
    later = CLOSE_AFTER_S + 1
    assert rooms.room(code).closed(later)
    for act in (
        lambda: rooms.join(code, _student(), "Bob", now=later),
        lambda: rooms.push(code, token, "order", now=later),
    ):
        with pytest.raises(RoomError, match="closed"):
            act()


def test_many_students_at_once_are_each_counted_once(rooms):
    code, token = rooms.open("step_loop", now=0.0)
    students = [_student() for _ in range(12)]
    for i, s in enumerate(students):
        rooms.join(code, s, f"s{i}", now=1)
    rooms.push(code, token, "order", now=2)
    recorded: list[bool] = []
    lock = threading.Lock()

    def send(s: str, choice: str) -> None:
        ok = rooms.answer(code, 1, s, choice, choice == "a", now=3, options=CHOICES)
        with lock:
            recorded.append(ok)

    # every student sends twice (two tabs), all at once
    threads = [threading.Thread(target=send, args=(s, c)) for s in students for c in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(recorded) == len(students)
    assert sum(rooms.counts(code, 1).values()) == len(students)


def test_codes_and_nicknames_are_cleaned():
    assert clean_code(" ab cd e ") == "ABCDE"
    assert clean_code("ABCD0") is None and clean_code("<script>") is None
    assert clean_nickname("x" * 100) == "x" * 24


@pytest.mark.parametrize("forged", ["c", "x" * 100_000, "", "first "])
def test_only_a_question_s_own_choices_are_recorded(rooms, forged):
    """Issue 37, fault 8: a scripted websocket message stored any string of any length as a
    choice, and it counted in "N of M answered". Now it is refused and counts nowhere."""
    code, token = rooms.open("step_loop", now=0.0)
    student = _student()
    rooms.join(code, student, "ann", now=1)
    rooms.push(code, token, "order", now=2)
    with pytest.raises(RoomError, match="not one of this question's choices"):
        rooms.answer(code, 1, student, forged, False, now=3, options=CHOICES)
    assert rooms.counts(code, 1) == {} and rooms.answer_of(code, 1, student) is None
    assert rooms.answer(code, 1, student, "a", True, now=4, options=CHOICES)  # a real one still
