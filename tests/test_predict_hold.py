"""Predict-then-reveal keeps its answer back: with the opening settings and the computed
questions unanswered, a lesson draws nothing that gives the answer away (the metrics, the charts
that answer it, an animation's last frame). Answering, or "Show the runs without predicting",
brings them back."""

from __future__ import annotations

import re

import pytest

from lessons.course import lesson
from lessons.kit import story
from tests.apptest_util import charts, past_predictions, run_page, trace_values

# lesson id -> what the page draws while the learner predicts: "none" (no chart), "start" (its
# animation at frame 0), "setup" (the question's setup only: overload's first chart, its loads
# up to the capacity; policies' stream of requests, which no policy has served yet)
HELD = {"overload": "setup", "policies": "setup", "watch": "start"}


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
    elif HELD[lesson_id] == "setup":
        assert len(drawn) == 1 and not drawn[0].get("frames")
        assert story.text(lesson(lesson_id).text_path, "predict-wait") in _markdown(at)
    else:
        assert [c["layout"]["sliders"][0]["active"] for c in drawn if c.get("frames")] == [0]
        assert story.text(lesson(lesson_id).text_path, "metrics-wait") in _markdown(at)
    if lesson_id == "watch":  # the requests axis is not fitted to the queue's peak (the answer)
        assert _requests_top(drawn) >= _watch_opening().requests
    if lesson_id == "overload":  # no run past the capacity is drawn (the answer)
        assert _highest_load(drawn) == 100
    if lesson_id == "policies":  # the stream only: no policy's result (the answer)
        assert [c["layout"]["title"]["text"] for c in drawn] == [_policies_title("stream")]


def _policies_title(key: str) -> str:
    """The title of one of the policies lesson's charts (text.md's `title-<key>` label)."""
    return story.labels(lesson("policies").text_path)[f"title-{key}"]


def _highest_load(drawn: list[dict]) -> float:
    """The highest offered load any line of the charts reaches (overload's x axis)."""
    return max(max(xs) for c in drawn for xs in trace_values(c, "x"))


def _watch_opening():
    from lessons.watch import lesson as watch

    return watch.build(watch.Params())


def _requests_top(drawn: list[dict]) -> float:
    (dashboard,) = [c for c in drawn if c.get("frames")]
    return dashboard["layout"]["yaxis"]["range"][1]


def _assert_shown(at, lesson_id: str) -> None:
    assert _labels(lesson_id) <= _metric_labels(at)
    drawn = charts(at)
    assert drawn
    if lesson_id == "watch":  # revealed, the panel fits what the run reached
        r = _watch_opening()
        top = max(r.dash.running.max(), r.dash.waiting.max(), r.waiting_band) * 1.1
        assert _requests_top(drawn) == pytest.approx(top)
    if lesson_id == "overload":  # the hockey stick goes on past the capacity
        loads = __import__("lessons.overload.lesson", fromlist=["LOADS"]).LOADS
        assert _highest_load(drawn[:1]) == max(loads)
    if lesson_id == "policies":  # the stream, then the charts that answer the prediction
        titles = [c["layout"]["title"]["text"] for c in drawn]
        assert titles[0] == _policies_title("stream")
        assert _policies_title("classes") in titles and len(drawn) >= 5
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


MEMORY_HELD = ("metrics-wait", "summary-wait", "rest-wait")


def _memory_held(at) -> bool:
    """True when the memory page keeps back its totals, its summary and everything after the
    paging section (the victims, their price, the fixes, async scheduling's first preemption);
    False when it shows them all. Anything in between fails."""
    text = lesson("memory").text_path
    waits = [story.text(text, name) in _markdown(at) for name in MEMORY_HELD]
    tables = len(at.dataframe) + len(at.table)  # a wide one is drawn plain (LessonPage.table)
    shown = [_labels("memory") <= _metric_labels(at), len(charts(at)) == 4, tables == 3]
    assert len(charts(at)) >= 2  # the grid and the paging chart are always there
    assert all(waits) and not any(shown) or not any(waits) and all(shown), (waits, shown)
    assert not _metric_labels(at) & _labels("memory") if waits[0] else True
    return all(waits)


