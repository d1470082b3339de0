"""A lesson opened from the class quiz after the reveal of its prediction (ui/class_reveal.py,
ui/autoplay.py): it shows how the class answered in place of the question, shows the runs that
answer it, marks its animations to play once, and keeps following the room in the address bar.
A link to a room that is unknown, of another lesson, or has revealed nothing is reported as plain
text, and the lesson asks as usual."""

from __future__ import annotations

import pytest

from lessons.course import lesson
from lessons.quiz.rooms import Rooms
from lessons.quiz.store import open_store
from tests.apptest_util import charts, run_page


def _rooms() -> Rooms:
    return Rooms(open_store(None).engine)


def _revealed_room(lesson_id: str, choices: list[bool]) -> str:
    """A room on `lesson_id` whose first computed question was asked, answered by one student
    per entry of `choices` (True: the right answer) and revealed."""
    r = _rooms()
    code, token = r.open(lesson_id)
    q = next(q for q in lesson(lesson_id).bank().questions if q.computed)
    number = r.push(code, token, q.id)
    wrong = next(c for c in q.shown_choices if c != q.correct_choice)
    for i, right in enumerate(choices):
        r.join(code, f"student-{i:010d}", f"student {i}")
        r.answer(code, number, f"student-{i:010d}", q.correct_choice if right else wrong, right)
    r.reveal(code, token, number)
    return code


def _texts(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _predict_radios(at) -> list:
    return [r for r in at.radio if r.key and r.key.startswith("predict-")]


@pytest.fixture(scope="module")
def watch_from_class():
    code = _revealed_room("watch", [True, True, False])
    at = run_page(lesson("watch").page, query={"wch-room": code, "play": "1"}, timeout=180)
    return code, at


def test_the_lesson_shows_the_class_answers_in_place_of_the_question(watch_from_class):
    code, at = watch_from_class
    q = next(q for q in lesson("watch").bank().questions if q.computed)
    assert not _predict_radios(at)
    assert f"Your class: **2 of 3** predicted the answer, *{q.correct_choice}*." in _texts(at)
    assert not [b for b in at.button if b.key and b.key.endswith("-predict-skip")]
    assert at.metric  # the runs that answer it are shown


def test_its_first_animation_is_marked_to_play_once_and_the_link_keeps_the_room(watch_from_class):
    code, at = watch_from_class
    animated = [c for c in charts(at) if c.get("frames")]
    assert animated
    tokens = {c["layout"]["meta"].get("play") for c in animated}
    assert len(tokens) == 1 and None not in tokens
    assert "play" not in at.query_params  # a reload does not play it again
    assert at.query_params["wch-room"] == code
    at.run()  # a rerun keeps the same token (the browser plays each token once)
    assert {c["layout"]["meta"].get("play") for c in charts(at) if c.get("frames")} == tokens


def test_without_play_in_the_link_nothing_is_marked_to_play():
    at = run_page(lesson("watch").page, timeout=180)
    assert all("play" not in c["layout"].get("meta", {}) for c in charts(at) if c.get("frames"))


@pytest.mark.parametrize("how", ["unknown", "other lesson", "not revealed", "hostile"])
def test_a_bad_room_in_the_link_is_reported_and_the_lesson_asks(how):
    r = _rooms()
    if how == "unknown":
        raw = "ZZZZZ"
    elif how == "other lesson":
        raw = _revealed_room("policies", [True])
    elif how == "not revealed":
        raw, token = r.open("watch")
        r.push(raw, token, next(q for q in lesson("watch").bank().questions if q.computed).id)
    else:
        raw = "[x](http://e.x)\n# big"
    at = run_page(lesson("watch").page, query={"wch-room": raw}, timeout=180)
    (warning,) = [w.value for w in at.warning if "class room" in w.value]
    assert "](" not in warning and "\n#" not in warning
    assert _predict_radios(at)  # the lesson asks as usual
    assert "wch-room" not in at.query_params


def test_memory_opens_at_the_step_the_answer_is_about():
    from lessons.memory import lesson as memory
    from lessons.memory import predict

    code = _revealed_room("memory", [True])
    at = run_page(lesson("memory").page, query={"mem-room": code}, timeout=180)
    assert at.slider(key=memory.STEP_KEY).value == predict.answers()["step"]
    assert len(_predict_radios(at)) == 1  # two to predict: the class answered one of them


def test_reset_forgets_the_room(watch_from_class):
    code, at = watch_from_class
    at.button(key="wch-reset").click().run()
    assert _predict_radios(at)
    assert "wch-room" not in at.query_params
