"""A learner's progress in a real browser: it survives a reload and a server restart, and another
browser (a new context, so no cookie) is another learner who starts at 0.

The app keeps the learner's id in a cookie that a script on the page sets (ui/state.py); only a
browser runs that script and sends the cookie back, so only a browser can test this. The servers
here get a database file of their own, the same one for both, as a restarted server would.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from lessons.course import lessons
from lessons.quiz.store import Store, sqlite_url, valid_learner
from tests.browser import server
from tests.browser.helpers import READY, open_page

pytestmark = pytest.mark.browser

ROOT = server.ROOT
COOKIE = "stepwise_learner"


def _sidebar_xp(page: Page):
    return page.locator("[data-testid=stSidebar] [data-testid=stMetricValue]").first


def _start(name: str) -> tuple:
    log = ROOT / "test-output" / f"server-{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        return server.start(log)
    except RuntimeError as exc:
        pytest.fail(f"{exc}; see {log}")


def _open(page: Page, url: str) -> None:
    open_page(page, url)
    page.wait_for_function(READY)


def _cookie(page: Page) -> str | None:
    return next((c["value"] for c in page.context.cookies() if c["name"] == COOKIE), None)


def test_progress_survives_reload_and_restart_and_each_browser_is_a_learner(
    browser, browser_context_args, monkeypatch, tmp_path, shots
):
    db = tmp_path / "progress.db"
    monkeypatch.setenv("STEPWISE_DATABASE_URL", sqlite_url(db))  # the servers inherit it
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    key = f"quiz-{lesson.id}-{q.id}".replace("_", "-")

    proc, url = _start("progress-1")
    context = browser.new_context(**browser_context_args)
    try:
        page = context.new_page()
        _open(page, url)  # a fresh server's first session opens "/" (see conftest.app_url)
        _open(page, url + "/practice")
        expect(_sidebar_xp(page)).to_have_text("0")
        card = page.locator(f".st-key-{key}")
        card.get_by_text(q.correct_choice, exact=True).click()
        page.locator(f".st-key-{key}-check button").click()
        expect(page.get_by_text("Correct! +10 XP").first).to_be_visible(timeout=15_000)
        expect(_sidebar_xp(page)).to_have_text("10", timeout=15_000)
        learner = _cookie(page)
        assert valid_learner(learner), "the page did not set the learner cookie"

        page.reload()
        page.wait_for_function(READY, timeout=45_000)
        expect(_sidebar_xp(page)).to_have_text("10", timeout=15_000)
        expect(
            page.get_by_text("You answered this before, right at the first answer.")
        ).to_be_visible()
        assert _cookie(page) == learner
    finally:
        server.stop(proc)

    proc, url = _start("progress-2")  # a restart: a new process on the same database file
    try:
        page.goto(url)
        page.wait_for_function(READY, timeout=45_000)
        expect(_sidebar_xp(page)).to_have_text("10", timeout=15_000)
        page.screenshot(path=str(shots / "progress_after_restart.png"))

        stranger = browser.new_context(**browser_context_args)
        try:
            other = stranger.new_page()
            _open(other, url + "/progress")
            expect(_sidebar_xp(other)).to_have_text("0")
            # the page writes the cookie from a script once the run is drawn: wait for it
            for _ in range(150):
                if _cookie(other) is not None:
                    break
                other.wait_for_timeout(100)
            assert _cookie(other) not in (None, learner)
        finally:
            stranger.close()
    finally:
        context.close()
        server.stop(proc)

    store = Store.from_url(sqlite_url(db))
    try:
        assert [a.item for a in store.answers(learner)] == [f"q:{lesson.id}:{q.id}"]
    finally:
        store.dispose()
