"""Browser latency per lesson page: a slider key press until the chart shows the new data, and
the lesson's first load in a fresh browser.

Starts the app on a free port, opens each lesson in headless Chromium, focuses the page's first
slider and presses an arrow key several times, timing each press until any chart's drawn data
changes (Streamlit rerun + websocket + Plotly redraw). Target (issue 4): median <= 500 ms on a
quiet machine. The first load opens the lesson's link in a new browser context (empty cache, a
new session) and times it until every chart is drawn. The load average is printed with the
figures because this machine is shared.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from lessons.course import lessons

PRESSES = 9
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY = (
    "() => document.querySelector('[data-testid=stApp]')"
    "?.getAttribute('data-test-script-state') === 'notRunning'"
)
DATA = (
    "JSON.stringify([...document.querySelectorAll('[data-testid=stPlotlyChart] .js-plotly-plot')]"
    ".map(g => (g._fullData || []).map(t => [t.x, t.y])))"
)


def _press_latencies(page, url: str) -> list[float]:
    from tests.browser.helpers import open_page  # past a lesson's prediction: the whole page

    open_page(page, url, charts=None, timeout_ms=90_000)
    slider = page.get_by_role("slider").first
    out = []
    for i in range(PRESSES):
        page.evaluate("() => { window.__before = " + DATA + "; }")
        slider.focus()
        started = time.perf_counter()
        slider.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        page.wait_for_function("() => " + DATA + " !== window.__before", timeout=30_000)
        out.append(time.perf_counter() - started)
        page.wait_for_function(READY, timeout=30_000)
    return out


def _first_load(browser, url: str) -> float:
    """Seconds from opening a lesson's link in a fresh browser until its charts are drawn (or,
    where a prediction is open, until the question that holds them back is shown)."""
    from tests.browser.helpers import SKIP_PREDICTION

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url)
    page.wait_for_function(READY, timeout=90_000)
    page.wait_for_function(
        "() => { const g = [...document.querySelectorAll('.js-plotly-plot')];"
        " const held = !!document.querySelector('" + SKIP_PREDICTION + "');"
        " return (g.length > 0 || held) && g.every(x => x._fullLayout); }",
        timeout=90_000,
    )
    elapsed = time.perf_counter() - started
    context.close()
    return elapsed


def run() -> str:
    if not Path(CHROMIUM).exists():
        return "## Browser: slider to chart\n\nSkipped: no browser at /usr/bin/chromium."
    from playwright.sync_api import sync_playwright

    from tests.browser import server  # the same server start as the browser tests

    # The benchmark's answers go to a throwaway progress database, never a learner's.
    scratch = tempfile.mkdtemp(prefix="stepwise-bench-")
    os.environ["STEPWISE_PROGRESS_DB"] = str(Path(scratch) / "progress.db")
    os.environ["STEPWISE_DATABASE_URL"] = f"sqlite:///{Path(scratch) / 'progress.db'}"
    proc, url = server.start()
    rows = [
        "## Browser: slider press to updated chart",
        "",
        f"Headless Chromium, one press of an arrow key on each lesson's first slider, {PRESSES} "
        "presses per page, timed until a chart's drawn data changes. Target: median <= 500 ms "
        "on a quiet machine.",
        "",
        "The first load opens the lesson's link in a new browser context (empty cache, new "
        "session) and waits until every chart on it is drawn (median of 3).",
        "",
        "| page | median (ms) | min (ms) | max (ms) | first load, fresh browser (s) "
        "| load average at start |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.wait_for_function(READY, timeout=90_000)
            for lesson in lessons():
                load = os.getloadavg()[0]
                times = _press_latencies(page, f"{url}/{lesson.url}")
                first = statistics.median(
                    _first_load(browser, f"{url}/{lesson.url}") for _ in range(3)
                )
                rows.append(
                    f"| {lesson.title} | {statistics.median(times) * 1000:.0f} | "
                    f"{min(times) * 1000:.0f} | {max(times) * 1000:.0f} | {first:.1f} | "
                    f"{load:.1f} |"
                )
            browser.close()
    finally:
        server.stop(proc)
    return "\n".join(rows)
