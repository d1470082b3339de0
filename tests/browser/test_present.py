"""Presenter mode and chart exports, as only a browser shows them: at 1280x720 the sidebar is
gone, every chart text is at least 18 px, only the main controls are drawn, the keyboard alone
drives the animation and moves between sections, and every chart has PNG and SVG buttons whose
downloads are real images. Every lesson is drawn at 1280x720 and 1920x1080 (screenshots to look
at), and a page works inside a real iframe with `?embed=true`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from lessons.course import lessons
from tests.browser.helpers import (
    CHART,
    TITLE_GAPS,
    chart_state,
    open_page,
    outside,
    space_plays_and_pauses,
    watch_requests,
)

pytestmark = pytest.mark.browser

ANIM = 2  # the step-cost lesson's animation (key cost-anim)
SMALLEST_TEXT = (
    "() => Math.min(...[...document.querySelectorAll('" + CHART + " text')]"
    ".filter(t => t.textContent.trim() && t.getBoundingClientRect().width > 0)"
    ".map(t => parseFloat(getComputedStyle(t).fontSize)))"
)

CONTROL_TEXT = (
    "() => ['[data-testid=stSelectbox] input', 'button[data-testid^=stBaseButton] p',"
    " '[data-testid=stSliderThumbValue]'].map(s => document.querySelector("
    "'[data-testid=stMain] ' + s)).map(e => e ? parseFloat(getComputedStyle(e).fontSize) : 0)"
)

LABEL_GAPS = (  # per y axis of every chart: the smallest gap (px) between two tick labels
    "() => [...document.querySelectorAll('" + CHART + " g.yaxislayer-above')].map(layer =>"
    " [...layer.querySelectorAll('.ytick text')].map(t => t.getBoundingClientRect())"
    ".filter(r => r.height > 0).sort((a, b) => a.top - b.top)"
    ".reduce((m, r, i, rs) => i ? Math.min(m, r.top - rs[i - 1].bottom) : m, 1e9))"
)
TALLEST_CHART = (
    "() => Math.max(0, ...[...document.querySelectorAll('" + CHART + "')]"
    ".map(e => e.getBoundingClientRect().height))"
)
TABLE_TEXT = (
    "() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stTable] td')]"
    ".map(e => parseFloat(getComputedStyle(e).fontSize))"
)


@pytest.fixture
def small(page: Page) -> Page:
    page.set_viewport_size({"width": 1280, "height": 720})
    return page


def _slider(page: Page) -> int:
    return chart_state(page, ANIM)["slider"]


def test_presenter_mode_on_a_projector(small: Page, app_url: str, shots):
    page = small
    open_page(page, f"{app_url}/step-cost?present=1&cost-tokens=1", charts=3)
    assert "present=1" in page.url
    expect(page.locator("[data-testid=stSidebar]")).to_be_hidden()
    assert page.evaluate(SMALLEST_TEXT) >= 18
    assert min(page.evaluate(CONTROL_TEXT)) >= 16  # a select's value, a button, a slider's value
    # the main control stays, the others keep their value off screen
    expect(page.get_by_role("slider", name="Prompt tokens in the step")).to_be_visible()
    expect(page.get_by_text("Running decodes", exact=True)).to_have_count(0)
    page.screenshot(path=str(shots / "present_step-cost_1280x720.png"))
    # the keyboard alone: no pointer has touched the page
    page.locator(CHART).nth(ANIM).scroll_into_view_if_needed()
    assert _slider(page) == 0
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "i => document.querySelectorAll('" + CHART + "')[i]._fullLayout.sliders[0].active === 1",
        arg=ANIM,
        timeout=15_000,
    )
    space_plays_and_pauses(page, ANIM, reach=3)
    # N brings the next heading to the top, P goes back: from just above the first heading, whose
    # followers have a page below them to scroll to (the lesson ends soon after its last chart)
    heads = "[data-testid=stMain] h2, [data-testid=stMain] h3"
    page.evaluate(
        "s => { document.querySelector(s).scrollIntoView();"
        " document.querySelector('[data-testid=stMain]').scrollBy(0, -200); }",
        heads,
    )
    page.wait_for_timeout(600)
    top = "s => [...document.querySelectorAll(s)].map(h => h.getBoundingClientRect().top | 0)"
    line = page.evaluate(
        "() => document.querySelector('[data-testid=stHeader]').getBoundingClientRect().bottom"
    )
    before = page.evaluate(top, heads)
    nxt = next(i for i, t in enumerate(before) if t > line + 8)
    for key, want in (("n", nxt), ("Shift+N", nxt + 1), ("p", nxt)):  # N as typed, too
        page.keyboard.press(key)
        page.wait_for_timeout(600)
        assert abs(page.evaluate(top, heads)[want] - line) <= 8, (key, want, before)
    # turning it off brings the sidebar and the other controls back, and leaves the link
    page.get_by_text("Presenter mode").click()
    expect(page.get_by_text("Running decodes", exact=True)).to_be_visible()
    page.wait_for_function("() => !location.search.includes('present=')", timeout=15_000)


@pytest.mark.parametrize("lesson", lessons(), ids=[lesson.id for lesson in lessons()])
def test_every_lesson_in_presenter_mode_at_projector_and_desktop_sizes(
    browser, app_url: str, shots, lesson
):
    """Each lesson with `?present=1`: no sidebar, and every chart text at least 18 px, at
    1280x720 and again at 1920x1080 (a screenshot of each, to look at)."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    requests = watch_requests(page)
    try:
        open_page(page, f"{app_url}/{lesson.url}?present=1", charts=None)
        for width, height in ((1280, 720), (1920, 1080)):
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(800)  # Plotly redraws at the new width
            expect(page.locator("[data-testid=stSidebar]")).to_be_hidden()
            assert page.evaluate(SMALLEST_TEXT) >= 18, (lesson.id, width)
            # a chart fits the projector's screen whole (under the app's header) unless its
            # labels need more: none of a y axis's tick labels may overlap at projector size
            # (chunked prefill's lanes did, in a chart cut to 640 px)
            tallest = page.evaluate(TALLEST_CHART)
            assert tallest <= 960, (lesson.id, tallest)
            assert min(page.evaluate(LABEL_GAPS), default=0) >= -1, (lesson.id, width)
            # every title clear of the legend and the words under it, and no tall empty band
            # between them (the memory grid kept 75 px empty under its title)
            gaps = [g for g in page.evaluate(TITLE_GAPS) if g is not None]
            assert min(gaps, default=0) >= 0, (lesson.id, width, gaps)
            if lesson.id == "memory":
                assert gaps[0] <= 60, (width, gaps)
            cells = page.evaluate(TABLE_TEXT)  # a table's cells at projector size too
            assert not cells or min(cells) >= 18, (lesson.id, cells)
            page.screenshot(path=str(shots / f"present_{lesson.id}_{width}x{height}.png"))
        assert not outside(requests), outside(requests)  # offline classrooms
    finally:
        context.close()


