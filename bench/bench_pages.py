"""Page speed in AppTest: each page's first run and a slider rerun, medians of several runs.

Targets (issues 2 and 4): a lesson page's first run <= 300 ms, a slider rerun <= 150 ms. The
rerun moves the page's first slider (or select slider) to another value.
"""

from __future__ import annotations

import importlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from lessons.course import lessons
from lessons.kit.controls import declared
from tests.apptest_util import APP
from ui import warm
from ui.predict import skip_key

REPEATS = 7
ROOT = Path(__file__).resolve().parents[1]
_COLD_FRAME = (
    "import time\n"
    "from streamlit.testing.v1 import AppTest\n"
    "at = AppTest.from_file('app.py', default_timeout=60)\n"
    "t = time.perf_counter()\n"
    "at.run()\n"
    "assert not at.exception\n"
    "print(time.perf_counter() - t)\n"
)

# A server's first session after its start-up warm-up (ui/warm.py `warm_all`, which app.py
# starts in a background thread): in a fresh process, the warm-up runs to its end, then one new
# session per heavy page switches to it. Prints the warm-up's seconds, then page and ms pairs.
_WARMED = (
    "import os, sys, time\n"
    "os.environ['STEPWISE_WARM'] = '0'  # the frame does not start a second warm-up thread\n"
    "from streamlit.testing.v1 import AppTest\n"
    "from bench.bench_pages import _past_predictions\n"
    "from ui import warm\n"
    "AppTest.from_file('app.py', default_timeout=60).run()\n"
    "t = time.perf_counter()\n"
    "warm.warm_all()\n"
    "print(time.perf_counter() - t)\n"
    "for page in sys.argv[1:]:\n"
    "    at = AppTest.from_file('app.py', default_timeout=60)\n"
    "    at.run()\n"
    "    _past_predictions(at)\n"
    "    t = time.perf_counter()\n"
    "    at.switch_page(page)\n"
    "    at.run()\n"
    "    assert not at.exception\n"
    "    print(page, time.perf_counter() - t)\n"
)
HEAVY = [
    "views/lesson_memory.py",
    "views/lesson_policies.py",
    "views/lesson_overload.py",
    "views/lesson_watch.py",
]


