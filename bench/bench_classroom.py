"""The class quiz under load (issue 12): one instructor and 30 students (STEPWISE_CLASS_STUDENTS
sets another number), each in a headless Chromium context of its own, answering 5 rounds; first
against one app server (SQLite), then against two app servers sharing one PostgreSQL (the
instructor on the first, students split between both); two rounds one student after another,
three with the whole class clicking at once. Every answer must be counted exactly
once (the database's count and the instructor's chart); reported: the time from a student's
click on Send to the instructor's chart showing that answer (p50 and p95; the chart refreshes
every second) and session errors.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

STUDENTS = int(os.environ.get("STEPWISE_CLASS_STUDENTS", "30"))
ROUNDS = 5
ONE_BY_ONE = 2  # the first rounds: each student clicks once the one before is on the chart


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _one(label: str, urls: list[str], db_url: str) -> str:
    from playwright.sync_api import sync_playwright

    from lessons.quiz.rooms import Rooms
    from lessons.quiz.store import create_engine
    from tests.browser.classroom_driver import open_class, run_round

    errors: list[str] = []
    started = time.perf_counter()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=os.environ.get("STEPWISE_CHROMIUM", "/usr/bin/chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu"],
        )
        try:
            c = open_class(browser, urls[0], STUDENTS, student_urls=urls)
            for page in (c.teacher, *c.students):
                page.on("pageerror", lambda exc: errors.append(str(exc)))
            counted = [run_round(c, pick=r, together=r >= ONE_BY_ONE) for r in range(ROUNDS)]
        except Exception as exc:  # e.g. a student who cannot join in time on a full machine
            browser.close()
            lines = str(exc).splitlines()
            why = " ".join([lines[0], *[x.strip() for x in lines if "waiting for" in x][:1]])
            return (
                f"| {label} | {STUDENTS} x {ROUNDS} | not finished: {why.replace('|', '/')} "
                + "| " * 5
                + f"| {time.perf_counter() - started:.0f} |"
            )
        shown_errors = sum(
            page.locator("[data-testid=stException]").count() for page in (c.teacher, *c.students)
        )
        browser.close()
    engine = create_engine(db_url)
    rooms = Rooms(engine)
    stored = [sum(rooms.counts(c.code, n).values()) for n in range(1, ROUNDS + 1)]
    engine.dispose()
    lat = [(s - k) * 1e3 for k, s in zip(c.clicks, c.seen, strict=True)]
    split = ONE_BY_ONE * STUDENTS
    alone, together = lat[:split], lat[split:]
    rounds = [c.clicks[i : i + STUDENTS] for i in range(split, len(c.clicks), STUDENTS)]
    spread = statistics.median(r[-1] - r[0] for r in rounds)  # first to last click of a round
    once = all(n == STUDENTS for n in stored) and all(n == STUDENTS for n in counted)
    return (
        f"| {label} | {STUDENTS} x {ROUNDS} | {sum(stored)} | {'yes' if once else 'NO'} | "
        f"{statistics.median(alone):.0f} / {_pct(alone, 95):.0f} | "
        f"{statistics.median(together):.0f} / {_pct(together, 95):.0f} | {spread:.1f} | "
        f"{shown_errors + len(errors)} | {time.perf_counter() - started:.0f} |"
    )


def run() -> str:
    from tests import pg_cluster
    from tests.browser import server

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "class.db"
        os.environ["STEPWISE_PROGRESS_DB"] = str(db)
        os.environ.pop("STEPWISE_DATABASE_URL", None)
        proc, url = server.start(Path(tmp) / "server.log")
        try:
            rows.append(_one("one server, SQLite", [url], f"sqlite:///{db}"))
        finally:
            server.stop(proc)
    try:
        cluster = pg_cluster.start(durable=True)
    except pg_cluster.ClusterError as exc:
        rows.append(f"| two servers, PostgreSQL | not run: {exc} " + "| " * 7 + "|")
    else:
        os.environ["STEPWISE_DATABASE_URL"] = cluster.url
        procs = []
        try:
            procs = [server.start() for _ in range(2)]
            urls = [u for _, u in procs]
            rows.append(_one("two servers, one PostgreSQL 15", urls, cluster.url))
        finally:
            for p, _ in procs:
                server.stop(p)
            os.environ.pop("STEPWISE_DATABASE_URL", None)
            cluster.stop()
    return "\n".join(
        [
            f"## Class quiz: {STUDENTS} students at once (ui/classroom.py, lessons/quiz/rooms.py)",
            "",
            f"One instructor and {STUDENTS} students, each a headless Chromium context of its "
            "own on this 2-core machine (browsers and servers share the cores), answering 5 "
            f"rounds: in the first {ONE_BY_ONE} one student after another (each clicks "
            "Send once the answer before is on the chart), in the last "
            f"{ROUNDS - ONE_BY_ONE} all at once (everyone picks, then all {STUDENTS} click Send "
            "as fast as the test driver can; *spread*: from a round's first click to its last, "
            "median over the rounds). "
            "Click to chart: from a student's click on Send to the instructor's chart counting "
            "that answer (the chart refreshes every second; all at once, the k-th click is "
            "timed to the chart's first count of k). Errors: exceptions shown on any page plus "
            "script errors in the browsers.",
            "",
            "| setup | students x rounds | answers stored | each counted once | "
            "click to chart, one by one: p50 / p95 (ms) | all at once: p50 / p95 (ms) | "
            "spread (s) | errors | wall (s) |",
            "|---|---|---:|---|---:|---:|---:|---:|---:|",
            *rows,
        ]
    )
