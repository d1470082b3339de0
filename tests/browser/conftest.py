"""Browser-test fixtures: one Streamlit server per session and Debian's headless Chromium.

Never `playwright install` (it downloads a browser, which this network refuses): we launch
/usr/bin/chromium. Without it every browser test is skipped with one loud reason, and the rest of
the suite still runs. Screenshots go to test-output/screenshots/ for a person to look at.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import server

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM = os.environ.get("STEPWISE_CHROMIUM", "/usr/bin/chromium")
NO_BROWSER = None if Path(CHROMIUM).exists() else f"no browser at {CHROMIUM}"
# Two test workers and two app servers share two cores: a page can take longer than
# Playwright's default 5 s to show what a quiet machine shows at once.
expect.set_options(timeout=15_000)


def pytest_collection_modifyitems(config, items):
    if NO_BROWSER is None:
        return
    marker = pytest.mark.skip(
        reason=f"BROWSER TESTS SKIPPED: {NO_BROWSER} (apt-get install chromium)"
    )
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(marker)


def pytest_terminal_summary(terminalreporter):
    if NO_BROWSER is not None:
        terminalreporter.write_line(
            f"!!! BROWSER TESTS SKIPPED: {NO_BROWSER}; install Debian's chromium to run them !!!",
            red=True,
            bold=True,
        )


@pytest.fixture(scope="session")
def app_url(browser):
    """Start `streamlit run app.py` on a free loopback port; stop it after the session.

    The first session of a fresh server is opened once at "/", so that the imports it loads
    (NumPy, pandas, Plotly) are not timed by the first test's waits. (A deep link as the very
    first visit is tested on a server of its own: tests/browser/test_deep_link.py.)
    """
    if NO_BROWSER is not None:
        pytest.skip(NO_BROWSER)
    log = ROOT / "test-output" / "server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc, url = server.start(log)
    except RuntimeError as exc:
        pytest.fail(f"{exc}; see {log}")
    warm = browser.new_page()
    warm.goto(url)
    warm.wait_for_function(
        "() => document.querySelector('[data-testid=stApp]')"
        "?.getAttribute('data-test-script-state') === 'notRunning'",
        timeout=60_000,
    )
    warm.close()
    yield url
    server.stop(proc)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}}


@pytest.fixture(scope="session")
def shots() -> Path:
    """The screenshot folder (emptied once per run by tests/conftest.py, not here: each test
    worker has a session of its own and would delete the other worker's screenshots)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS
