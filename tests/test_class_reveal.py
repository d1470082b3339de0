"""A lesson opened from the class quiz after the reveal of its prediction (ui/class_reveal.py,
ui/autoplay.py): it shows how the class answered in place of the question, shows the runs that
answer it, marks its animations to play once, and keeps following the room in the address bar.
A link to a room that is unknown, of another lesson, or has revealed nothing is reported as plain
text, and the lesson asks as usual."""

from __future__ import annotations

import pytest

from lessons.course import lesson
from lessons.kit import story
from lessons.quiz.rooms import Rooms
from lessons.quiz.store import open_store
from tests.apptest_util import charts, run_page


def _rooms() -> Rooms:
    return Rooms(open_store(None).engine)


def _revealed_room(lesson_id: str, choices: list[bool], questions: int = 1) -> str:
    """A room on `lesson_id` whose first `questions` computed questions were asked, answered
    by one student per entry of `choices` (True: the right answer) and revealed."""
    r = _rooms()
    code, token = r.open(lesson_id)
    for i in range(len(choices)):
        r.join(code, f"student-{i:010d}", f"student {i}")
    for q in [q for q in lesson(lesson_id).bank().questions if q.computed][:questions]:
        number = r.push(code, token, q.id)
        wrong = next(c for c in q.shown_choices if c != q.correct_choice)
        for i, right in enumerate(choices):
            choice = q.correct_choice if right else wrong
            r.answer(code, number, f"student-{i:010d}", choice, right, options=q.shown_choices)
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
        raw = "#a\n[b](c)"  # shorter than the cut: all of it is shown, as plain text
    at = run_page(lesson("watch").page, query={"wch-room": raw}, timeout=180)
    (warning,) = [w.value for w in at.warning if "class room" in w.value]
    assert "](" not in warning and "\n#" not in warning
    if how == "hostile":  # shown whole, but as plain text
        assert "\\#a \\[b\\]\\(c\\)" in warning  # escaped: Markdown shows it as typed
    assert _predict_radios(at)  # the lesson asks as usual
    assert "wch-room" not in at.query_params


@pytest.mark.parametrize("revealed", [1, 2])
def test_memory_waits_for_every_prediction_before_it_answers(revealed):
    """Two predictions: with one revealed in class, the other is still asked and nothing gives
    it away; with both, the stepper opens at the step the answer is about."""
    from lessons.memory import lesson as memory
    from lessons.memory import predict

    code = _revealed_room("memory", [True], questions=revealed)
    at = run_page(lesson("memory").page, query={"mem-room": code, "play": "1"}, timeout=180)
    step = at.slider(key=memory.STEP_KEY).value
    assert len(_predict_radios(at)) == 2 - revealed
    wait = story.text(lesson("memory").text_path, "rest-wait")
    animated = [c for c in charts(at) if c.get("frames")]
    assert animated
    if revealed == 1:
        assert wait in _texts(at) and step != predict.answers()["step"]
        # the revealed answer's explanation does not give the other one (its step) away
        q1 = next(q for q in lesson("memory").bank().questions if q.computed)
        assert f"step {predict.answers()['step']}" not in q1.explanation
        assert all("play" not in c["layout"]["meta"] for c in animated)  # no spoiler
    else:
        assert wait not in _texts(at) and step == predict.answers()["step"]
        assert all(c["layout"]["meta"].get("play") for c in animated)


def test_a_lesson_seen_before_the_class_link_follows_the_link():
    at = run_page(lesson("watch").page, timeout=180)
    assert _predict_radios(at)
    code = _revealed_room("watch", [True])
    at.query_params["wch-room"] = code
    at.run()
    assert not _predict_radios(at) and "Your class: **1 of 1**" in _texts(at)
    other = _revealed_room("watch", [False, False])  # a second class, same session
    at.query_params["wch-room"] = other
    at.run()
    assert "Your class: **0 of 2**" in _texts(at) and at.query_params["wch-room"] == other


def test_back_to_the_opening_run_keeps_the_class_room():
    code = _revealed_room("watch", [True])
    at = run_page(lesson("watch").page, query={"wch-room": code, "wch-itl": "50"}, timeout=180)
    at.button(key="wch-predict-opening").click().run()
    assert not _predict_radios(at) and "Your class: **1 of 1**" in _texts(at)
    assert at.query_params["wch-room"] == code


def test_reset_forgets_the_room():
    code = _revealed_room("watch", [True])
    at = run_page(lesson("watch").page, query={"wch-room": code}, timeout=180)
    at.button(key="wch-reset").click().run()
    assert _predict_radios(at)
    assert "wch-room" not in at.query_params


def test_back_to_the_opening_run_opens_memory_at_the_answer_step():
    from lessons.memory import lesson as memory
    from lessons.memory import predict

    code = _revealed_room("memory", [True], questions=2)
    at = run_page(lesson("memory").page, query={"mem-room": code, "mem-policy": "priority"})
    at.button(key="mem-predict-opening").click().run()
    assert not _predict_radios(at) and at.query_params["mem-room"] == code
    assert at.slider(key=memory.STEP_KEY).value == predict.answers()["step"]
