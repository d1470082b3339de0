"""The class quiz page in AppTest: an instructor's session and a student's session (each
AppTest is its own learner) on one room, a bad or stale room code, and a host link."""

from __future__ import annotations

from lessons.course import lesson
from lessons.quiz.rooms import Rooms
from tests.apptest_util import run_page

PAGE = "views/classroom.py"


def _texts(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _teacher():
    at = run_page(PAGE, query={"lesson": "step_cost"}, timeout=90)
    at.button(key="class-open").click().run()
    assert not at.exception
    return at, at.query_params["room"]


def test_a_round_between_an_instructor_and_a_student():
    teacher, code = _teacher()
    assert f"Room {code}" in _texts(teacher) and "0 students" in _texts(teacher)
    student = run_page(PAGE, query={"room": code})
    assert not student.get("plotly_chart")  # a student sees no host controls or chart
    student.text_input(key="class-nick").input("Ann")
    student.button[0].click().run()
    assert "You are **Ann**" in _texts(student)
    assert "Waiting for the instructor" in _texts(student)
    teacher.button(key="class-next").click().run()
    q = lesson("step_cost").bank().questions[0]
    student.run()
    assert q.prompt in _texts(student)
    assert "The answer:" not in _texts(student)  # nothing given away before the reveal
    wrong = next(c for c in q.shown_choices if c != q.correct_choice)
    radio = next(r for r in student.radio if r.key.startswith("class-choice-"))
    radio.set_value(wrong)
    next(b for b in student.button if b.key.endswith("-send")).click().run()
    assert "Your answer is in" in _texts(student)
    teacher.run()
    assert "1 of 1 answered" in _texts(teacher)
    chart = teacher.get("plotly_chart")[0]
    assert '"x":[1]' in chart.proto.spec.replace(" ", "")
    teacher.button(key="class-reveal").click().run()
    student.run()
    assert f"**The answer:** {q.correct_choice}" in _texts(student)
    assert "You answered" in _texts(student)
    assert [c.value for c in student.main.caption] == ["Your score so far: 0 right of 1 revealed."]


def test_a_bad_or_unknown_code_is_reported_as_plain_text():
    for raw, says in (("[x](http://e.x)", "is not a room code"), ("ZZZZZ", "no open room")):
        at = run_page(PAGE, query={"room": raw})
        warning = at.warning[0].value
        assert says in warning and "](" not in warning
        assert at.button(key="class-open")  # the forms are still there


def test_the_host_link_is_folded_away_from_the_projector():
    teacher, _ = _teacher()
    (folded,) = [e for e in teacher.expander if "host link" in e.label]
    assert "&host=" in " ".join(c.value for c in folded.caption)
    assert not any("&host=" in c.value for c in teacher.main.caption if c not in folded.caption)
    assert folded.proto.expanded is False


def test_a_host_link_makes_a_new_session_the_host_and_leaves_the_address_bar():
    from lessons.quiz.store import open_store

    code, token = Rooms(open_store(None).engine).open("step_loop")
    at = run_page(PAGE, query={"room": code, "host": token})
    assert "host" not in at.query_params and f"Room {code}" in _texts(at)
    other = run_page(PAGE, query={"room": code, "host": "not-the-token"})
    assert f"Room {code}" not in _texts(other)  # a wrong token: a student's view


def test_after_a_revealed_prediction_the_host_runs_it_in_the_lesson_presenting():
    teacher = run_page(PAGE, query={"lesson": "watch"}, timeout=180)
    teacher.button(key="class-open").click().run()
    code = teacher.query_params["room"]
    teacher.button(key="class-next").click().run()
    q = next(q for q in lesson("watch").bank().questions if q.computed)
    assert q.prompt in _texts(teacher)  # the watch lesson's prediction is its first question
    assert not [b for b in teacher.button if b.key == "class-run"]  # not before the reveal
    teacher.button(key="class-reveal").click().run()
    teacher.button(key="class-run").click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    assert "revealed this one without an answer in" in _texts(teacher)  # the watch lesson
    assert teacher.query_params["wch-room"] == code and teacher.query_params["present"] == "1"
    assert teacher.toggle(key="w:present").value
    (back,) = [link for link in teacher.get("page_link") if f"room {code}" in link.proto.label]
    assert back.proto.page == "class"  # the class quiz page's url path
    teacher.switch_page("views/classroom.py")
    teacher.query_params["room"] = code
    teacher.run()  # the way back: the same session is the room's host again
    assert f"Room {code}" in _texts(teacher) and teacher.button(key="class-next")


def test_the_room_counts_one_student_in_the_singular():
    teacher, code = _teacher()
    student = run_page(PAGE, query={"room": code})
    student.text_input(key="class-nick").input("Ann")
    student.button[0].click().run()
    teacher.run()
    assert "1 student in the room" in _texts(teacher)


def test_the_leaderboard_is_a_plain_table_when_presenting_with_names_as_text():
    """A walk: on a projector the leaderboard stayed a data grid at 14 px (its canvas ignores
    the page's larger type). Presenting, it is a plain table; st.table reads Markdown, so a
    nickname is escaped there."""
    teacher = run_page(PAGE, query={"lesson": "step_cost", "present": "1"}, timeout=90)
    teacher.button(key="class-open").click().run()
    code = teacher.query_params["room"]
    student = run_page(PAGE, query={"room": code})
    student.text_input(key="class-nick").input("**Bo** [x](http://e.x)")
    student.button[0].click().run()
    teacher.button(key="class-next").click().run()
    q = lesson("step_cost").bank().questions[0]
    student.run()
    radio = next(r for r in student.radio if r.key.startswith("class-choice-"))
    radio.set_value(q.correct_choice)
    next(b for b in student.button if b.key.endswith("-send")).click().run()
    teacher.button(key="class-reveal").click().run()
    assert not teacher.dataframe and len(teacher.table) == 1
    (name,) = teacher.table[0].value["nickname"].tolist()
    assert name.startswith("\\*\\*Bo\\*\\* \\[x\\]") and "](" not in name


def test_a_long_nickname_is_cut_and_an_empty_code_is_asked_for():
    """A walk: a pasted nickname over 24 characters left the field empty (the browser drops a
    paste longer than max_chars) and the learner read 'a nickname is needed'; an empty code was
    called '“” is not a room code'."""
    from lessons.quiz.rooms import MAX_NICKNAME

    _, code = _teacher()
    at = run_page(PAGE)
    at.text_input(key="class-code").input("")
    at.text_input(key="class-nick").input("Ann")
    at.button[-1].click().run()
    assert "Type the room code first" in " ".join(e.value for e in at.error)
    student = run_page(PAGE, query={"room": code})
    assert not student.text_input(key="class-nick").max_chars  # 0: no limit in the browser
    student.text_input(key="class-nick").input("A" * 40)
    student.button[0].click().run()
    assert f"You are **{'A' * MAX_NICKNAME}**" in _texts(student)


def _texts_of(elements) -> str:
    return "\n".join(e.value for e in elements)


def test_an_unusable_progress_path_is_one_plain_message_not_a_traceback(tmp_path, monkeypatch):
    """Issue 37: with STEPWISE_PROGRESS_DB under a file, opening a room (or a room's link)
    raised StorePathError on screen. Now one plain-text message says why, the page stays up
    with a way to Practice, and a room whose database goes away mid-class says so too."""
    teacher, code = _teacher()  # a room, on the working database
    blocker = tmp_path / "[x](e.x)"
    blocker.write_text("a file, not a folder")
    monkeypatch.delenv("STEPWISE_DATABASE_URL")  # tests/conftest.py sets it; the path then counts
    monkeypatch.setenv("STEPWISE_PROGRESS_DB", str(blocker / "progress.db"))
    for query in ({}, {"room": code}, {"room": "ZZZZZ"}):
        at = run_page(PAGE, query=query)
        assert not at.exception, [e.value for e in at.exception]
        errors = [e.value for e in at.main.error]
        assert len(errors) == 1, (query, errors, [w.value for w in at.warning])
        message = " ".join(errors[0].split())
        assert "cannot be created" in message and "not a folder" in message
        assert "](" not in message  # the path is plain text
        assert [link.proto.page for link in at.get("page_link")] == ["practice"]
    lesson_page = run_page("views/lesson_watch.py", query={"wch-room": code}, timeout=180)
    assert not lesson_page.exception  # a lesson following the room asks as usual
    teacher.run()  # the host's room, its database gone mid-class
    assert not teacher.exception, [e.value for e in teacher.exception]
    assert "cannot be created" in " ".join(_texts_of(teacher.main.error).split())
