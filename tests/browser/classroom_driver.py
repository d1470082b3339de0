"""Drives a class quiz in real browsers: one instructor and N students, each in a browser
context of its own (its own cookie: its own learner). Used by tests/browser/test_classroom.py
(a few students) and bench/bench_classroom.py (30, with timings)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from playwright.sync_api import Browser, Page

from tests.browser.helpers import READY

WAIT_MS = 60_000  # a loaded machine (30 browser pages on 2 cores) answers slowly
ANSWERS = (
    "() => { const gd = document.querySelector('[class*=st-key-class-answers-] .js-plotly-plot');"
    " return gd && gd.data ? gd.data.reduce((s, t) => s + (t.x[0] || 0), 0) : -1; }"
)


@dataclass
class Class:
    teacher: Page
    students: list[Page]
    code: str
    clicks: list[float] = field(default_factory=list)  # perf_counter of each student's Send
    seen: list[float] = field(default_factory=list)  # when the teacher's chart showed it


def _ready(page: Page) -> None:
    page.wait_for_function(READY, timeout=120_000)


def open_class(
    browser: Browser,
    url: str,
    n: int,
    lesson: str = "step_loop",
    student_urls: list[str] | None = None,
    teacher: dict | None = None,
) -> Class:
    """The instructor opens a room on `url`; student i joins on student_urls[i % len] (several
    app servers sharing one database), by default on `url` too. `teacher`: the instructor's
    browser context options (a viewport, a timezone_id), over a 1280x900 window."""
    options = {"viewport": {"width": 1280, "height": 900}, **(teacher or {})}
    host = browser.new_context(**options).new_page()
    for base in dict.fromkeys([url, *(student_urls or [])]):
        # a fresh server shows "Page not found" on a deep link before any session has run
        # st.navigation (streamlit/streamlit#9992): open each server's start page once
        host.goto(base)
        _ready(host)
    host.goto(f"{url}/class?lesson={lesson}")
    _ready(host)
    host.get_by_role("button", name="Open a room").click()
    host.wait_for_function("() => location.search.includes('room=')", timeout=30_000)
    code = host.evaluate("() => new URL(location.href).searchParams.get('room')")
    students = []
    for i in range(n):
        page = browser.new_context(viewport={"width": 420, "height": 900}).new_page()
        base = (student_urls or [url])[i % len(student_urls or [url])]
        page.goto(f"{base}/class?room={code}", timeout=120_000)
        _ready(page)
        page.get_by_label("Your nickname").fill(f"student {i}", timeout=WAIT_MS)
        page.get_by_role("button", name="Join").click(timeout=WAIT_MS)
        page.get_by_text(f"You are student {i}").wait_for(timeout=WAIT_MS)
        students.append(page)
    return Class(host, students, code)


def _chart_count(c: Class) -> int:
    return int(c.teacher.evaluate(ANSWERS))


def run_round(c: Class, pick: int = 0, together: bool = False) -> int:
    """Ask the next question; the students answer (choice `pick + i` modulo the choices), each
    click timed until the instructor's chart counts it; reveal; returns the chart's count.

    One after another (default): a student clicks Send only once the chart counts the one
    before. `together`: every student picks first, then all click Send as fast as the driver
    can, as a class answers at once; the k-th click is timed to the moment the chart first
    counts k answers (first in, first counted)."""
    c.teacher.get_by_role("button", name="Ask the next question").click(timeout=WAIT_MS)
    c.teacher.wait_for_function("() => (" + ANSWERS + ")() === 0", timeout=30_000)
    n = len(c.students)
    sends = []
    for page in c.students:
        send = page.get_by_role("button", name="Send my answer")
        send.wait_for(timeout=WAIT_MS)
        sends.append(send)
    if together:
        for i, page in enumerate(c.students):
            options = page.get_by_role("radio")
            options.nth((pick + i) % options.count()).check(force=True, timeout=WAIT_MS)
    seen: list[float] = []  # seen[k - 1]: when the chart first counted k answers

    def look() -> None:
        now, counted = time.perf_counter(), _chart_count(c)
        seen.extend([now] * (counted - len(seen)))

    for i, (page, send) in enumerate(zip(c.students, sends, strict=True)):
        if not together:
            options = page.get_by_role("radio")
            options.nth((pick + i) % options.count()).check(force=True, timeout=WAIT_MS)
        send.click(timeout=WAIT_MS)
        clicked = time.perf_counter()
        c.clicks.append(clicked)
        look()
        while not together and len(seen) < i + 1:  # one after another: wait for this one
            if time.perf_counter() - clicked > 120:
                raise AssertionError(f"answer {i + 1} of {n} not on the chart after 120 s")
            c.teacher.wait_for_timeout(50)
            look()
    last = time.perf_counter()
    while len(seen) < n:
        if time.perf_counter() - last > 120:
            raise AssertionError(f"{len(seen)} of {n} answers on the chart after 120 s")
        c.teacher.wait_for_timeout(50)
        look()
    c.seen.extend(seen[:n])
    for page in c.students:
        page.get_by_text("Your answer is in").wait_for(timeout=WAIT_MS)
    c.teacher.get_by_role("button", name="Reveal the answer").click(timeout=WAIT_MS)
    c.teacher.get_by_text("The answer:").wait_for(timeout=WAIT_MS)
    return _chart_count(c)
