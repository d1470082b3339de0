"""What only a browser shows: every page renders its charts, animations play and pause, a slider
press redraws the chart. One screenshot per page goes to test-output/screenshots/."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import CHART, chart_state, full_screenshot, open_page

pytestmark = pytest.mark.browser

# (url path, screenshot name, number of Plotly charts the page draws)
PAGES = [
    ("/", "start", 0),
    ("/step-cost", "lesson_step_cost", 3),
    ("/practice", "practice", 0),
    ("/playground", "playground", 1),
    ("/progress", "progress", 0),
]


@pytest.mark.parametrize(("path", "name", "charts"), PAGES, ids=[p[1] for p in PAGES])
def test_page_renders(page: Page, app_url: str, shots, path: str, name: str, charts: int):
    open_page(page, app_url + path, charts=charts)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.locator("[data-testid=stSidebar]")).to_contain_text("XP")
    for i in range(charts):
        title = page.locator(CHART).nth(i).locator(".gtitle")
        expect(title).not_to_be_empty()
    full_screenshot(page, str(shots / f"{name}.png"))


def _animated_chart_index(page: Page) -> int:
    return page.evaluate(
        "() => [...document.querySelectorAll('"
        + CHART
        + "')].findIndex(g => (g._transitionData?._frames || []).length > 1)"
    )


def test_lesson_animation_plays_and_pauses(page: Page, app_url: str, shots):
    open_page(page, app_url + "/step-cost", charts=3)
    index = _animated_chart_index(page)
    assert index >= 0, "no chart with frames on the lesson page"
    before = chart_state(page, index)
    assert before["frames"] > 10
    chart = page.locator(CHART).nth(index)
    chart.locator(".updatemenu-button", has_text="Play").first.click()
    page.wait_for_function(
        "i => (document.querySelectorAll('" + CHART + "')[i]._fullLayout._currentFrame|0) >= 3",
        arg=index,
        timeout=15_000,
    )
    chart.locator(".updatemenu-button", has_text="Pause").first.click()
    page.wait_for_timeout(300)
    paused = chart_state(page, index)
    page.wait_for_timeout(700)
    still = chart_state(page, index)
    assert paused["current"] == still["current"], "Pause did not stop the animation"
    assert still["y"] != before["y"], "frames advanced but the drawn data did not change"
    chart.screenshot(path=str(shots / "lesson_step_cost_animation.png"))


def test_slider_press_updates_chart(page: Page, app_url: str):
    open_page(page, app_url + "/step-cost", charts=3)
    xs = "JSON.stringify(document.querySelector('" + CHART + "')._fullData.map(t => t.x))"
    page.evaluate("() => { window.__xsBefore = " + xs + "; }")
    before = chart_state(page, 0)
    slider = page.get_by_role("slider", name="Prompt tokens in the step")
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function("() => " + xs + " !== window.__xsBefore", timeout=20_000)
    after = chart_state(page, 0)
    assert after["x"] != before["x"]


def test_quiz_answer_updates_sidebar_xp(page: Page, app_url: str, shots):
    from lessons.course import lessons

    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    open_page(page, app_url + "/practice")
    key = f"quiz-{lesson.id}-{q.id}".replace("_", "-")
    card = page.locator(f".st-key-{key}")
    card.get_by_text(q.correct_choice, exact=True).click()
    page.locator(f".st-key-{key}-check button").click()
    expect(page.get_by_text("Correct! +10 XP").first).to_be_visible(timeout=15_000)
    sidebar_xp = page.locator("[data-testid=stSidebar] [data-testid=stMetricValue]").first
    expect(sidebar_xp).to_have_text("10", timeout=15_000)
    page.screenshot(path=str(shots / "practice_answered.png"), full_page=False)