def _warmed() -> tuple[float, dict[str, float]]:
    """(warm-up seconds, first visit seconds per heavy page) in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", _WARMED, *HEAVY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = proc.stdout.split("\n")
    numbers = [line for line in lines if line.strip()]
    warm_s = float(numbers[0])
    visits = {}
    for line in numbers[1:]:
        page, seconds = line.rsplit(" ", 1)
        visits[page] = float(seconds)
    return warm_s, visits


def _cold_frame_seconds() -> float:
    """The frame's first run in a fresh Python process (what a server's first session pays)."""
    proc = subprocess.run(
        [sys.executable, "-c", _COLD_FRAME], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return float(proc.stdout.split()[-1])


FRAME_PAGES = ["views/start.py", "views/practice.py", "views/playground.py", "views/progress.py"]


# A page whose first slider can leave its runs as they are: the slider moved instead. Memory's
# first slider is max_model_len, and every limit longer than the requests shares one run
# (lessons/memory/lesson.py runs_as), so moving it would not measure a rerun that computes.
RERUN_SLIDER = {"views/lesson_memory.py": "Prompt length"}


def _move_first_slider(at: AppTest, repeat: int, label: str | None = None):
    """Set the first slider (or the first whose label starts with `label`) to a value that
    differs from run to run (so each rerun computes afresh instead of hitting the caches of an
    earlier run); returns (label, value) or None."""
    sliders = list(at.select_slider) + list(at.slider)
    if label is not None:
        sliders = [w for w in sliders if w.label.startswith(label)]
        assert sliders, label
    for widget in sliders:
        if hasattr(widget, "options") and widget.options:
            options = [o for o in widget.options if o != str(widget.value)]
            target = options[-1 - repeat % len(options)]
            widget.set_value(type(widget.value)(target) if widget.value is not None else target)
            return widget.label, target
        lo, hi = widget.min, widget.max
        if hi > lo:
            step = widget.step or 1
            spots = max(int((hi - lo) / step), 1)
            target = hi - (repeat * 7 % spots) * step  # 7 is prime: distinct for spots > 7
            if target == widget.value:
                target = lo if target != lo else hi
            widget.set_value(type(widget.value)(target))
            return widget.label, target
    return None


def _past_predictions(at: AppTest) -> None:
    """As a learner who skipped the predictions: every lesson draws its whole page (while a
    prediction is open, a lesson keeps back the charts that answer it)."""
    for lesson in lessons():
        prefix = importlib.import_module(f"lessons.{lesson.id}.lesson").PREFIX
        at.session_state[skip_key(prefix)] = True


def _time_page(page: str) -> dict:
    first, rerun, moved = [], [], []
    for repeat in range(REPEATS):
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        _past_predictions(at)
        started = time.perf_counter()
        at.switch_page(page)
        at.run()
        first.append(time.perf_counter() - started)
        assert not at.exception, (page, [e.value for e in at.exception])
        started = time.perf_counter()
        move = _move_first_slider(at, repeat, RERUN_SLIDER.get(page))
        if move is None:
            continue
        at.run()
        rerun.append(time.perf_counter() - started)
        assert not at.exception, (page, [e.value for e in at.exception])
        moved.append(move)
    return {
        "cold": first[0],  # the first visit: nothing of this page cached yet
        "first": statistics.median(first[1:]),
        "rerun": statistics.median(rerun) if rerun else None,
        "rerun_max": max(rerun) if rerun else None,
        "moved": f"{moved[0][0]} ({len({str(v) for _, v in moved})} values)" if moved else "",
    }


# The slider each page prepares ahead (LessonPage.ahead): page -> (lesson id, Params field)
PREPARED = {
    "views/lesson_memory.py": ("memory", "prompt_tokens"),
    "views/lesson_policies.py": ("policies", "load_pct"),
    "views/lesson_watch.py": ("watch", "itl_target_ms"),
}


def _time_prepared(page: str) -> tuple[list[float], str]:
    """Reruns after a one-step move of the slider the page prepares, each once the background
    worker has made the values next to the current one (ui/warm.py `ahead`, on for this
    measurement only): a learner who reads a few seconds before moving on."""
    lesson_id, name = PREPARED[page]
    module = importlib.import_module(f"lessons.{lesson_id}.lesson")
    d = {d.name: d for d in declared(module.Params)}[name]
    key, options = "w:" + d.url_key(module.PREFIX), list(d.spec.options)
    os.environ["STEPWISE_WARM"] = "1"
    try:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        _past_predictions(at)
        at.switch_page(page)
        at.run()
        times, i, up = [], options.index(d.default), True
        for _ in range(REPEATS):
            warm.wait_idle()
            if not 0 <= i + (1 if up else -1) < len(options):
                up = not up
            i += 1 if up else -1
            started = time.perf_counter()
            at.select_slider(key=key).set_value(options[i]).run()
            times.append(time.perf_counter() - started)
            assert not at.exception, (page, [e.value for e in at.exception])
        warm.wait_idle()
    finally:
        os.environ["STEPWISE_WARM"] = "0"
    return times, d.spec.label


def run() -> str:
    # Warm the imports once so the first page does not pay for numpy/plotly/pandas alone.
    AppTest.from_file(APP, default_timeout=60).run()
    rows = [
        "## Pages in AppTest",
        "",
        f"{REPEATS} fresh sessions per page, in process (`streamlit.testing.v1.AppTest`). "
        "First visit = switching to the page in the first session, before anything of the page "
        "is cached (the frame already ran, so the imports are warm); later visits = the median "
        "of the other sessions (the page's default figures are cached by then); slider rerun = "
        "moving the page's first slider (on the memory lesson the prompt length: "
        "max_model_len, its first, shares one run among every limit longer than the requests) "
        "to a value no earlier session used, so every rerun "
        "computes its figures afresh (median and worst). "
        "Targets: first run <= 300 ms, slider rerun <= 150 ms.",
        "",
        "| page | first visit (ms) | later visits (ms) | slider rerun (ms) | worst rerun (ms) "
        "| slider moved |",
        "|---|---:|---:|---:|---:|---|",
    ]
    cold = statistics.median(_cold_frame_seconds() for _ in range(5))
    rows[2] += (
        f" A server's first session runs the frame in a fresh process: {cold * 1000:.0f} ms "
        "(median of 5): loading NumPy, pandas and Plotly, which app.py imports so that no "
        "lesson's first visit pays for them, and the sidebar's XP, which builds no lesson's runs "
        "(ui/state.py `course`)."
    )
    pages = [lesson.page for lesson in lessons()] + FRAME_PAGES
    for page in pages:
        t = _time_page(page)
        rerun = "" if t["rerun"] is None else f"{t['rerun'] * 1000:.0f}"
        worst = "" if t["rerun_max"] is None else f"{t['rerun_max'] * 1000:.0f}"
        rows.append(
            f"| `{page}` | {t['cold'] * 1000:.0f} | {t['first'] * 1000:.0f} | {rerun} | {worst} "
            f"| {t['moved']} |"
        )
    rows += [
        "",
        "### Slider reruns with the next values prepared",
        "",
        "A page runs the values next to the current one on its main slider in the background "
        "while the learner reads (ui/warm.py `ahead`, one low-priority worker). Here: "
        f"{REPEATS} one-step moves in one session, each once the worker is idle (median and "
        "worst). The cold reruns above are what a move costs when nothing was prepared: a jump "
        "of several steps, or a move before the worker is done.",
        "",
        "| page | slider | rerun (ms) | worst (ms) |",
        "|---|---|---:|---:|",
    ]
    for page in PREPARED:
        times, label = _time_prepared(page)
        rows.append(
            f"| `{page}` | {label} | {statistics.median(times) * 1000:.0f} "
            f"| {max(times) * 1000:.0f} |"
        )
    runs = [_warmed() for _ in range(3)]
    rows += [
        "",
        "### First visits once the server has warmed up",
        "",
        "A server builds every lesson's opening runs in one background thread when it starts "
        "(ui/warm.py `warm_all`): "
        f"{statistics.median(w for w, _ in runs):.1f} s here (median of 3 fresh processes). "
        "A learner who opens a heavy lesson after that finds its runs made; the first visits "
        "above are what the first learner pays before it is done. Here: the first visit of "
        "each heavy page in a new session of a warmed process (median of 3 processes). "
        "Target: first run <= 300 ms.",
        "",
        "| page | first visit, warmed server (ms) |",
        "|---|---:|",
    ]
    for page in HEAVY:
        rows.append(f"| `{page}` | {statistics.median(v[page] for _, v in runs) * 1000:.0f} |")
    return "\n".join(rows)
