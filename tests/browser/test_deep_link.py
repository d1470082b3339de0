"""A link to a lesson is often the first thing a fresh server serves: the instructor starts
the app and hands out a link. That first visit must open the lesson without Streamlit's
"Page not found" dialog, which a folder named `pages/` next to app.py brought on (Streamlit
then runs its first script in its older multipage mode, where no lesson's URL exists)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser import server

pytestmark = pytest.mark.browser

READY = (
    "() => document.querySelector('[data-testid=stApp]')"
    "?.getAttribute('data-test-script-state') === 'notRunning'"
)


def test_a_deep_link_as_a_fresh_servers_first_visit_opens_the_lesson(page: Page, tmp_path):
    assert not (server.ROOT / "pages").exists()  # see the docstring
    proc, url = server.start(tmp_path / "server.log")
    try:
        page.goto(f"{url}/overload?ovl-load=50")
        page.wait_for_function(READY, timeout=90_000)
        page.wait_for_timeout(1500)  # the dialog came with the first run's messages
        expect(page.get_by_role("heading", name="Too many requests")).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
        assert "/overload" in page.url and "ovl-load=50" in page.url
    finally:
        server.stop(proc)
