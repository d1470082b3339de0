"""No page can break another: every control of every page at its minimum and at its maximum,
then every other page opened in the same session, without an exception.

Why: widget keys once shared across pages with different types and ranges (`tokens` a text box
on the calculator and a slider elsewhere), so a value set on one page crashed the next one
(64 of 490 page switches failed). Every page of the app is driven here through AppTest, with
the controls it draws found on the page itself, so a new page or control is covered as soon
as it exists.
"""

from __future__ import annotations

import pytest

from lessons.course import lessons
from tests.apptest_util import run_page

PAGES = [
    "views/start.py",
    *[lesson.page for lesson in lessons()],
    "views/practice.py",
    "views/playground.py",
    "views/trace.py",
    "views/classroom.py",
    "views/progress.py",
]
# The pages driven here; tests/test_cross_page_b.py drives the others (two files, so that two
# test workers share the work: pytest-xdist keeps a file on one worker).
HALF = len(PAGES) // 2
FIRST = PAGES[:HALF]
# Pages without a control of their own: "max" would repeat "min" exactly, so they run once (and
# check_page fails the day one of them gets a control).
NO_CONTROLS = {"views/start.py", "views/progress.py"}
ROUNDS = 3  # controls revealed by another control (show_if) get their turn next round


def _own(key: str | None) -> bool:
    """A page's own control: a lesson's or a tool's (w:), a stepper's step (<prefix>-step), the
    class quiz's boxes (class-)."""
    return bool(key) and (key.startswith(("w:", "class-")) or key.endswith("-step"))


def _controls(at) -> list:
    """The page's own controls (quiz answers and exercise boxes excluded)."""
    found = []
    for kind in ("selectbox", "select_slider", "slider", "toggle", "text_input"):
        for widget in getattr(at, kind):
            if _own(widget.key):
                found.append((kind, widget.key))
    return found


def _drive(at, kind: str, key: str, high: bool) -> None:
    widget = getattr(at, kind)(key=key)
    if kind == "selectbox":
        widget.select_index(len(widget.options) - 1 if high else 0)
    elif kind == "select_slider":
        option = widget.proto.options[-1 if high else 0]
        widget.set_value(int(option) if option.lstrip("-").isdigit() else option)
    elif kind == "slider":
        widget.set_value(int(widget.proto.max if high else widget.proto.min))
    elif kind == "toggle":
        widget.set_value(high)
    else:
        widget.set_value("9" * 20 if high else "")
    at.run()


def _no_exception(at, where: str) -> None:
    assert not at.exception, f"{where}: {[e.value for e in at.exception]}"


def page_ids(pages: list[str]) -> list[str]:
    return [p.split("/")[-1][:-3] for p in pages]


def cases(pages: list[str]) -> list:
    """(page, extreme) for each page and extreme, one case for a page without controls."""
    return [
        pytest.param(page, extreme, id=f"{name}-{extreme}")
        for page, name in zip(pages, page_ids(pages), strict=True)
        for extreme in (["min"] if page in NO_CONTROLS else ["min", "max"])
    ]


@pytest.mark.parametrize(("page", "extreme"), cases(FIRST))
def test_extremes_on_one_page_break_no_other(page: str, extreme: str):
    check_page(page, extreme)


def check_page(page: str, extreme: str) -> None:
    """Every control of `page` to its `extreme`, then every page opened in that session."""
    at = run_page(page)
    if page in NO_CONTROLS:
        assert not _controls(at), f"{page} has controls now: take it out of NO_CONTROLS"
    done: set[str] = set()
    for _ in range(ROUNDS):
        todo = [(kind, key) for kind, key in _controls(at) if key not in done]
        if not todo:
            break
        for kind, key in todo:
            if key in {k for _, k in _controls(at)}:  # may have been hidden meanwhile
                _drive(at, kind, key, extreme == "max")
                _no_exception(at, f"{page}: {key} at its {extreme}")
            done.add(key)
    for other in PAGES:
        at.switch_page(other).run()
        _no_exception(at, f"{other} after {page} at its {extreme}")
    at.switch_page(page).run()
    _no_exception(at, f"back on {page}")


def test_steppers_and_the_class_boxes_are_among_the_controls_driven():
    keys = {key for _, key in _controls(run_page("views/lesson_step_loop.py"))}
    assert "sl-step" in keys and "w:present" in keys
    keys = {key for _, key in _controls(run_page("views/classroom.py"))}
    assert {"class-lesson", "class-code", "class-nick"} <= keys
