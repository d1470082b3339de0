"""Waiting on a Streamlit page the reliable way (see TOOLCHAIN.md section 3)."""

from __future__ import annotations

from urllib.parse import urlparse

from playwright.sync_api import Page, expect

READY = (
    "() => document.querySelector('[data-testid=stApp]')"
    "?.getAttribute('data-test-script-state') === 'notRunning'"
)
CHART = "[data-testid=stPlotlyChart] .js-plotly-plot"


SKIP_PREDICTION = "[class*=predict-skip] button"  # "Show the runs without predicting"

TITLE_GAPS = (  # per titled chart: px from the title's bottom to what is under it (a legend,
    # an annotation above the plot, or the plot area)
    "() => [...document.querySelectorAll('" + CHART + "')].filter(g => g._fullLayout)"
    ".map(g => { const top = g.getBoundingClientRect().top, t = g.querySelector('.gtitle');"
    " if (!t || !t.textContent) return null; const under = [g._fullLayout._size.t];"
    " g.querySelectorAll('.legend, .annotation').forEach(e => { const r ="
    " e.getBoundingClientRect(); if (r.height > 0 && r.top - top < under[0] + 2)"
    " under.push(r.top - top); });"
    " return Math.min(...under) - (t.getBoundingClientRect().bottom - top); })"
)


def open_page(
    page: Page, url: str, *, charts: int = 0, timeout_ms: int = 45_000, predict: bool = False
) -> int:
    """Load a URL, wait until the script has run and its Plotly charts are drawn. Unless
    `predict`, a lesson's "Show the runs without predicting" is pressed first (the whole page).

    `charts` > 0 requires exactly that many charts; 0 accepts none; None waits for at least one
    and then for however many the page settles on. Returns the number of charts drawn.
    """
    page.goto(url)
    page.wait_for_function(READY, timeout=timeout_ms)
    drawn = "[...document.querySelectorAll('" + CHART + "')].filter(g => g._fullLayout).length"
    skip = page.locator(SKIP_PREDICTION)
    if not predict and charts != 0:  # a chart or the button that holds them back comes first
        either = "() => " + drawn + " >= 1 || !!document.querySelector('" + SKIP_PREDICTION + "')"
        page.wait_for_function(either, timeout=timeout_ms)
        if skip.count():
            skip.first.click()
            expect(skip).to_have_count(0, timeout=timeout_ms)
            page.wait_for_function(READY, timeout=timeout_ms)
    if charts is None:
        # Charts mount lazily (a 4.7 MB Plotly chunk) after the script has finished, one by one
        # on a loaded machine: wait until every chart element is drawn and none has come for 1.5 s.
        page.wait_for_function("() => " + drawn + " >= 1", timeout=timeout_ms)
        charts = _settled_count(page, drawn, timeout_ms)
    if charts:
        expect(page.locator(CHART)).to_have_count(charts, timeout=timeout_ms)
        page.wait_for_function("n => " + drawn + " >= n", arg=charts, timeout=timeout_ms)
    return charts


def _settled_count(page: Page, drawn: str, timeout_ms: int) -> int:
    elements = "document.querySelectorAll('[data-testid=stPlotlyChart]').length"
    seen, since = -1, 0
    for _ in range(timeout_ms // 250):
        count = page.evaluate("() => " + drawn + " === " + elements + " ? " + drawn + " : -1")
        since = since + 1 if count == seen and count > 0 else 0
        seen = count
        if since >= 6:
            return count
        page.wait_for_timeout(250)
    raise AssertionError(f"the page's charts never settled (last count {seen})")


def settled_state(page: Page, index: int, quiet_ms: int = 600, timeout_ms: int = 15_000) -> dict:
    """The chart's state once its frame has stopped changing for quiet_ms (a Pause takes effect
    at the end of the running transition, later on a loaded machine)."""
    state = chart_state(page, index)
    for _ in range(max(1, timeout_ms // quiet_ms)):
        page.wait_for_timeout(quiet_ms)
        now = chart_state(page, index)
        if now["current"] == state["current"] and now["slider"] == state["slider"]:
            return now
        state = now
    raise AssertionError(f"chart {index} kept changing frames for {timeout_ms} ms")


def chart_state(page: Page, index: int = 0) -> dict:
    """Frame count, current frame and first trace's y values of the index-th chart."""
    return page.evaluate(
        """i => {
            const gd = document.querySelectorAll('"""
        + CHART
        + """')[i];
            const fd = gd._fullData || [];
            return {
                frames: (gd._transitionData && gd._transitionData._frames || []).length,
                current: gd._fullLayout._currentFrame ?? null,
                slider: gd._fullLayout.sliders?.[0]?.active ?? null,
                y: fd.map(t => Array.from(t.y || [])),
                x: fd.map(t => Array.from(t.x || [])),
                z: fd.map(t => (t.z ? Array.from(t.z, row => Array.from(row).join(",")) : [])),
            };
        }""",
        index,
    )


def full_screenshot(page: Page, path: str) -> None:
    """Screenshot the whole app: Streamlit scrolls inside its main block, so grow the viewport."""
    height = page.evaluate(
        "() => Math.max(document.querySelector('[data-testid=stMain]')?.scrollHeight || 0,"
        " document.body.scrollHeight)"
    )
    size = page.viewport_size or {"width": 1400, "height": 1000}
    page.set_viewport_size({"width": size["width"], "height": min(int(height) + 50, 16000)})
    page.wait_for_timeout(500)
    page.screenshot(path=path)
    page.set_viewport_size(size)


def space_plays_and_pauses(page: Page, index: int, reach: int) -> int:
    """Space plays the animation until its slider is at `reach` or later, Space pauses it; the
    frame it stopped on (checked to stay put) is returned."""
    active = "document.querySelectorAll('" + CHART + "')[i]._fullLayout.sliders[0].active"
    page.keyboard.press(" ")
    page.wait_for_function("([i, n]) => " + active + " >= n", arg=[index, reach], timeout=20_000)
    page.keyboard.press(" ")
    page.wait_for_timeout(1000)
    paused = chart_state(page, index)["slider"]
    page.wait_for_timeout(1000)
    assert chart_state(page, index)["slider"] == paused, "the animation did not pause"
    return paused


def play_then_pause(page: Page, index: int, reach: int) -> None:
    """Press Play on the index-th chart, wait until it has shown frame `reach`, press Pause."""
    chart = page.locator(CHART).nth(index)
    chart.locator(".updatemenu-button", has_text="Play").first.click()
    page.wait_for_function(
        "([i, n]) => (document.querySelectorAll('" + CHART + "')[i]._fullLayout._currentFrame|0)"
        " >= n",
        arg=[index, reach],
        timeout=30_000,
    )
    chart.locator(".updatemenu-button", has_text="Pause").first.click()


def watch_requests(page: Page) -> list[str]:
    """Every URL the page asks for from now on, its frames' and websockets included, to check
    that none leaves the machine (`outside`)."""
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    page.on("websocket", lambda w: urls.append(w.url))
    return urls


def outside(urls: list[str]) -> list[str]:
    """The URLs that go to another host than this machine's loopback."""
    return [
        u
        for u in urls
        if urlparse(u).scheme in ("http", "https", "ws", "wss")
        and urlparse(u).hostname not in ("127.0.0.1", "localhost")
    ]
