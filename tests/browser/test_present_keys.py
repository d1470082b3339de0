"""Presenter keys right after a control (issue 37, item 9): switching presenter mode on left the
focus on its toggle, so the next Space switched it off again and N did nothing; after a slider
move N was ignored too. Space, the arrows, N and P must work at once after either, a focused
slider keeps its own arrows, and Space on a focused presenter toggle plays, not switches off."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import CHART, READY, chart_state, open_page, space_plays_and_pauses

pytestmark = pytest.mark.browser

ANIM = 2  # the step-cost lesson's animation (key cost-anim)
SLIDER = "Prompt tokens in the step"
HEADS = "[data-testid=stMain] :is(h1, h2, h3)"
AT_A_HEADING = (  # whether a section heading sits at the top line, under the app's header
    "s => { const line = document.querySelector('[data-testid=stHeader]')"
    ".getBoundingClientRect().bottom; return [...document.querySelectorAll(s)]"
    ".some(h => Math.abs(h.getBoundingClientRect().top - line) <= 8); }"
)
SCROLLED = "() => document.querySelector('[data-testid=stMain]').scrollTop"


@pytest.fixture
def small(page: Page) -> Page:
    page.set_viewport_size({"width": 1280, "height": 720})
    return page


def _drawn(page: Page, charts: int = 3) -> None:
    """Wait until the rerun has finished and its charts are drawn again."""
    page.wait_for_function(READY, timeout=30_000)
    page.wait_for_function(
        "n => [...document.querySelectorAll('" + CHART + "')].filter(g => g._fullLayout)"
        ".length >= n",
        arg=charts,
        timeout=30_000,
    )
    page.wait_for_timeout(500)


def _n_goes_to_the_next_section(page: Page) -> None:
    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
    page.wait_for_timeout(300)
    before = page.evaluate(SCROLLED)
    page.keyboard.press("n")
    page.wait_for_timeout(600)
    assert page.evaluate(SCROLLED) > before, "N did not move to the next section"
    assert page.evaluate(AT_A_HEADING, HEADS)
    page.keyboard.press("p")  # and P back
    page.wait_for_timeout(600)
    assert page.evaluate(SCROLLED) < before + 1 or page.evaluate(AT_A_HEADING, HEADS)


def _presenting(page: Page) -> None:
    expect(page.get_by_role("switch", name="Presenter mode")).to_be_checked()
    expect(page.locator("[data-testid=stSidebar]")).to_be_hidden()
    assert "present=1" in page.url


def test_keys_work_right_after_switching_presenter_mode_on(small: Page, app_url: str, shots):
    page = small
    open_page(page, f"{app_url}/step-cost?cost-tokens=1", charts=3)
    page.get_by_text("Presenter mode").click()
    page.wait_for_function("() => location.search.includes('present=1')", timeout=15_000)
    _drawn(page)
    _presenting(page)
    # the click hands the keys back to the page: the toggle does not keep the focus
    expect(page.get_by_role("switch", name="Presenter mode")).not_to_be_focused()
    _n_goes_to_the_next_section(page)
    # Space plays (and pauses) the animation on screen; presenter mode stays on
    page.locator(CHART).nth(ANIM).scroll_into_view_if_needed()
    space_plays_and_pauses(page, ANIM, reach=3)
    _presenting(page)
    at = chart_state(page, ANIM)["slider"]
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "([i, n]) => document.querySelectorAll('" + CHART + "')[i]._fullLayout.sliders[0]"
        ".active === n",
        arg=[ANIM, at - 1],
        timeout=15_000,
    )
    page.screenshot(path=str(shots / "present_keys_after_toggle.png"))
    # the toggle focused by the keyboard (Tab): Space still plays, the class keeps its screen
    page.get_by_role("switch", name="Presenter mode").focus()
    space_plays_and_pauses(page, ANIM, reach=at + 2)
    _presenting(page)
    # Enter on the focused toggle switches it off: it stays usable without a mouse
    page.keyboard.press("Enter")
    page.wait_for_function("() => !location.search.includes('present=')", timeout=15_000)
    expect(page.get_by_role("switch", name="Presenter mode")).not_to_be_checked()


def test_keys_work_right_after_moving_a_slider(small: Page, app_url: str, shots):
    page = small
    open_page(page, f"{app_url}/step-cost?present=1&cost-tokens=1", charts=3)
    slider = page.get_by_role("slider", name=SLIDER)
    slider.focus()
    slider.press("ArrowRight")
    expect(slider).not_to_have_attribute("aria-valuetext", "1")
    _drawn(page)
    moved = slider.get_attribute("aria-valuetext")
    # the focused slider keeps its arrows
    expect(slider).to_be_focused()
    slider.press("ArrowRight")
    expect(slider).not_to_have_attribute("aria-valuetext", moved)
    _drawn(page)
    moved = slider.get_attribute("aria-valuetext")
    expect(slider).to_be_focused()
    # Space plays and pauses the animation in view, and leaves the slider where it is
    page.locator(CHART).nth(ANIM).scroll_into_view_if_needed()
    start = chart_state(page, ANIM)
    assert start["slider"] + 2 < start["frames"], start["slider"]
    space_plays_and_pauses(page, ANIM, reach=start["slider"] + 2)
    assert slider.get_attribute("aria-valuetext") == moved
    # N and P move between sections
    _n_goes_to_the_next_section(page)
    page.screenshot(path=str(shots / "present_keys_after_slider.png"))
    assert slider.get_attribute("aria-valuetext") == moved
