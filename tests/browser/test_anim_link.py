"""An animation's frame lives in the link: a link opens the animation at its frame, and playing
or pausing writes the frame shown into the address bar. Plotly plays frames in the browser, so
only a browser can check this."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page

from tests.browser.helpers import (
    CHART,
    chart_state,
    open_page,
    play_then_pause,
    space_plays_and_pauses,
)

pytestmark = pytest.mark.browser

ANIM = 2  # the step-cost lesson's third chart is its animation (key cost-anim)


def _frame_in_url(page: Page) -> str | None:
    values = parse_qs(urlparse(page.url).query).get("cost-anim-frame")
    return values[0] if values else None


def test_a_link_opens_the_animation_at_its_frame(page: Page, app_url: str):
    open_page(page, f"{app_url}/step-cost?cost-anim-frame=5", charts=3)
    state = chart_state(page, ANIM)
    assert state["slider"] == 5
    page.wait_for_timeout(1200)
    assert _frame_in_url(page) == "5"


def test_playing_writes_the_frame_into_the_link(page: Page, app_url: str):
    open_page(page, f"{app_url}/step-cost?cost-tokens=1", charts=3)
    chart = page.locator(CHART).nth(ANIM)
    chart.scroll_into_view_if_needed()
    assert chart_state(page, ANIM)["slider"] == 0  # opens at the controls' 1 token
    assert _frame_in_url(page) is None
    play_then_pause(page, ANIM, reach=3)
    page.wait_for_timeout(1200)
    shown = chart_state(page, ANIM)["slider"]
    assert shown >= 3 and _frame_in_url(page) == str(shown)
    # The link reopens the same frame in a new session.
    link = page.url
    other = page.context.new_page()
    open_page(other, link, charts=3)
    assert chart_state(other, ANIM)["slider"] == shown
    other.close()


def test_the_address_bar_follows_the_controls(page: Page, app_url: str):
    """A control moved on screen is in the link at once, and back at its default it leaves."""
    open_page(page, f"{app_url}/step-cost", charts=3)
    slider = page.get_by_role("slider", name="Prompt tokens in the step")
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function("() => location.search.includes('cost-tokens=3072')", timeout=15_000)
    slider.press("ArrowLeft")
    page.wait_for_function("() => !location.search.includes('cost-tokens')", timeout=15_000)


def _slider_is(page: Page, value: int) -> None:
    page.wait_for_function(
        "([i, v]) => document.querySelectorAll('" + CHART + "')[i]._fullLayout.sliders[0].active"
        " === v",
        arg=[ANIM, value],
        timeout=15_000,
    )


def test_the_keyboard_steps_plays_and_pauses_the_animation_pointed_at(page: Page, app_url: str):
    """The arrows step the animation last pointed at, and Space plays and pauses it, without
    an error in the page (Plotly rejects the promise of the play that Space interrupts)."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_page(page, f"{app_url}/step-cost?cost-tokens=1", charts=3)
    chart = page.locator(CHART).nth(ANIM)
    chart.scroll_into_view_if_needed()
    chart.hover()
    for want in (1, 2):
        page.keyboard.press("ArrowRight")
        _slider_is(page, want)
    page.keyboard.press("ArrowLeft")
    _slider_is(page, 1)
    paused = space_plays_and_pauses(page, ANIM, reach=4)
    frames = chart_state(page, ANIM)["frames"]
    assert paused < frames - 1 or frames <= 5  # it stopped before the end
    assert errors == []
