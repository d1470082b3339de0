"""Play and Pause as a learner presses them: Pause leaves nothing on the console (Plotly rejected
the interrupted animation's promise, and the console printed "Uncaught (in promise) undefined"
at every Pause), and Play goes on from the frame on screen when a chart opened at a later frame
(a link's frame, a stepper's step: Plotly knew no current frame and started from frame 0)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import CHART, chart_state, open_page, play_then_pause

pytestmark = pytest.mark.browser

FIRST_ANIMATED = (
    "() => [...document.querySelectorAll('" + CHART + "')]"
    ".findIndex(g => (g._transitionData?._frames || []).length > 5)"
)
KEY = (
    "i => { let n = document.querySelectorAll('" + CHART + "')[i];"
    " while (n) { for (const c of n.classList || []) if (c.startsWith('st-key-'))"
    " return c.slice(7); n = n.parentElement; } return null; }"
)


def _errors(page: Page) -> list[str]:
    seen: list[str] = []
    page.on("pageerror", lambda exc: seen.append(f"pageerror: {exc}"))
    page.on("console", lambda m: seen.append(m.text) if m.type == "error" else None)
    return seen


@pytest.mark.parametrize("path", ["/step-cost", "/chunked-prefill"])
def test_pause_leaves_the_console_clean(page: Page, app_url: str, path: str):
    errors = _errors(page)
    open_page(page, app_url + path, charts=None)
    index = page.evaluate(FIRST_ANIMATED)
    assert index >= 0, "no animation on the page"
    page.locator(CHART).nth(index).scroll_into_view_if_needed()
    play_then_pause(page, index, reach=2)
    page.wait_for_timeout(1500)
    assert [e for e in errors if "undefined" in e or "pageerror" in e] == []


def test_play_goes_on_from_the_frame_a_link_opened(page: Page, app_url: str):
    open_page(page, f"{app_url}/step-cost", charts=None)
    index = page.evaluate(FIRST_ANIMATED)
    key = page.evaluate(KEY, index)
    frames = chart_state(page, index)["frames"]
    start = frames // 2
    open_page(page, f"{app_url}/step-cost?{key}-frame={start}", charts=None)
    assert chart_state(page, index)["slider"] == start
    chart = page.locator(CHART).nth(index)
    chart.scroll_into_view_if_needed()
    chart.locator(".updatemenu-button", has_text="Play").first.click()
    page.wait_for_function(
        "([i, s]) => { const g = document.querySelectorAll('" + CHART + "')[i];"
        " return g._fullLayout.sliders[0].active !== s; }",
        arg=[index, start],
        timeout=20_000,
    )
    moved = chart_state(page, index)["slider"]
    chart.locator(".updatemenu-button", has_text="Pause").first.click()
    assert moved > start, f"Play went from frame {start} to {moved}, not on from {start}"


def test_a_question_next_to_its_chart_updates_the_xp_at_once(page: Page, app_url: str):
    """A Check inside a lesson's fragment (a question under its chart) reran only the fragment:
    the sidebar said 0 XP next to "Correct! +10 XP" until the next full run."""
    from lessons.course import lesson

    q = lesson("choosing_budget").bank().question("tiny_budget")
    open_page(page, f"{app_url}/choosing-budget", charts=None)
    card = page.locator(".st-key-quiz-choosing-budget-tiny-budget")
    card.scroll_into_view_if_needed()
    card.get_by_text(q.correct_choice, exact=True).click()
    page.locator(".st-key-quiz-choosing-budget-tiny-budget-check button").click()
    expect(page.get_by_text("Correct!").first).to_be_visible(timeout=30_000)
    xp = page.locator("[data-testid=stSidebar] [data-testid=stMetricValue]").first
    expect(xp).to_have_text("10", timeout=30_000)
