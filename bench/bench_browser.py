"""Browser latency: a slider key press until the chart shows the new data, per lesson page.

Starts the app on a free port, opens each lesson in headless Chromium, focuses the page's first
slider and presses an arrow key several times, timing each press until any chart's drawn data
changes (Streamlit rerun + websocket + Plotly redraw). Target (issue 4): median <= 500 ms on a
quiet machine. The load average is printed with the figures because this machine is shared.
"""

from __future__ import annotations

import os
import statistics
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
    page.goto(url)
    page.wait_for_function(READY, timeout=90_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].some(g => g._fullLayout)",
        timeout=90_000,
    )
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


def run() -> str:
    if not Path(CHROMIUM).exists():
        return "## Browser: slider to chart\n\nSkipped: no browser at /usr/bin/chromium."
    from playwright.sync_api import sync_playwright

    from tests.browser import server  # the same server start as the browser tests

    proc, url = server.start()
    rows = [
        "## Browser: slider press to updated chart",
        "",
        f"Headless Chromium, one press of an arrow key on each lesson's first slider, {PRESSES} "
        "presses per page, timed until a chart's drawn data changes. Target: median <= 500 ms "
        "on a quiet machine.",
        "",
        "| page | median (ms) | min (ms) | max (ms) | load average at start |",
        "|---|---:|---:|---:|---:|",
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
                rows.append(
                    f"| {lesson.title} | {statistics.median(times) * 1000:.0f} | "
                    f"{min(times) * 1000:.0f} | {max(times) * 1000:.0f} | {load:.1f} |"
                )
            browser.close()
    finally:
        server.stop(proc)
    return "\n".join(rows)
