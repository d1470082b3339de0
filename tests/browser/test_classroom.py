"""A live class quiz in real browsers: the instructor opens a room, two students join and
answer two rounds (one after the other, then both at once); every answer is counted once, no
student sees the answer before the reveal, and a second answer from a student changes nothing.
After a revealed prediction, the instructor runs it in the lesson, which plays by itself."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from lessons.course import lesson
from lessons.quiz.rooms import Rooms
from lessons.quiz.store import open_store
from tests.browser.classroom_driver import open_class, run_round
from tests.browser.helpers import READY

pytestmark = pytest.mark.browser


def test_a_class_answers_two_rounds(browser: Browser, app_url: str, shots):
    c = open_class(browser, app_url, 2)
    expect(c.teacher.get_by_text("2 students in the room")).to_be_visible(timeout=15_000)
    qr = c.teacher.locator(".st-key-class-qr img")  # the QR code, drawn and loaded
    expect(qr).to_be_visible()
    assert qr.evaluate("img => img.complete && img.naturalWidth") >= 200  # 29 modules x 8 px
    c.teacher.screenshot(path=str(shots / "class_room_opened.png"), full_page=True)
    for round_no in (1, 2):
        student = c.students[0]
        assert run_round(c, pick=round_no, together=round_no == 2) == 2
        # before the reveal, no student saw the answer; after it, each does
        expect(student.get_by_text("The answer:")).to_be_visible(timeout=15_000)
    c.teacher.screenshot(path=str(shots / "class_teacher.png"))
    c.students[0].screenshot(path=str(shots / "class_student.png"))
    rooms = Rooms(open_store(None).engine)
    assert [sum(rooms.counts(c.code, n).values()) for n in (1, 2)] == [2, 2]
    board = rooms.leaderboard(c.code)
    assert sorted(b.nickname for b in board) == ["student 0", "student 1"]
    assert all(b.answered == 2 for b in board)
    for page in (c.teacher, *c.students):
        page.context.close()


PLAYING = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(gd =>
  gd._transitionData && gd._transitionData._frameQueue && gd._transitionData._frameQueue.length
  && gd.layout.meta && gd.layout.meta.play)"""


TITLE_SHOWN = """() => {
  const gd = Array.from(document.querySelectorAll('.js-plotly-plot')).find(g =>
    g.layout && g.layout.meta && g.layout.meta.play);
  const header = document.querySelector('[data-testid=stHeader]');
  const top = gd.getBoundingClientRect().top;
  return top >= (header ? header.getBoundingClientRect().bottom : 0) - 1
    && top < window.innerHeight / 2;
}"""


def test_after_a_revealed_prediction_the_lesson_opens_answered_and_plays(
    browser: Browser, app_url: str, shots
):
    c = open_class(browser, app_url, 1, lesson="watch")
    # the watch lesson's first question is its prediction; the student picks its answer (its
    # place among the shown choices depends on the run, lessons/quiz/bank.py shown_choices)
    asked = lesson("watch").bank().questions[0]
    assert asked.computed
    assert run_round(c, pick=asked.shown_choices.index(asked.correct_choice)) == 1
    c.teacher.set_viewport_size({"width": 1280, "height": 720})  # a projector
    # a click while the room's page reruns (its live chart) can land on a button being
    # replaced: click once the page is idle (a loaded CI run once stayed on the room page)
    c.teacher.wait_for_function(READY, timeout=60_000)
    c.teacher.get_by_role("button", name=f"Run it in “{lesson('watch').title}”").click()
    teacher = c.teacher
    expect(teacher.get_by_text("Your class: 1 of 1")).to_be_visible(timeout=120_000)
    teacher.wait_for_function(PLAYING, timeout=60_000)  # the animation runs by itself
    teacher.wait_for_timeout(1500)  # scrolled into view: its title below the app's header
    assert teacher.evaluate(TITLE_SHOWN), "the playing chart's title is out of view"
    search = teacher.evaluate("() => location.search")
    assert "play=" not in search and f"wch-room={c.code}" in search and "present=1" in search
    # the prediction is not asked again (the quiz below it may be drawn by now)
    q = next(q for q in lesson("watch").bank(fill=False).questions if q.computed)
    predict_key = f"predict-watch-{q.id}".replace("_", "-")
    assert teacher.locator(f".st-key-{predict_key}").count() == 0
    assert teacher.locator(".st-key-wch-predict-skip").count() == 0
    teacher.screenshot(path=str(shots / "class_reveal_lesson.png"))
    card = teacher.get_by_text("Your class: 1 of 1")
    card.scroll_into_view_if_needed()
    teacher.screenshot(path=str(shots / "class_reveal_answers.png"))
    teacher.get_by_role("link", name=f"Back to room {c.code}").click()  # no sidebar: the way back
    expect(teacher.get_by_role("button", name="Ask the next question")).to_be_visible(
        timeout=60_000
    )
    for page in (teacher, *c.students):
        page.context.close()


def test_running_a_prediction_in_the_lesson_throws_nothing(browser: Browser, app_url: str):
    """Issue 37: during Run it in "lesson" the host's page threw "Cannot set properties of
    undefined (setting '_currentFrame')" ten times and more. Streamlit redraws a playing chart
    (Plotly.react with its frames: here at a window resize, as a projector's resolution is
    set) and Plotly starts a new animation state without stopping the play on the old one;
    once the chart is removed (back to the room), that play threw at every frame it had left.
    Every console error and page error of the whole flow is collected: none."""
    c = open_class(browser, app_url, 1, lesson="watch")
    errors: list[str] = []
    c.teacher.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    c.teacher.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    asked = lesson("watch").bank().questions[0]
    assert run_round(c, pick=asked.shown_choices.index(asked.correct_choice)) == 1
    teacher = c.teacher
    teacher.set_viewport_size({"width": 1280, "height": 720})
    teacher.wait_for_function(READY, timeout=60_000)
    teacher.get_by_role("button", name=f"Run it in “{lesson('watch').title}”").click()
    expect(teacher.get_by_text("Your class: 1 of 1")).to_be_visible(timeout=120_000)
    teacher.wait_for_function(PLAYING, timeout=60_000)
    teacher.set_viewport_size({"width": 1024, "height": 768})  # redrawn while it plays
    teacher.wait_for_timeout(1500)
    teacher.get_by_role("link", name=f"Back to room {c.code}").click()
    expect(teacher.get_by_role("button", name="Ask the next question")).to_be_visible(
        timeout=60_000
    )
    teacher.wait_for_timeout(4000)  # the frames the old play had left
    assert errors == []
    for page in (teacher, *c.students):
        page.context.close()