@pytest.mark.parametrize("how", ["right", "wrong", "skip"])
def test_memory_keeps_its_totals_victims_and_price_back_until_answered(how):
    at = run_page(lesson("memory").page, timeout=180)
    assert _memory_held(at)
    if how == "skip":
        past_predictions(at)
    else:
        _answer_all(at, "memory", right=how == "right")
    assert not _memory_held(at)


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


def test_back_to_the_opening_run_also_sets_the_shared_settings_back():
    """A learner who picked another GPU (a setting that follows them from lesson to lesson) and
    another load gets the run the question is about back with one button: Reset this lesson
    alone would leave the GPU."""
    shared = lesson("overload")
    module = __import__("lessons.overload.lesson", fromlist=["Params"])
    gpu = module.Params().gpu
    other = "A100-80GB" if gpu != "A100-80GB" else "H100-SXM"
    at = run_page(shared.page, query={"ovl-load": "120", "gpu": other}, timeout=180)
    assert charts(at)
    at.button(key="ovl-predict-opening").click().run(timeout=180)
    assert not at.exception, [e.value for e in at.exception]
    _assert_held(at, "overload")
    assert at.selectbox(key="w:gpu").value == gpu
    assert not [b for b in at.button if b.key == "ovl-predict-opening"]


def _quiz_radios(at, lesson_id: str) -> set[str]:
    prefix = f"quiz-{lesson_id}-".replace("_", "-")
    return {r.key for r in at.radio if r.key and r.key.startswith(prefix)}


@pytest.mark.parametrize("lesson_id", [*sorted(HELD), "memory"])
def test_check_yourself_does_not_ask_the_predictions_again(lesson_id):
    """A lesson with a prediction box asks its computed questions once, at the top: Check
    yourself asks the others under their own numbers and says where the first ones are;
    Practice still asks every question."""
    at = run_page(lesson(lesson_id).page, timeout=180)
    bank = lesson(lesson_id).bank()
    computed = [q for q in bank.questions if q.computed]
    others = [q for q in bank.questions if not q.computed]
    assert computed and others
    slug = f"quiz-{lesson_id}-".replace("_", "-")
    assert _quiz_radios(at, lesson_id) == {slug + q.id.replace("_", "-") for q in others}
    numbers = [i for i, q in enumerate(bank.questions, start=1) if q.computed]
    (said,) = [c.value for c in at.caption if "asked above on this page" in c.value]
    if numbers == [1]:
        assert said.startswith("Question 1 is the prediction asked above")
    else:
        assert said.startswith("Questions ") and "are the predictions asked above" in said
    assert [int(n) for n in re.findall(r"\d+", said.split(" the prediction")[0])] == numbers
    first_other = bank.questions.index(others[0]) + 1
    assert any(m.value.startswith(f"**{first_other}.** ") for m in at.markdown)
    at.switch_page("views/practice.py").run(timeout=180)
    assert _quiz_radios(at, lesson_id) == {slug + q.id.replace("_", "-") for q in bank.questions}


@pytest.mark.parametrize("lesson_id", sorted(HELD))
def test_skipping_goes_into_the_link_and_the_link_shows_the_runs(lesson_id):
    """A walk: on a projector, "Show the runs without predicting" changed the page but not the
    address bar, so the link reopened the questions. Now it carries `<prefix>-skip=1`."""
    from ui.predict import skip_url_key

    module = __import__(f"lessons.{lesson_id}.lesson", fromlist=["PREFIX"])
    key = skip_url_key(module.PREFIX)
    at = run_page(lesson(lesson_id).page, timeout=180)
    assert key not in at.query_params
    past_predictions(at)
    assert at.query_params[key] == "1"
    linked = run_page(lesson(lesson_id).page, query={key: "1"}, timeout=180)
    _assert_shown(linked, lesson_id)
    bad = run_page(lesson(lesson_id).page, query={key: "[x](http://evil.example)"}, timeout=180)
    _assert_held(bad, lesson_id)
    warned = " ".join(w.value for w in bad.warning)
    assert f"This link sets {key} to" in warned and "\\[x\\]" in warned
    assert key not in bad.query_params
