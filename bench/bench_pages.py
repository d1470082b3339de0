"""Page speed in AppTest: each page's first run and a widget rerun, medians of several runs.

Targets (issues 2 and 4): a lesson page's first run <= 300 ms, a slider rerun <= 150 ms. A page
entry in PAGES names the widget to move and the value to move it to.
"""

from __future__ import annotations

import statistics
import time

from streamlit.testing.v1 import AppTest

from tests.apptest_util import APP

REPEATS = 7
# page script -> (widget kind, key, new value) for the rerun measurement; None: no widget.
PAGES: dict[str, tuple[str, str, object] | None] = {
    "pages/start.py": None,
    "pages/lesson_step_cost.py": ("slider", "tokens", 4096),
    "pages/practice.py": None,
    "pages/playground.py": ("selectbox", "gpu", "A100-80GB"),
    "pages/progress.py": None,
}


def _time_page(page: str, move) -> tuple[float, float | None]:
    first, rerun = [], []
    for _ in range(REPEATS):
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        started = time.perf_counter()
        at.switch_page(page)
        at.run()
        first.append(time.perf_counter() - started)
        assert not at.exception, (page, [e.value for e in at.exception])
        if move is not None:
            kind, key, value = move
            widget = getattr(at, kind)(key=key)
            started = time.perf_counter()
            widget.set_value(value).run()
            rerun.append(time.perf_counter() - started)
            assert not at.exception, (page, [e.value for e in at.exception])
    return statistics.median(first), (statistics.median(rerun) if rerun else None)


def run() -> str:
    # Warm the imports once so the first page does not pay for numpy/plotly/pandas alone.
    AppTest.from_file(APP, default_timeout=60).run()
    rows = [
        "## Pages in AppTest",
        "",
        f"Median of {REPEATS} runs per page, in process (`streamlit.testing.v1.AppTest`). "
        "First run = switching to the page in a fresh session (the frame already ran); rerun = "
        "moving the named widget. Targets: first run <= 300 ms, slider rerun <= 150 ms.",
        "",
        "| page | first run (ms) | widget rerun (ms) | widget moved |",
        "|---|---:|---:|---|",
    ]
    for page, move in PAGES.items():
        first, rerun = _time_page(page, move)
        moved = "" if move is None else f"{move[0]} `{move[1]}` to {move[2]}"
        rerun_txt = "" if rerun is None else f"{rerun * 1000:.0f}"
        rows.append(f"| `{page}` | {first * 1000:.0f} | {rerun_txt} | {moved} |")
    return "\n".join(rows)
