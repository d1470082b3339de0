"""What is drawn over a chart when the pointer is on it: no Plotly mode bar (it was laid over the
right end of a long title; the PNG and SVG buttons under the chart do its job)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from tests.browser.helpers import CHART, open_page

pytestmark = pytest.mark.browser


def test_hovering_a_chart_covers_no_title(page: Page, app_url: str):
    open_page(page, f"{app_url}/step-cost", charts=None)
    chart = page.locator(CHART).first
    chart.scroll_into_view_if_needed()
    chart.locator(".gtitle").hover(force=True)
    chart.hover()
    page.wait_for_timeout(600)
    visible = page.evaluate(
        "() => [...document.querySelectorAll('.modebar')]"
        ".filter(m => m.getBoundingClientRect().height > 0).length"
    )
    assert visible == 0
