"""Presenting on the projectors a classroom has: every lesson with `?present=1` at 1024x768 and
at 1280x720, on a GPU without FP8 (`gpu=A100-80GB&dtype=FP8`, which falls back to BF16). No
traceback; every text of a chart (its title, a status line, a panel's title) inside the chart;
no two axis titles or panel titles on top of each other; every chart as tall as the screen
under the app's header at most, except the few in SCROLLS (screenshots to look at)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from lessons.course import lessons
from tests.browser.helpers import CHART, open_page

pytestmark = pytest.mark.browser

SIZES = ((1024, 768), (1280, 720))
QUERY = "?present=1&gpu=A100-80GB&dtype=FP8"
# (lesson, chart index): charts allowed to be taller than the screen, and why
SCROLLS = {
    # fourteen labelled rows (steps, five users and the newcomer, twice) a font size apart at
    # 20 px, the two lanes' titles, a seven-entry legend and the Play controls: 928 px
    ("chunked_prefill", 0): "labelled lanes",
    # three panels of labelled rows (the two lists, the requests), a status line of three
    # lines and the Play controls: 720 px; cut to 640, Plotly dropped every other row label
    ("step_loop", 0): "labelled rows",
}

CUT = (  # per chart: the texts that reach out of its box (by more than a third of their font
    # size above or below, where a glyph's box has room to spare, or a pixel to the sides)
    "() => [...document.querySelectorAll('" + CHART + "')].map(g => {"
    " const b = g.getBoundingClientRect();"
    " return [...g.querySelectorAll('text')].filter(t => t.textContent.trim()).filter(t => {"
    "  const r = t.getBoundingClientRect(), f = parseFloat(getComputedStyle(t).fontSize) / 3;"
    "  return r.width > 0 && (r.left < b.left - 1 || r.right > b.right + 1"
    "   || r.top < b.top - f || r.bottom > b.bottom + f); })"
    " .map(t => (t.getAttribute('class') || '') + ': ' + t.textContent.slice(0, 60)); })"
)
TITLE_OVERLAPS = (  # per chart: pairs of axis titles, panel titles or text labels that overlap
    "() => [...document.querySelectorAll('" + CHART + "')].map(g => {"
    " const ts = [...g.querySelectorAll('g[class^=g-x][class$=title] text,"
    " g[class^=g-y][class$=title] text, .annotation-text, .textpoint text')]"
    "  .filter(t => t.textContent.trim()).map(t => [t.textContent.slice(0, 40),"
    "  t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);"
    " const out = [];"
    " ts.forEach(([s, p], i) => ts.slice(i + 1).forEach(([u, q]) => {"
    "  if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1"
    "   && q.top < p.bottom - 1) out.push(s + ' | ' + u); }));"
    " return out; })"
)
HEIGHTS = (  # the screen under the app's header, and each chart's height
    "() => [innerHeight - document.querySelector('[data-testid=stHeader]')"
    ".getBoundingClientRect().bottom, [...document.querySelectorAll('" + CHART + "')]"
    ".map(g => Math.round(g.getBoundingClientRect().height))]"
)


@pytest.mark.parametrize("lesson", lessons(), ids=[lesson.id for lesson in lessons()])
def test_every_lesson_fits_a_projector(browser, app_url: str, shots, lesson):
    context = browser.new_context(viewport={"width": SIZES[0][0], "height": SIZES[0][1]})
    page: Page = context.new_page()
    try:
        open_page(page, f"{app_url}/{lesson.url}{QUERY}", charts=None, timeout_ms=90_000)
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(1200)  # Plotly redraws at the new width
            where = (lesson.id, f"{width}x{height}")
            expect(page.locator("[data-testid=stException]")).to_have_count(0)
            assert "Traceback" not in page.locator("[data-testid=stMain]").inner_text(), where
            cut = {i: texts for i, texts in enumerate(page.evaluate(CUT)) if texts}
            assert not cut, (where, cut)
            overlaps = {i: p for i, p in enumerate(page.evaluate(TITLE_OVERLAPS)) if p}
            assert not overlaps, (where, overlaps)
            screen, tall = page.evaluate(HEIGHTS)
            over = {i: h for i, h in enumerate(tall) if h > screen}
            over = {i: h for i, h in over.items() if (lesson.id, i) not in SCROLLS}
            assert not over, (where, f"screen {screen} px", over)
            page.screenshot(path=str(shots / f"present_fit_{lesson.id}_{width}x{height}.png"))
    finally:
        context.close()
