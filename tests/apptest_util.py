"""Helpers for AppTest page tests: run the app frame on a page, read chart JSON."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def run_page(page: str | None = None, *, query: dict | None = None, timeout: float = 30) -> AppTest:
    """Run the real frame (app.py) and switch to `page` (a path like "views/practice.py")."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def past_predictions(at: AppTest) -> AppTest:
    """Press the lesson's "Show the runs without predicting", if it is drawn: the whole page,
    as a learner who skips the prediction sees it."""
    skip = [b for b in at.button if b.key and b.key.endswith("-predict-skip")]
    if skip:
        skip[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def charts(at: AppTest) -> list[dict]:
    """Every Plotly chart on the page as {data, layout, frames} dicts."""
    return [json.loads(node.proto.spec) for node in at.get("plotly_chart")]


def trace_values(chart: dict, axis: str = "y") -> list[list[float]]:
    """Decoded values of `axis` for each trace (Plotly sends arrays as base64 typed arrays)."""
    import base64

    import numpy as np

    out = []
    for trace in chart["data"]:
        value = trace.get(axis)
        if isinstance(value, dict) and "bdata" in value:
            arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            out.append(arr.tolist())
        else:
            out.append(list(value or []))
    return out


def quiz_key(lesson_id: str, question_id: str) -> str:
    """The widget key of a question's radio (its Check button adds "-check")."""
    return f"quiz-{lesson_id}-{question_id}".replace("_", "-")


def answer(at: AppTest, lesson_id: str, question_id: str, choice: str) -> AppTest:
    """Pick `choice` for a question and press Check."""
    key = quiz_key(lesson_id, question_id)
    at.radio(key=key).set_value(choice)
    at.button(key=f"{key}-check").click().run()
    return at


def assert_quiz_awards_xp_once(page: str, lesson_id: str, question_id: str) -> AppTest:
    """On `page`: the question's right first answer earns 10 XP and checking it again nothing;
    another question answered wrong first earns nothing, not even when answered right next
    (only the first answer counts), and the explanation shows after the wrong answer.
    Returns the AppTest with 10 XP earned."""
    from lessons.course import lesson

    bank = lesson(lesson_id).bank()
    q = bank.question(question_id)
    at = run_page(page)
    answer(at, lesson_id, question_id, q.correct_choice)
    assert at.session_state["progress"].xp == 10
    answer(at, lesson_id, question_id, q.correct_choice)
    assert at.session_state["progress"].xp == 10
    # a computed question is asked at the top of a page with a prediction box, not in its quiz
    other = next(o for o in bank.questions if o.id != question_id and not o.computed)
    answer(at, lesson_id, other.id, next(c for c in other.choices if c != other.correct_choice))
    assert at.session_state["progress"].xp == 10
    assert any(other.explanation in m.value for m in at.markdown)
    answer(at, lesson_id, other.id, other.correct_choice)
    assert at.session_state["progress"].xp == 10
    return at


def download_data(button) -> bytes:
    """The bytes a download button of an AppTest page serves. AppTest keeps them in the media
    file storage of the script run (its proto has only the file's URL); no public accessor
    exists, so the storage is found among the live objects."""
    import gc

    from streamlit.runtime.media_file_manager import MediaFileManager

    file_id = button.proto.url.rsplit("/", 1)[-1].split(".")[0]
    for manager in (o for o in gc.get_objects() if isinstance(o, MediaFileManager)):
        try:
            return manager._storage.get_file(file_id).content
        except Exception:  # another run's storage
            continue
    raise AssertionError(f"no stored file for {button.proto.url}")


def in_order(node, inside: str = "", out: list | None = None) -> list[tuple[str, str, str, str]]:
    """Every element of an AppTest tree in reading order: (kind, key, text, the label of the
    expander it sits in), for tests of where a lesson draws what (issue 36: diagram first)."""
    out = [] if out is None else out
    kind = type(node).__name__
    label = str(getattr(node, "label", "") or "")
    if kind == "Expander":
        inside = label
    text = str(node.value) if kind == "Markdown" else label
    out.append((kind, str(getattr(node, "key", "") or ""), text, inside))
    for child in getattr(node, "children", {}).values():
        in_order(child, inside, out)
    return out


def walk(node):
    """Every element of an AppTest tree, in the order the page draws them."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)
