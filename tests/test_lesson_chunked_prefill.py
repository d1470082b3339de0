"""Lesson 3 (chunked prefill versus the whole prompt): the page, its controls, quiz and exercises.

The page must run clean and open on the seed's numbers; each control must move the figures in
the direction the lesson claims; the quiz must grade and pay XP once; the exercises' answers
must match the scheduler (an independent replay, and the timed engine sim.timed.run_timed).
"""

from __future__ import annotations

import math
import random
import re

import numpy as np
import pytest

from lessons.chunked_prefill import exercise, figures
from lessons.course import lesson
from sim.config import SchedulerConfig
from sim.scheduler import run_steps
from sim.timed import run_timed
from sim.workload import Workload
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values

PAGE = "pages/lesson_chunked_prefill.py"
CHUNK = "decode step plus a prompt chunk"
WHOLE = "whole prompt in one step"


def _lanes(at) -> dict:
    found = [c for c in charts(at) if c.get("frames")]
    assert len(found) == 1, "one animated chart: the two lanes"
    return found[0]


def _counters(chart: dict, frame: int = -1) -> tuple[float, float]:
    """The live counters at a frame (the last by default): (whole prompt lane, chunked lane)."""
    last = [t for t in chart["frames"][frame]["data"][0]["text"] if t]
    values = [float(re.search(r"([\d,]+\.\d) ms", t).group(1).replace(",", "")) for t in last]
    return values[0], values[1]


def _bars(chart: dict, name: str) -> int:
    """Steps drawn in a strip trace: rectangles of 5 points and a gap each."""
    for trace, xs in zip(chart["data"], trace_values(chart, "x"), strict=True):
        if trace.get("name") == name:
            return len(xs) // 6
    raise AssertionError(f"no trace {name!r}")


def _metric(at, label: str) -> float:
    for m in at.metric:
        if m.label == label:
            return float(m.value.replace(",", "").removesuffix(" ms"))
    raise AssertionError(f"no metric {label!r}")


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


def test_opens_clean_on_the_seed_numbers(opening):
    at = opening
    lanes = _lanes(at)
    assert 1 <= len(lanes["frames"]) <= 200
    text = " ".join(m.value for m in at.markdown)
    # The seed's example: budget 2,048 (A100 default), 48 users, 8,000 tokens -> 4 x 2,000.
    assert "first chunk of 2,000 tokens, and 4 steps" in text
    assert _bars(lanes, CHUNK) == 4
    assert _bars(lanes, WHOLE) == 1
    whole, chunked = _counters(lanes)
    assert whole > 2 * chunked > 0
    assert _metric(at, "Longest wait, whole prompt") == pytest.approx(whole, abs=1)
    # Before the prompt arrives both lanes stream: the counters start at one decode step.
    decode = figures.compute(figures.Params())["decode_floor_ms"]
    for start in _counters(lanes, 0):
        assert start == pytest.approx(decode, rel=0.05)
    table = at.table[0].value
    assert "Time to first token of the long prompt" in table.index
    assert list(table.columns) == ["Whole prompt at once", "Chunked, budget 2,048"]
    assert len(charts(at)) == 2


def test_longer_prompt_makes_a_longer_worst_gap_without_chunking():
    at = run_page(PAGE, query={"prompt": "4000"})
    before_whole, before_chunked = _counters(_lanes(at))
    at.select_slider(key="prompt").set_value(32000).run()
    assert not at.exception
    after_whole, after_chunked = _counters(_lanes(at))
    assert after_whole > 4 * before_whole
    # With chunking the worst gap stays near one budget-sized step (attention grows a little).
    assert after_chunked < 2 * before_chunked
    assert _bars(_lanes(at), CHUNK) > 4


def test_smaller_budget_means_more_chunk_steps_and_a_smaller_gap():
    at = run_page(PAGE)
    at.toggle(key="defaults").set_value(False).run()
    at.select_slider(key="budget").set_value(2048).run()
    steps_2048 = _bars(_lanes(at), CHUNK)
    whole_2048, gap_2048 = _counters(_lanes(at))
    at.select_slider(key="budget").set_value(512).run()
    assert not at.exception
    steps_512 = _bars(_lanes(at), CHUNK)
    whole_512, gap_512 = _counters(_lanes(at))
    assert steps_512 > steps_2048
    assert gap_512 < gap_2048
    # The lane without chunking runs with a budget of max_model_len either way.
    assert whole_512 == pytest.approx(whole_2048, rel=0.02)


def test_more_users_leave_smaller_chunks():
    at = run_page(PAGE)
    chunk_48 = _bars(_lanes(at), CHUNK)
    at.slider(key="users").set_value(200).run()
    assert not at.exception
    assert _bars(_lanes(at), CHUNK) > chunk_48
    assert "first chunk of 1,848 tokens" in " ".join(m.value for m in at.markdown)