def test_a_page_inside_an_iframe(small: Page, app_url: str, shots):
    """A page of another site embeds a lesson in an iframe (`?embed=true&present=1`): it draws
    its charts at projector size, and the keyboard steps its animation."""
    url = f"{app_url}/step-cost?embed=true&present=1&cost-tokens=1"
    requests = watch_requests(small)
    small.set_content(f'<h1>Our course</h1><iframe src="{url}" width="1200" height="620"></iframe>')
    frame = small.frame_locator("iframe")
    charts = frame.locator(CHART)
    expect(charts).to_have_count(3, timeout=45_000)
    inner = next(f for f in small.frames if f.url.startswith(app_url))
    inner.wait_for_function(
        "() => [...document.querySelectorAll('" + CHART + "')].every(g => g._fullLayout)",
        timeout=45_000,
    )
    assert inner.evaluate(SMALLEST_TEXT) >= 18
    expect(frame.locator(".stepwise-export")).to_have_count(3)
    charts.nth(ANIM).scroll_into_view_if_needed()
    # a click on the plot itself (Plotly's drag layer, which keeps the focus where it was)
    # gives the frame the keys
    box = charts.nth(ANIM).locator(".nsewdrag").first.bounding_box()
    small.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    small.keyboard.press("ArrowRight")
    inner.wait_for_function(
        "i => document.querySelectorAll('" + CHART + "')[i]._fullLayout.sliders[0].active === 1",
        arg=ANIM,
        timeout=15_000,
    )
    small.screenshot(path=str(shots / "embed_in_iframe_step-cost.png"))
    assert not outside(requests), outside(requests)


def test_presenter_mode_inside_an_embed(small: Page, app_url: str):
    open_page(small, f"{app_url}/step-cost?embed=true&present=1", charts=3)
    assert small.evaluate(SMALLEST_TEXT) >= 18
    expect(small.get_by_role("slider", name="Prompt tokens in the step")).to_be_visible()
    expect(small.get_by_text("Running decodes", exact=True)).to_have_count(0)
    expect(small.locator(".stepwise-export")).to_have_count(3)


def test_every_chart_downloads_as_png_and_svg(page: Page, app_url: str):
    requests = watch_requests(page)  # drawn in the browser: nothing is fetched for an export
    charts = open_page(page, f"{app_url}/step-cost", charts=3)
    expect(page.locator(".stepwise-export")).to_have_count(charts)
    first = page.locator("[data-testid=stElementContainer]", has=page.locator(CHART)).first
    with page.expect_download() as svg:
        first.locator(".stepwise-export-svg").click()
    body = Path(svg.value.path()).read_bytes()
    assert svg.value.suggested_filename.endswith(".svg")
    assert b"<svg" in body[:400] and len(body) > 5_000
    with page.expect_download() as png:
        first.locator(".stepwise-export-png").click()
    data = Path(png.value.path()).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(data[16:20], "big")
    assert width == 3200  # 1600 px at scale 2
    # an animation's image is its frame on screen, without Play, Pause and the step slider
    animated = page.locator("[data-testid=stElementContainer]", has=page.locator(CHART)).nth(ANIM)
    with page.expect_download() as anim_svg:
        animated.locator(".stepwise-export-svg").click()
    body = Path(anim_svg.value.path()).read_bytes()
    assert b"<svg" in body[:400] and b"scatterlayer" in body
    assert b"Play" not in body and b"slider-container" not in body, body[-2000:]
    # a slide's title stands off the image's top edge (it touched it)
    title = re.search(rb'class="gtitle"[^>]* y="([0-9.]+)"', body)
    assert title and float(title.group(1)) >= 16, body[:3000]
    assert not outside(requests), outside(requests)
