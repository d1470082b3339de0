"""No small text left on a projector (issue 37, item 13): presenting at 1280x720, every word on
the page outside the charts (whose text test_present.py holds to 18 px) is at least 16 px, the
size of a caption when presenting. The slider's end labels, the "Run this quiz live" link and
Practice's lesson list were 14 px."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.browser.helpers import open_page

pytestmark = pytest.mark.browser

SMALLEST = 16  # px: a caption's size while presenting (ui/present.py)

TEXT_SIZES = (  # [px, text, data-testid of the nearest marked parent] for every visible word
    "() => { const out = [], main = document.querySelector('[data-testid=stMain]');"
    " const walk = document.createTreeWalker(main, NodeFilter.SHOW_TEXT); let n;"
    " while ((n = walk.nextNode())) { const e = n.parentElement, text = n.textContent.trim();"
    " if (!text || e.closest('svg')) continue; const r = e.getBoundingClientRect();"
    " if (!r.width || !r.height || getComputedStyle(e).visibility === 'hidden') continue;"
    " const marked = e.closest('[data-testid]:not([data-testid=stMarkdownContainer])');"
    " out.push([parseFloat(getComputedStyle(e).fontSize), text.slice(0, 50),"
    " e.closest('.stepwise-export') ? 'export' : (marked ? marked.dataset.testid : '')]); }"
    " return out; }"
)


@pytest.fixture
def small(page: Page) -> Page:
    page.set_viewport_size({"width": 1280, "height": 720})
    return page


def _sizes(page: Page) -> list[tuple[float, str, str]]:
    page.evaluate(
        "() => document.querySelectorAll('[data-testid=stMain] details')"
        ".forEach(d => { d.open = true; })"
    )
    page.wait_for_timeout(500)
    return [tuple(row) for row in page.evaluate(TEXT_SIZES)]


def _where(sizes, testid: str) -> list[float]:
    return [px for px, _, where in sizes if where == testid]


def test_a_lesson_presents_no_small_text(small: Page, app_url: str, shots):
    open_page(small, f"{app_url}/step-cost?present=1&cost-tokens=1", charts=3)
    sizes = _sizes(small)
    # what the issue found at 14 px is on the page, so the measure below is not empty
    assert len(_where(sizes, "stSliderTickBar")) == 2, sizes
    live = [px for px, text, _ in sizes if "Run this quiz live" in text]
    assert live, sizes
    assert _where(sizes, "export") and _where(sizes, "stExpander")
    small_text = [row for row in sizes if row[0] < SMALLEST]
    assert not small_text, small_text
    small.get_by_role("slider", name="Prompt tokens in the step").scroll_into_view_if_needed()
    small.screenshot(path=str(shots / "present_text_slider_1280x720.png"))
    small.get_by_text("Run this quiz live").scroll_into_view_if_needed()
    small.screenshot(path=str(shots / "present_text_quiz_link_1280x720.png"))


def test_practice_presents_no_small_text(small: Page, app_url: str, shots):
    open_page(small, f"{app_url}/practice?present=1", charts=0)
    small.get_by_role("tab").first.wait_for()
    sizes = _sizes(small)
    assert len(_where(sizes, "stTab")) >= 10, sizes  # the list of lessons
    small_text = [row for row in sizes if row[0] < SMALLEST]
    assert not small_text, small_text
    # at that size the list wraps: every lesson on screen, none behind a scroll arrow
    edges = small.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stTab]')]"
        ".map(t => t.getBoundingClientRect().right)"
    )
    assert max(edges) <= 1280, edges
    small.screenshot(path=str(shots / "present_text_practice_1280x720.png"))
