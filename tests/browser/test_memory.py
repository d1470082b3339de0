"""The memory lesson in a browser: the block grid plays, pauses and keeps its frame in the link,
and the page is shot at a projector's 1280x720 and at 1920x1080 for a person to look at."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import (
    CHART,
    READY,
    chart_state,
    full_screenshot,
    open_page,
    play_then_pause,
    settled_state,
    space_plays_and_pauses,
)

pytestmark = pytest.mark.browser

GRID = 0  # the block grid is the lesson's first chart (key mem-pool)


def _frame_in_url(page: Page) -> str | None:
    values = parse_qs(urlparse(page.url).query).get("mem-pool-frame")
    return values[0] if values else None


def test_the_grid_plays_and_keeps_its_frame_in_the_link(page: Page, app_url: str, shots):
    open_page(page, f"{app_url}/memory", charts=None)
    chart = page.locator(CHART).nth(GRID)
    chart.scroll_into_view_if_needed()
    before = chart_state(page, GRID)
    assert before["frames"] > 100 and before["slider"] == 0
    play_then_pause(page, GRID, reach=4)
    page.wait_for_timeout(1200)
    shown = chart_state(page, GRID)
    assert shown["slider"] >= 4 and shown["z"][0] != before["z"][0]  # the cells changed
    assert _frame_in_url(page) == str(shown["slider"])
    other = page.context.new_page()
    open_page(other, page.url, charts=None)
    assert chart_state(other, GRID)["slider"] == shown["slider"]
    other.close()


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)], ids=["1280x720", "1920x1080"])
def test_the_lesson_at_projector_and_desktop_sizes(page: Page, app_url: str, shots, size):
    width, height = size
    page.set_viewport_size({"width": width, "height": height})
    open_page(page, f"{app_url}/memory?mem-step=43", charts=None)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    chart = page.locator(CHART).nth(GRID)
    chart.scroll_into_view_if_needed()
    assert "vllm:num_preemptions" in chart.text_content()
    chart.screenshot(path=str(shots / f"lesson_memory_grid_{width}x{height}.png"))
    page.screenshot(path=str(shots / f"lesson_memory_{width}x{height}_view.png"))
    full_screenshot(page, str(shots / f"lesson_memory_{width}x{height}.png"))


def test_the_arrow_keys_move_the_stepper_and_the_grid_follows(page: Page, app_url: str):
    """← and → belong to the stepper under the grid (its buttons' shortcuts) while the grid
    shows the stepper's step: one press is one step, and the grid shows that step. Once Space
    has played the grid to another frame, the arrows step on from that frame (a presenter who
    paused on a preemption goes on from there), and the stepper stays where it was."""
    from lessons.memory.lesson import Params, build, frame_of

    r = build(Params())
    open_page(page, f"{app_url}/memory", charts=None)
    chart = page.locator(CHART).nth(GRID)
    chart.scroll_into_view_if_needed()
    chart.hover()  # the keyboard drives the chart last pointed at
    page.keyboard.press("ArrowRight")
    stepper = page.get_by_role("slider", name="Step")
    expect(stepper).to_have_attribute("aria-valuetext", "2", timeout=30_000)
    page.wait_for_function(READY, timeout=30_000)
    assert settled_state(page, GRID)["slider"] == frame_of(r, 2)
    page.keyboard.press("ArrowLeft")
    expect(stepper).to_have_attribute("aria-valuetext", "1", timeout=30_000)
    page.wait_for_function(READY, timeout=30_000)
    assert settled_state(page, GRID)["slider"] == frame_of(r, 1)
    chart.hover()
    paused = space_plays_and_pauses(page, GRID, reach=6)
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(1500)
    assert settled_state(page, GRID)["slider"] == paused + 1
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(1500)
    assert settled_state(page, GRID)["slider"] == paused - 1
    expect(stepper).to_have_attribute("aria-valuetext", "1")
