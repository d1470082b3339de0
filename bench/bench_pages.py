"""Page speed in AppTest: each page's first run and a slider rerun, medians of several runs.

Targets (issues 2 and 4): a lesson page's first run <= 300 ms, a slider rerun <= 150 ms. The
rerun moves the page's first slider (or select slider) to another value.
"""

from __future__ import annotations

import statistics
import time

from streamlit.testing.v1 import AppTest

from lessons.course import lessons
from tests.apptest_util import APP

REPEATS = 7
FRAME_PAGES = ["pages/start.py", "pages/practice.py", "pages/playground.py", "pages/progress.py"]


def _move_first_slider(at: AppTest):
    """Set the first slider to another value; returns (label, value) or None."""
    for widget in list(at.select_slider) + list(at.slider):
        if hasattr(widget, "options") and widget.options:
            options = list(widget.options)
            current = str(widget.value)
            target = next(o for o in reversed(options) if o != current)
            widget.set_value(type(widget.value)(target) if widget.value is not None else target)
            return widget.label, target
        lo, hi = widget.min, widget.max
        if hi > lo:
            target = hi if widget.value != hi else lo
            widget.set_value(target)
            return widget.label, target
    return None


def _time_page(page: str) -> tuple[float, float | None, str]:
    first, rerun, moved = [], [], ""
    for _ in range(REPEATS):
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        started = time.perf_counter()
        at.switch_page(page)
        at.run()
        first.append(time.perf_counter() - started)
        assert not at.exception, (page, [e.value for e in at.exception])
        started = time.perf_counter()
        move = _move_first_slider(at)
        if move is None:
            continue
        at.run()
        rerun.append(time.perf_counter() - started)
        assert not at.exception, (page, [e.value for e in at.exception])
        moved = f"{move[0]} -> {move[1]}"
    return statistics.median(first), (statistics.median(rerun) if rerun else None), moved


def run() -> str:
    # Warm the imports once so the first page does not pay for numpy/plotly/pandas alone.
    AppTest.from_file(APP, default_timeout=60).run()
    rows = [
        "## Pages in AppTest",
        "",
        f"Median of {REPEATS} runs per page, in process (`streamlit.testing.v1.AppTest`). "
        "First run = switching to the page in a fresh session (the frame already ran, so the "
        "imports are warm); rerun = moving the page's first slider to another value (a "
        "different value each session, so st.cache_data helps only across sessions). "
        "Targets: first run <= 300 ms, slider rerun <= 150 ms.",
        "",
        "| page | first run (ms) | slider rerun (ms) | slider moved |",
        "|---|---:|---:|---|",
    ]
    pages = [lesson.page for lesson in lessons()] + FRAME_PAGES
    for page in pages:
        first, rerun, moved = _time_page(page)
        rerun_txt = "" if rerun is None else f"{rerun * 1000:.0f}"
        rows.append(f"| `{page}` | {first * 1000:.0f} | {rerun_txt} | {moved} |")
    return "\n".join(rows)
