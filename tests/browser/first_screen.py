"""What a new learner meets when a lesson opens: where its first chart starts and how many words
the page renders, measured in the browser (issue 36's bars: the first chart's top edge at most
400 px from the window's top at 1280x720 with the sidebar open; at most 900 words per lesson and
7,500 across the course).

Words are counted in the main column's rendered text (`innerText`, so a folded "Go deeper"
section, whose content the browser does not render, counts nothing), less the charts' own
labels (a chart is the picture, not prose). Controls, metrics, captions and the quiz all count.
Used by tests/browser/test_first_screen.py and scripts/first_screen.py.
"""

from __future__ import annotations

import contextlib

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

from tests.browser.helpers import CHART, READY

VIEWPORT = {"width": 1280, "height": 720}
FIRST_CHART_MAX_PX = 400
WORDS_MAX = 900
COURSE_WORDS_MAX = 7_500

_MEASURE = """() => {
    const main = document.querySelector('[data-testid=stMain]');
    const count = t => (t.match(/[\\p{L}\\p{N}][\\p{L}\\p{N}'’.,%:/-]*/gu) || []).length;
    let words = count(main.innerText);
    for (const c of main.querySelectorAll('[data-testid=stPlotlyChart]'))
        words -= count(c.innerText);
    const chart = main.querySelector('[data-testid=stPlotlyChart]');
    const top = chart ? chart.getBoundingClientRect().top : null;
    return {words, top};
}"""


def measure(page: Page, url: str, timeout_ms: int = 60_000) -> dict:
    """Open `url` in `page` (fresh, nothing answered), wait for the script and the first chart,
    and return {"top": px of the first chart's top edge, or None if none, "words": int}."""
    page.set_viewport_size(VIEWPORT)
    page.goto(url)
    page.wait_for_function(READY, timeout=timeout_ms)
    drawn = "() => [...document.querySelectorAll('" + CHART + "')].some(g => g._fullLayout)"
    with contextlib.suppress(PlaywrightError):  # no chart: top None, which fails the bar
        page.wait_for_function(drawn, timeout=timeout_ms // 2)
    page.wait_for_timeout(800)  # the fragments below the first chart finish their layout
    page.wait_for_function(READY, timeout=timeout_ms)
    page.evaluate("() => document.querySelector('[data-testid=stMain]')?.scrollTo(0, 0)")
    return page.evaluate(_MEASURE)
