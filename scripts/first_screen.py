"""Print each lesson's first-screen figures (first chart's top edge, words rendered at opening)
as a Markdown table, for notes and reviews: `python scripts/first_screen.py [lesson_id ...]`.
Starts its own server and Debian's Chromium, a fresh browser context per lesson, and saves
each first screen (1280x720) to test-output/first_screen/<lesson>.png to look at."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright  # noqa: E402

from lessons.course import lessons  # noqa: E402
from tests.browser import server  # noqa: E402
from tests.browser.first_screen import measure  # noqa: E402

SHOTS = Path(__file__).resolve().parents[1] / "test-output" / "first_screen"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main(only: list[str]) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    proc, url = server.start()
    total = 0
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            print("| lesson | first chart top (px) | words at opening |\n|---|---:|---:|")
            for lesson in lessons():
                if only and lesson.id not in only:
                    continue
                context = browser.new_context()
                page = context.new_page()
                m = measure(page, f"{url}/{lesson.url}")
                page.screenshot(path=str(SHOTS / f"{lesson.id}.png"))
                context.close()
                total += m["words"]
                top = "none" if m["top"] is None else f"{m['top']:.0f}"
                print(f"| {lesson.id} | {top} | {m['words']:,} |", flush=True)
            print(f"| course | | {total:,} |")
            browser.close()
    finally:
        server.stop(proc)


if __name__ == "__main__":
    main(sys.argv[1:])
