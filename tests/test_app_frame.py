"""The frame pages: Start lists the lessons, Practice grades and awards XP for the first answer,
Progress counts; the learner id and the database the frame picks."""

import pytest
from streamlit.testing.v1 import AppTest

from lessons.course import lessons
from lessons.quiz.store import valid_learner
from tests.apptest_util import APP, answer, quiz_key, run_page


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


def test_practice_grades_and_awards_xp_for_the_first_answer_only():
    lesson = lessons()[0]
    bank = lesson.bank()
    q, other = bank.questions[0], bank.questions[1]
    at = run_page("views/practice.py")
    assert any("Only your first answer" in c.value for c in at.caption)  # the rule, on screen
    wrong = next(c for c in q.choices if c != q.correct_choice)
    answer(at, lesson.id, q.id, wrong)
    assert at.session_state["progress"].xp == 0
    assert any("Not quite" in e.value for e in at.error)
    assert any(q.explanation in m.value for m in at.markdown)  # explained after a wrong answer
    answer(at, lesson.id, q.id, q.correct_choice)
    assert at.session_state["progress"].xp == 0  # right, but not at the first answer
    assert any("not your first answer" in s.value for s in at.success)
    assert any(q.explanation in m.value for m in at.markdown)
    answer(at, lesson.id, other.id, other.correct_choice)
    assert at.session_state["progress"].xp == 10
    assert any("+10 XP" in s.value for s in at.success)
    # AppTest loses the frame's sidebar after a page switch; tests/browser checks the sidebar.
    # Checking the same right answer again pays nothing more, but is recorded.
    answer(at, lesson.id, other.id, other.correct_choice)
    assert at.session_state["progress"].xp == 10
    assert len(at.session_state["progress"].log) == 4


def test_empty_answer_asks_for_a_choice():
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    at = run_page("views/practice.py")
    key = quiz_key(lesson.id, q.id)
    at.button(key=f"{key}-check").click()
    at.run()
    assert any("Pick an answer" in w.value for w in at.warning)
    assert at.session_state["progress"].xp == 0


def test_progress_page_counts_answers():
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    at = run_page("views/practice.py")
    answer(at, lesson.id, q.id, q.correct_choice)
    at.switch_page("views/progress.py")
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    row = table[table["Lesson"] == lesson.title].iloc[0]
    assert row["Right at the first answer"] == f"1 of {len(lesson.bank().questions)}"
    assert row["Questions answered"] == f"1 of {len(lesson.bank().questions)}"
    assert at.metric[0].value == "10"
    rules = " ".join(m.value for m in at.markdown)
    assert "**first** answer is right" in rules and "right or wrong" in rules


def test_the_learner_id_stays_put_across_reruns_and_each_apptest_is_a_new_learner():
    from ui.state import LEARNER_KEY

    at = run_page("views/practice.py")
    learner = at.session_state[LEARNER_KEY]
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    answer(at, lesson.id, q.id, q.correct_choice)
    at.switch_page("views/progress.py").run()
    assert at.session_state[LEARNER_KEY] == learner
    assert at.metric[0].value == "10"
    other = run_page()
    assert other.session_state[LEARNER_KEY] != learner
    assert other.sidebar.metric[0].value == "0"


def test_progress_survives_a_new_session_of_the_same_learner():
    """A reload is a new session with the same cookie: simulated by seeding the learner id."""
    from ui.state import LEARNER_KEY

    at = run_page("views/practice.py")
    learner = at.session_state[LEARNER_KEY]
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    answer(at, lesson.id, q.id, q.correct_choice)
    again = AppTest.from_file(APP, default_timeout=30)
    again.session_state[LEARNER_KEY] = learner
    again.run()
    assert again.sidebar.metric[0].value == "10"
    assert again.session_state["progress"].xp == 10


@pytest.mark.parametrize(
    "cookie", ["'; document.cookie='x", "short", "a" * 65, "abc def ghi jkl mno", "é" * 20]
)
def test_a_malformed_cookie_gets_a_new_id_and_the_cookie_is_set(monkeypatch, cookie):
    import ui.state

    monkeypatch.setattr(ui.state, "_cookie", lambda: cookie)
    at = run_page()
    learner = at.session_state[ui.state.LEARNER_KEY]
    assert learner != cookie and valid_learner(learner)
    scripts = [h.proto.body for h in at.get("html")]
    assert any(f"stepwise_learner={learner};" in body for body in scripts), scripts
    assert all("document.cookie='x" not in body for body in scripts)


def test_a_valid_cookie_is_the_learner_and_is_not_set_again(monkeypatch):
    import ui.state

    cookie = "A" * 24
    monkeypatch.setattr(ui.state, "_cookie", lambda: cookie)
    at = run_page()
    assert at.session_state[ui.state.LEARNER_KEY] == cookie
    scripts = [h.proto.body for h in at.get("html")]
    assert scripts, "the frame sends the page scripts (ui/scripts.py)"
    assert not [body for body in scripts if "document.cookie" in body], scripts


def test_secrets_url_selects_the_database(tmp_path, monkeypatch):
    """Without STEPWISE_DATABASE_URL, `[connections.sql] url` in the secrets picks the store."""
    from lessons.quiz.store import Store, sqlite_url

    monkeypatch.delenv("STEPWISE_DATABASE_URL")
    url = sqlite_url(tmp_path / "class.db")
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets["connections"] = {"sql": {"url": url}}
    at.run()
    at.switch_page("views/practice.py").run()
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    answer(at, lesson.id, q.id, q.correct_choice)
    assert at.session_state["progress"].xp == 10
    check = Store.from_url(url)
    try:
        assert check.count() == 1
    finally:
        check.dispose()


def test_an_unreachable_database_degrades_to_a_warning(monkeypatch):
    """The database is down: pages still run, a Check still grades and explains, the session
    holds the answer and its XP and the card says it is not saved yet (tests/test_store_faults.py
    writes it once the database is back), and the sidebar says the answers cannot be saved."""
    monkeypatch.setenv("STEPWISE_DATABASE_URL", "postgresql+psycopg://nobody@127.0.0.1:1/none")
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    at = run_page("views/practice.py")
    answer(at, lesson.id, q.id, q.correct_choice)
    assert not at.exception
    assert any("Correct" in s.value for s in at.success)
    assert any(q.explanation in m.value for m in at.markdown)
    assert at.session_state["progress"].xp == 10
    assert any("Not saved yet" in w.value for w in at.warning)
    fresh = run_page()
    assert any("cannot be saved" in w.value for w in fresh.sidebar.warning)