def test_gpu_choice_sets_vllm_defaults_and_model_sets_max_model_len():
    at = run_page(PAGE)
    at.selectbox(key="gpu").set_value("H100-SXM").run()
    assert not at.exception
    assert any("8,192" in c.value for c in at.caption)
    assert list(at.table[0].value.columns)[1] == "Chunked, budget 8,192"
    assert _bars(_lanes(at), CHUNK) == 1  # 8,000 tokens fit in one chunk of 8,144
    at.selectbox(key="model").set_value("Llama-2-7B").run()
    assert not at.exception
    titles = " ".join(a["text"] for a in _lanes(at)["layout"]["annotations"])
    assert "budget 8,192" in titles  # max(8,192, max_model_len 4,096)
    assert any("4,096" in i.value for i in at.info)  # the 8,000-token prompt was cut


def test_quiz_grades_and_awards_xp_once(opening):
    assert len(lesson("chunked_prefill").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "chunked_prefill", "protects_itl")


def _replay_steps(budget: int, users: int, prompt: int) -> int:
    """An independent replay: shorter user prompts, a later arrival, a roomy KV pool."""
    arrival = math.ceil(users * 64 / (budget - users)) + 10
    config = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=512,
        max_model_len=131_072,
        num_gpu_blocks=200_000,
    )
    wl = Workload.build(
        [64] * users + [prompt], [4000] * users + [2], arrival_step=[1] * users + [arrival]
    )
    run = run_steps(config, wl)
    assert int(run.first_scheduled_step[users]) == arrival
    return int(run.first_token_step[users]) - arrival + 1


@pytest.mark.parametrize("seed", [0, *random.Random(3).sample(range(1, 10**6), 6)])
def test_prompt_steps_exercise_matches_the_scheduler(seed):
    drawn = exercise.draw_steps(seed)
    b, u, p = (drawn.params[k] for k in ("budget", "users", "prompt"))
    assert drawn.answer == _replay_steps(b, u, p) == math.ceil(p / (b - u))
    if seed == 0:
        assert (b, u, p, drawn.answer) == (2048, 48, 8000, 4)
    assert drawn.is_correct(drawn.answer) and not drawn.is_correct(drawn.answer + 1)


def _timed_worst_gap(lane: figures.Lane, users: int, dep) -> float:
    """The lane's worst gap after the arrival, recomputed with the timed engine (run_timed)."""
    wl = lane.run.workload
    arrival_step = int(wl.arrival_step[users])
    t_arrival = float(np.sum(lane.step_ms[: arrival_step - 1]) / 1e3)
    timed = Workload.build(
        wl.prompt_tokens,
        wl.output_tokens,
        arrival_s=[0.0] * users + [t_arrival - 1e-9],
    )
    run = run_timed(lane.config, timed, dep)
    assert int(run.first_scheduled_step[users]) == arrival_step
    t = run.step_start_s[run.token_step - 1] + run.step_ms[run.token_step - 1] / 1e3
    first = float(run.first_token_s[users])
    worst = 0.0
    for u in range(users):
        times = t[run.token_req == u]
        ends = times[1:]
        gaps = np.diff(times)[(ends > t_arrival) & (ends <= first + 1e-9)]
        worst = max(worst, float(gaps.max()) if gaps.size else 0.0)
    return worst * 1e3


@pytest.mark.parametrize("seed", [0, *random.Random(4).sample(range(1, 10**6), 2)])
def test_worst_gap_exercise_matches_the_timed_engine(seed):
    drawn = exercise.draw_gap(seed)
    b, u, p = (drawn.params[k] for k in ("budget", "users", "prompt"))
    sim = figures.compute(figures.Params(prompt_tokens=p, users=u, budget=b))
    dep = sim["deployment"]
    gaps = {name: _timed_worst_gap(sim["lanes"][name], u, dep) for name in figures.LANES}
    assert drawn.answer == pytest.approx(gaps["whole"] - gaps["chunked"], rel=1e-6)
    # The worst gap is the longest step: the whole prompt's step, or the slowest chunk step.
    stats = {name: sim["lanes"][name].stats for name in figures.LANES}
    assert gaps["whole"] == pytest.approx(stats["whole"]["prompt_step_ms_max"], rel=1e-6)
    assert gaps["chunked"] == pytest.approx(stats["chunked"]["prompt_step_ms_max"], rel=1e-6)
    assert drawn.is_correct(drawn.answer) and not drawn.is_correct(drawn.answer * 1.1 + 1)


def test_exercise_on_the_page_grades_and_pays_once():
    at = run_page(PAGE)
    drawn = exercise.draw_steps(0)
    box = at.number_input(key="answer-chunked-prefill-prompt-steps-0")
    check = "exercise-chunked-prefill-prompt-steps-check"
    box.set_value(drawn.answer + 1)
    at.button(key=check).click().run()
    assert at.session_state["progress"].xp == 0
    at.number_input(key="answer-chunked-prefill-prompt-steps-0").set_value(drawn.answer)
    at.button(key=check).click().run()
    assert at.session_state["progress"].xp == 10
    at.button(key=check).click().run()
    assert at.session_state["progress"].xp == 10
