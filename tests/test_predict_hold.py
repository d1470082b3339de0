"""Predict-then-reveal keeps its answer back: with the opening settings and the computed
questions unanswered, a lesson draws nothing that gives the answer away (the metrics, the charts
that answer it, an animation's last frame). Answering, or "Show the runs without predicting",
brings them back."""

from __future__ import annotations

import pytest

from lessons.course import lesson
from lessons.kit import story
from tests.apptest_util import charts, past_predictions, run_page

# lesson id -> what the page draws while the learner predicts: "none" (no chart), "start" (its
# animation at frame 0)
HELD = {"overload": "none", "policies": "none", "watch": "start"}


def _metric_labels(at) -> set[str]:
    return {m.label for m in at.metric}


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _answer_all(at, lesson_id: str, right: bool) -> None:
    bank = lesson(lesson_id).bank()
    for q in (q for q in bank.questions if q.computed):
        key = f"predict-{lesson_id}-{q.id}".replace("_", "-")
        radio = at.radio(key=key)
        wrong = [c for c in radio.options if c != q.correct_choice][0]
        radio.set_value(q.correct_choice if right else wrong)
        at.button(key=f"{key}-check").click().run()
        assert not at.exception, [e.value for e in at.exception]


def _labels(lesson_id: str) -> set[str]:
    """The metric labels of the lesson's opening run (what the metrics row shows)."""
    module = __import__(f"lessons.{lesson_id}.lesson", fromlist=["build", "Params"])
    r = module.build(module.Params())
    return {label for label, _ in story.metrics(lesson(lesson_id).text_path, "metrics", r)}


def _assert_held(at, lesson_id: str) -> None:
    assert not _metric_labels(at) & _labels(lesson_id)
    drawn = charts(at)
    if HELD[lesson_id] == "none":
        assert not drawn
        assert story.text(lesson(lesson_id).text_path, "predict-wait") in _markdown(at)
    else:
        assert [c["layout"]["sliders"][0]["active"] for c in drawn if c.get("frames")] == [0]
        assert story.text(lesson(lesson_id).text_path, "metrics-wait") in _markdown(at)


def _assert_shown(at, lesson_id: str) -> None:
    assert _labels(lesson_id) <= _metric_labels(at)
    drawn = charts(at)
    assert drawn
    if HELD[lesson_id] == "start":
        (animated,) = [c for c in drawn if c.get("frames")]
        assert animated["layout"]["sliders"][0]["active"] == len(animated["frames"]) - 1
    assert not [b for b in at.button if b.key and b.key.endswith("-predict-skip")]


@pytest.fixture(scope="module", params=sorted(HELD))
def opened(request):
    return request.param, run_page(lesson(request.param).page, timeout=180)


def test_the_opening_page_keeps_the_answer_back(opened):
    lesson_id, at = opened
    _assert_held(at, lesson_id)


@pytest.mark.parametrize("right", [True, False])
def test_an_answer_right_or_wrong_brings_the_runs_back(lesson_id_page, right):
    lesson_id, at = lesson_id_page
    _answer_all(at, lesson_id, right)
    _assert_shown(at, lesson_id)


def test_the_learner_can_skip_the_prediction(lesson_id_page):
    lesson_id, at = lesson_id_page
    past_predictions(at)
    _assert_shown(at, lesson_id)


@pytest.fixture(params=sorted(HELD))
def lesson_id_page(request):
    at = run_page(lesson(request.param).page, timeout=180)
    _assert_held(at, request.param)
    return request.param, at


def test_memory_keeps_its_summary_back_until_skipped():
    text = lesson("memory").text_path
    at = run_page(lesson("memory").page, timeout=180)
    assert story.text(text, "summary-wait") in _markdown(at)
    past_predictions(at)
    assert story.text(text, "summary-wait") not in _markdown(at)


def test_a_link_to_other_settings_shows_everything_at_once():
    """The question box is drawn above the controls; it reads the link's values too, so a
    link to another load neither offers the skip nor hides the note that the runs differ."""
    at = run_page(lesson("overload").page, query={"ovl-load": "120"}, timeout=180)
    assert charts(at)
    assert not [b for b in at.button if b.key and b.key.endswith("-predict-skip")]
    other = story.text(lesson("overload").text_path, "predict-other")
    assert any(i.value == other for i in at.info)
    bad = run_page(lesson("overload").page, query={"ovl-load": "abc"}, timeout=180)
    _assert_held(bad, "overload")  # a bad value opens at the default: the opening settings
