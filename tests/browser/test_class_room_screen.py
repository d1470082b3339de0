"""The host's room screen on a 1280x720 projector (issue 37, item 11): the answer chart, the QR
code and the host's buttons all on the first screen, presenting or not; each bar carries its
count; the closing time in the browser's time zone (a zone other than the server's UTC)."""

from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, Page, expect

from lessons.quiz.rooms import Rooms
from lessons.quiz.store import open_store
from tests.browser.classroom_driver import ANSWERS, open_class
from tests.browser.helpers import READY

pytestmark = pytest.mark.browser

ZONE = "Asia/Kolkata"  # UTC+05:30: not the server's zone, and not a whole hour from it
SCREEN = {"width": 1280, "height": 720}
PLACES = """() => {
  const box = s => { const e = document.querySelector(s); if (!e) return null;
    const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  return {chart: box('[class*=st-key-class-answers-] .js-plotly-plot'),
    qr: box('.st-key-class-qr img'), button: box('[class*=st-key-class-] button[kind=primary]'),
    height: window.innerHeight};
}"""
BAR_TEXT = """() => {
  const gd = document.querySelector('[class*=st-key-class-answers-] .js-plotly-plot');
  return {shown: Array.from(gd.querySelectorAll('.bartext')).map(t => t.textContent),
    data: gd._fullData.map(t => String(t.x[0]))};
}"""


def _on_first_screen(page: Page, what: str) -> None:
    page.wait_for_function(READY, timeout=60_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(800)  # the chart's own layout pass after a rerun
    at = page.evaluate(PLACES)
    for name in ("chart", "qr", "button"):
        box = at[name]
        assert box is not None, f"{what}: no {name}"
        assert box["top"] >= 0 and box["bottom"] <= at["height"], f"{what}: {name} at {box}"


def _counts_on_bars(page: Page) -> None:
    bars = page.evaluate(BAR_TEXT)
    assert bars["shown"] and sorted(bars["shown"]) == sorted(bars["data"]), bars


def test_the_room_is_one_screen_with_counts_and_local_time(browser: Browser, app_url: str, shots):
    c = open_class(browser, app_url, 1, teacher={"viewport": SCREEN, "timezone_id": ZONE})
    host, student = c.teacher, c.students[0]
    closes = Rooms(open_store(None).engine).room(c.code).closes_at
    local = dt.datetime.fromtimestamp(closes, ZoneInfo(ZONE)).strftime("%H:%M")
    utc = dt.datetime.fromtimestamp(closes, dt.UTC).strftime("%H:%M")
    line = host.get_by_text(re.compile("The room closes at"))
    expect(line).to_contain_text(local)
    assert utc not in line.inner_text() and "UTC" not in line.inner_text()
    host.get_by_role("button", name="Ask the next question").click()
    student.get_by_role("radio").first.check(force=True)
    student.get_by_role("button", name="Send my answer").click()
    host.wait_for_function("() => (" + ANSWERS + ")() === 1", timeout=60_000)
    _on_first_screen(host, "asked")
    _counts_on_bars(host)
    host.screenshot(path=str(shots / "class_room_720.png"))
    host.get_by_role("button", name="Reveal the answer").click()
    expect(host.get_by_text("The answer:")).to_be_visible(timeout=60_000)
    _on_first_screen(host, "revealed")
    _counts_on_bars(host)
    host.screenshot(path=str(shots / "class_room_720_revealed.png"))
    host.get_by_text("Presenter mode").click()
    host.wait_for_function("() => location.search.includes('present=1')", timeout=30_000)
    _on_first_screen(host, "presenting")
    _counts_on_bars(host)
    expect(host.get_by_text(re.compile("The room closes at"))).to_contain_text(local)
    host.screenshot(path=str(shots / "class_room_720_present.png"))
    for page in (host, student):
        page.context.close()
