"""Lesson "Why a step costs what it costs": page, controls, numbers in the text, quiz, exercise.

Why: every number the lesson quotes must be the cost model's (sim.cost) for the selection, the
controls must move the figures the way the roofline says (more tokens, a longer step; running
decodes add their KV reads), and the text must not claim what the chart contradicts (the floor
bends before the ridge on calibrated GPUs).
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from lessons.course import lesson
from lessons.step_cost import exercise, figures
from sim.cost import Deployment, mixed_batch, step_costs, weight_read_ms
from sim.hardware import get_gpu, gpu_keys
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values

PAGE = "pages/lesson_step_cost.py"


def _metric(at, label_start: str) -> float:
    for m in at.metric:
        if m.label.startswith(label_start):
            return float(re.sub(r"[^\d.]", "", m.value))
    raise AssertionError(f"no metric {label_start!r}")


def _text(at) -> str:
    return " ".join(" ".join(m.value for m in at.markdown).split())


def _ms(c: dict) -> float:
    return float(c["step_ms"][0])


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


def test_opens_clean_with_the_cost_models_numbers(opening):
    at = opening
    dep = Deployment("H100-SXM", "Llama-3.1-8B")
    one, ref = step_costs(dep, **mixed_batch(np.array([1, 2048]), 0, 0)).step_ms
    assert _metric(at, "Weight read") == pytest.approx(weight_read_ms(dep), abs=0.05)
    assert _metric(at, "Step of 2,048") == pytest.approx(ref, abs=0.05)
    text = _text(at)
    assert f"a one-token step takes **{one:.1f} ms**" in text
    assert len(charts(at)) == 3
    assert not at.warning and not at.exception


def test_the_calibrated_h100_is_faster_than_the_round_numbers():
    """The text says the measured H100 beats the back-of-the-envelope's 500 TFLOP/s."""
    n = figures.numbers(figures.Params(), figures.compute(figures.Params()))
    assert n["cal_2048_ms"] < n["seed_2048_ms"]
    assert n["cal_weight_ms"] < n["seed_weight_ms"]


def test_the_text_admits_the_floor_bends_before_the_ridge(opening):
    """The lesson quotes a step well below the ridge and its real price, from the model."""
    n = figures.numbers(figures.Params(), figures.compute(figures.Params()))
    assert n["small_tokens"] <= n["ridge_tokens"] / 2
    dep = Deployment("H100-SXM", "Llama-3.1-8B")
    one, small = step_costs(dep, **mixed_batch(np.array([1, n["small_tokens"]]), 0, 0)).step_ms
    assert n["small_pct"] == pytest.approx((small / one - 1) * 100)
    text = _text(opening)
    assert f"**{n['small_tokens']} tokens** takes **{small:.1f} ms**" in text
    assert "almost free" not in text and "is free" not in text


@pytest.mark.parametrize("gpu", gpu_keys())
def test_the_quoted_small_step_is_below_the_ridge_on_every_gpu(gpu):
    p = figures.Params(gpu=gpu)
    n = figures.numbers(p, figures.compute(p))
    assert 8 <= n["small_tokens"] <= max(n["ridge_tokens"] / 2, 8)
    assert n["small_ms"] > n["one_ms"]


def test_more_prompt_tokens_make_a_longer_step():
    at = run_page(PAGE, query={"tokens": "512"})
    short = _metric(at, "Step of 2,048")  # the reference does not move with the slider
    marker_512 = trace_values({"data": [charts(at)[0]["data"][-1]]}, "y")[0][0]
    at.select_slider(key="tokens").set_value(8192).run()
    marker_8192 = trace_values({"data": [charts(at)[0]["data"][-1]]}, "y")[0][0]
    assert marker_8192 > 4 * marker_512
    assert _metric(at, "Step of 2,048") == short


def test_running_decodes_add_their_kv_reads():
    at = run_page(PAGE, query={"decodes": "0"})
    without = "".join(m.value for m in at.markdown if "KV cache" in m.value)
    at.slider(key="decodes").set_value(512).run()
    curve = charts(at)[0]
    ys = trace_values(curve, "y")
    prompt_only, with_kv = np.array(ys[0]), np.array(ys[1])
    assert np.all(with_kv > prompt_only)
    assert without != "".join(m.value for m in at.markdown if "KV cache" in m.value)


def test_the_parts_bar_shows_shares_that_add_up(opening):
    anim = next(c for c in charts(opening) if c.get("frames"))
    assert anim["layout"]["xaxis2"]["range"] == [0, 100]
    for frame in anim["frames"][:: max(len(anim["frames"]) // 6, 1)]:
        bars = [t for t in frame["data"] if t.get("orientation") == "h"]
        assert sum(trace_values({"data": bars}, "x")[i][0] for i in range(len(bars))) == (
            pytest.approx(100, abs=0.1)
        )


def test_fp8_lowers_the_floor():
    bf16 = run_page(PAGE, query={"gpu": "H100-SXM"})
    fp8 = run_page(PAGE, query={"gpu": "H100-SXM", "dtype": "FP8"})
    assert _metric(fp8, "Weight read") < 0.6 * _metric(bf16, "Weight read")


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("step_cost").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "step_cost", "floor")


@pytest.mark.parametrize("seed", random.Random(7).sample(range(1, 10**6), 8))
def test_exercise_answer_is_bytes_over_bandwidth(seed):
    spec = exercise.EXERCISES[0]
    drawn = spec.draw(seed)
    v = drawn.params
    assert drawn.answer == pytest.approx(v["weight_gb"] / get_gpu(v["gpu"]).bw_tbps)
    # The calibrated model never beats the datasheet bandwidth.
    assert v["model_ms"] >= drawn.answer
