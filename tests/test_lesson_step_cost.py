"""Lesson "Why a step costs what it costs": the Readout against the cost model, controls moving
the Readout and the charts the way the roofline says, the page drawing the Readout.

Why: every number the lesson quotes must be the cost model's (sim.cost) for the selection; the
metrics must follow their controls (the step metric once stayed at 2,048 tokens while the
slider read 4,096); the animation must open at the learner's step; and the text must not claim
what the chart contradicts (the floor bends before the ridge on calibrated GPUs).
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from lessons.course import lesson
from lessons.step_cost import exercise, figures
from lessons.step_cost.lesson import TOKENS, Params, build
from sim.cost import Deployment, mixed_batch, step_costs, weight_read_ms
from sim.hardware import get_gpu, gpu_keys
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values

PAGE = "pages/lesson_step_cost.py"


def _ms(gpu: str, model: str, tokens: list[int], decodes: int = 0, context: int = 0, **kw):
    dep = Deployment(gpu, model, **kw)
    return step_costs(dep, **mixed_batch(np.array(tokens), decodes, context)).step_ms


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


def test_the_readout_is_the_cost_models():
    r = build(Params())
    one, ref = _ms("H100-SXM", "Llama-3.1-8B", [1, 2048])
    assert r.weight_read_ms == pytest.approx(weight_read_ms(Deployment("H100-SXM", "Llama-3.1-8B")))
    assert r.ref_ms == pytest.approx(ref) and r.one_ms == pytest.approx(one)
    with_kv = _ms("H100-SXM", "Llama-3.1-8B", [2048], decodes=64, context=2048)[0]
    assert r.n_ms_with_kv == pytest.approx(with_kv)
    assert r.n_ms_with_kv > r.n_ms


def test_the_page_shows_the_readout(opening):
    r = build(Params())
    metrics = {m.label: m.value for m in opening.metric}
    assert metrics["Weight read (the floor)"] == f"{r.weight_read_ms:.1f} ms"
    assert metrics[f"Step of {r.n_tokens:,} tokens"] == f"{r.n_ms:,.1f} ms"
    assert len(charts(opening)) == 3
    assert not opening.warning and not opening.exception


@pytest.mark.parametrize("tokens", [512, 4096, 16384])
def test_the_step_metric_follows_the_token_slider(tokens):
    at = run_page(PAGE)
    at.select_slider(key="w:cost-tokens").set_value(tokens).run()
    r = build(Params(tokens=tokens))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[f"Step of {tokens:,} tokens"] == f"{r.n_ms:,.1f} ms"
    marker = trace_values({"data": [charts(at)[0]["data"][-1]]}, "y")[0]
    assert marker == pytest.approx([r.n_ms, r.n_ms_with_kv])


@pytest.mark.parametrize("tokens", TOKENS)
def test_the_animation_opens_at_the_learners_step(tokens):
    r = build(Params(tokens=tokens))
    anim = figures.growing(r)
    start = anim["layout"]["sliders"][0]["active"]
    assert int(r.anim.tokens[start]) == tokens
    assert anim["data"][1]["x"] == [tokens]  # the dot sits on the learner's step


def test_the_calibrated_h100_is_faster_than_the_round_numbers():
    r = build(Params())
    assert r.cal_2048_ms < r.seed_2048_ms and r.cal_weight_ms < r.seed_weight_ms


def test_the_floor_bends_before_the_ridge():
    r = build(Params())
    assert r.small_tokens <= r.ridge_tokens / 2
    one, small = _ms("H100-SXM", "Llama-3.1-8B", [1, r.small_tokens])
    assert r.small_pct == pytest.approx((small / one - 1) * 100)


@pytest.mark.parametrize("gpu", gpu_keys())
def test_the_quoted_small_step_is_below_the_ridge_on_every_gpu(gpu):
    r = build(Params(gpu=gpu))
    assert 8 <= r.small_tokens <= max(r.ridge_tokens / 2, 8)
    assert r.small_ms > r.one_ms


def test_running_decodes_add_their_kv_reads():
    none, many = build(Params(decodes=0)), build(Params(decodes=512))
    assert np.allclose(none.with_kv.step_ms, none.prompt_only.step_ms)
    assert np.all(many.with_kv.step_ms > many.prompt_only.step_ms)
    assert many.kv_gb > 0 == none.kv_gb


def test_which_paragraph_shows_follows_the_bound():
    small, big = build(Params(tokens=1, decodes=0)), build(Params(tokens=16384))
    assert small.memory_bound and not big.memory_bound
    from lessons.kit import story

    text = lesson("step_cost").text_path
    assert "memory-bound" in story.text(text, "parts-bound", small)
    assert "compute-bound" in story.text(text, "parts-bound", big)


def test_the_parts_bar_shows_shares_that_add_up():
    anim = figures.growing(build(Params()))
    for frame in anim["frames"][:: max(len(anim["frames"]) // 6, 1)]:
        bars = [t for t in frame["data"] if t.get("orientation") == "h"]
        assert sum(b["x"][0] for b in bars) == pytest.approx(100, abs=0.1)


def test_fp8_lowers_the_floor():
    bf16 = build(Params(gpu="H100-SXM"))
    fp8 = build(replace(Params(gpu="H100-SXM"), dtype="fp8"))
    assert fp8.weight_read_ms < 0.6 * bf16.weight_read_ms


def test_a_model_that_does_not_fit_is_said():
    r = build(Params(gpu="L4", model="Llama-3.1-70B"))
    assert not r.fits
    at = run_page(PAGE, query={"gpu": "L4", "model": "Llama-3.1-70B"})
    assert any("could not load this model" in " ".join(w.value.split()) for w in at.warning)


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("step_cost").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "step_cost", "floor")


@pytest.mark.parametrize("seed", random.Random(7).sample(range(1, 10**6), 8))
def test_exercise_answer_is_bytes_over_bandwidth(seed):
    drawn = exercise.EXERCISES[0].draw(seed)
    v = drawn.params
    assert drawn.answer == pytest.approx(v["weight_gb"] / get_gpu(v["gpu"]).bw_tbps)
    assert v["model_ms"] >= drawn.answer  # the calibrated model never beats the datasheet
