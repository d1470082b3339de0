"""The frame pages: Start lists the lessons, Practice grades and awards XP once, Progress counts."""

from lessons.course import lessons
from tests.apptest_util import answer, quiz_key, run_page


def test_start_lists_every_lesson():
    at = run_page()
    text = " ".join(m.value for m in at.markdown)
    assert "Stepwise" in text
    links = [p.label for p in at.get("page_link")] if at.get("page_link") else []
    for number, lesson in enumerate(lessons(), start=1):
        assert any(lesson.title in str(link) for link in links) or lesson.title in str(
            [n.proto for n in at.get("page_link")]
        ), f"lesson {number} missing from the start page"


def test_sidebar_shows_xp():
    at = run_page()
    assert at.sidebar.metric[0].label == "XP"
    assert at.sidebar.metric[0].value == "0"


def test_practice_grades_and_awards_xp_once():
    lesson = lessons()[0]
    bank = lesson.bank()
    q = bank.questions[0]
    at = run_page("pages/practice.py")
    wrong = next(c for c in q.choices if c != q.correct_choice)
    answer(at, lesson.id, q.id, wrong)
    assert at.session_state["progress"].xp == 0
    assert any("Not quite" in e.value for e in at.error)
    answer(at, lesson.id, q.id, q.correct_choice)
    assert at.session_state["progress"].xp == 10
    assert any("+10 XP" in s.value for s in at.success)
    # AppTest loses the frame's sidebar after a page switch; tests/browser checks the sidebar.
    # Checking the same right answer again pays nothing more.
    answer(at, lesson.id, q.id, q.correct_choice)
    assert at.session_state["progress"].xp == 10


def test_empty_answer_asks_for_a_choice():
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    at = run_page("pages/practice.py")
    key = quiz_key(lesson.id, q.id)
    at.button(key=f"{key}-check").click()
    at.run()
    assert any("Pick an answer" in w.value for w in at.warning)
    assert at.session_state["progress"].xp == 0


def test_progress_page_counts_answers():
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    at = run_page("pages/practice.py")
    answer(at, lesson.id, q.id, q.correct_choice)
    at.switch_page("pages/progress.py")
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    row = table[table["Lesson"] == lesson.title].iloc[0]
    assert row["Questions right"] == f"1 of {len(lesson.bank().questions)}"
    assert at.metric[0].value == "10"
