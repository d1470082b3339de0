"""Lesson "One token budget": the page, its opening numbers (vLLM's recording), its controls,
the shared budget-fill timeline, the quiz and the exercises.

Why: the lesson claims numbers (chunks of 2,040, 2,040 and 16; decoding from the 4th step) that
vLLM's real scheduler recorded in tests/data/fig82.json, and claims directions (a bigger budget
makes bigger chunks and fewer steps); these tests hold the page to both.
"""

from __future__ import annotations

import pytest

from lessons.course import lesson
from lessons.timeline import DECODE, PROMPT, budget_timeline, classify
from lessons.token_budget import exercise, figures
from sim.hardware import default_batch_limits, get_gpu, gpu_keys
from sim.kv import cdiv
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values
from tests.scenarios import load_recording

PAGE = "pages/lesson_token_budget.py"


def _chart(at, title_start: str) -> dict:
    for chart in charts(at):
        if chart["layout"]["title"]["text"].startswith(title_start):
            return chart
    raise AssertionError(f"no chart titled {title_start!r}")


def _trace(chart: dict, name_start: str, axis: str = "y") -> list:
    for trace, values in zip(chart["data"], trace_values(chart, axis), strict=True):
        if str(trace.get("name", "")).startswith(name_start):
            return values
    raise AssertionError(f"no trace {name_start!r}")


def _timeline(at) -> tuple[list[int], list[int], list[int]]:
    """(steps, decode tokens, prompt-chunk tokens) of the page's timeline chart."""
    chart = _chart(at, "One ")
    steps = [int(x) for x in _trace(chart, "prompt chunks", "x")]
    return (
        steps,
        [int(v) for v in _trace(chart, "decode tokens")],
        [int(v) for v in _trace(chart, "prompt chunks")],
    )


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


def test_opening_state_is_the_recording(opening):
    """Fig. 8.2: chunks 2,040 / 2,040 / 16 in the steps vLLM recorded, decoding from step 6."""
    rec = load_recording("fig82")
    recorded = {s["step"]: s["num_scheduled_tokens"].get("long", 0) for s in rec["steps"]}
    steps, decode, prompt = _timeline(opening)
    by_step = dict(zip(steps, prompt, strict=True))
    chunk_steps = [s for s in steps if by_step[s] and s > 1]
    assert [by_step[s] for s in chunk_steps] == [2040, 2040, 16]
    assert all(by_step[s] == recorded[s] for s in chunk_steps)
    assert all(decode[steps.index(s)] == 8 for s in chunk_steps)
    first_decode = rec["per_request"]["long"]["first_token_step"] + 1
    assert max(chunk_steps) + 1 == first_decode == 6
    assert _metric(opening, "First chunk") == "2,040 tokens"
    assert _metric(opening, "Steps with a chunk") == "3"
    assert _metric(opening, "First decode, counted from arrival") == "4th step"
    text = " ".join(m.value for m in opening.markdown)
    assert "2,040, 2,040 and 16" in text and "4th step" in text


def test_opening_defaults_are_vllms_for_the_l4(opening):
    assert opening.toggle(key="tb-defaults").value is True
    limits = default_batch_limits("L4")
    assert limits["max_num_batched_tokens"] == 2048
    chart = _chart(opening, "One ")
    assert _trace(chart, "token budget")[0] == limits["max_num_batched_tokens"]


def test_bigger_budget_gives_bigger_chunks_and_fewer_steps():
    at = run_page(PAGE, query={"tb-defaults": "false", "tb-budget": "1024"})
    _, _, small = _timeline(at)
    at.select_slider(key="tb-budget").set_value(4096).run()
    assert not at.exception
    _, _, big = _timeline(at)
    assert max(big) > max(small)
    assert sum(1 for v in big if v) < sum(1 for v in small if v)


def test_url_sets_the_state_and_more_decodes_leave_less():
    at = run_page(PAGE, query={"tb-decodes": "48"})
    assert at.slider(key="tb-decodes").value == 48
    assert _metric(at, "First chunk") == "2,000 tokens"
    at.slider(key="tb-decodes").set_value(200).run()
    assert _metric(at, "First chunk") == "1,848 tokens"


def test_longer_prompt_needs_more_steps_and_a_cached_prefix_fewer():
    at = run_page(PAGE, query={"tb-prompt": "16384"})
    long_steps = int(_metric(at, "Steps with a chunk"))
    assert long_steps == cdiv(16384, 2040)
    at.select_slider(key="tb-cached").set_value(75).run()
    cached_steps = int(_metric(at, "Steps with a chunk"))
    assert cached_steps < long_steps
    text = " ".join(m.value for m in at.markdown)
    assert "12,288" in text  # 75 % of the prompt, found in the cache


def test_draft_tokens_shrink_the_chunk():
    at = run_page(PAGE)
    chart = _chart(at, "Budget arithmetic")
    chunks = _trace(chart, "left for the prompt")
    assert chunks[0] == 2040  # k = 0: the replay's own chunk
    assert all(a > b for a, b in zip(chunks, chunks[1:], strict=False))
    at.slider(key="tb-k").set_value(4).run()
    text = " ".join(m.value for m in at.markdown)
    assert "**40**" in text and "**2,008**" in text  # 8 requests x 5 tokens; 2,048 - 40


def test_prompts_that_cannot_run_say_why():
    at = run_page(PAGE, query={"tb-prompt": "131072"})
    assert any("refuses" in w.value for w in at.warning)
    at = run_page(PAGE, query={"tb-prompt": "65536"})
    assert any("KV-cache blocks" in w.value for w in at.warning)


def test_defaults_chart_follows_the_rule_for_every_gpu(opening):
    chart = _chart(opening, "vLLM's default token budget")
    keys = _trace(chart, "default max_num_batched_tokens", "x")
    budgets = _trace(chart, "default max_num_batched_tokens")
    assert sorted(keys) == sorted(gpu_keys())
    for key, budget in zip(keys, budgets, strict=True):
        mem = get_gpu(key).cuda_memory_gib
        expected = 16384 if mem >= 160 else 8192 if mem >= 70 and "A100" not in key else 2048
        assert budget == expected, key
    assert dict(zip(keys, budgets, strict=True))["L4"] == 2048


def test_quiz_grades_and_awards_xp_once(opening):
    assert len(lesson("token_budget").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "token_budget", "decodes_48")


@pytest.mark.parametrize("seed", range(20))
def test_exercises_match_the_budget_rule(seed):
    chunk = exercise.first_chunk(seed)
    steps = exercise.prompt_steps(seed)
    p = chunk.params
    left = p["budget"] - p["decodes"]
    assert chunk.answer == left
    assert steps.answer == cdiv(p["prompt"], left)
    assert steps.params == p
    if seed == 0:
        assert (chunk.answer, steps.answer) == (2040, 3)


@pytest.mark.parametrize(
    "p",
    [
        figures.Params(),
        figures.Params(decodes=48, prompt=16384),
        figures.Params(budget=512, decodes=100, prompt=3072),
        figures.Params(gpu="H100-SXM", budget=8192, max_num_seqs=1024, decodes=200),
        figures.Params(decodes=48, cached_pct=50),
        figures.Params(prompt=16384, cached_pct=75),
    ],
)
def test_spec_arithmetic_at_k0_is_the_replay(p):
    s = figures.simulate(p)
    _, tokens = figures.long_chunks(s)
    needed = figures.numbers(s)["needed"]
    part = figures.spec_part(p, 0, needed)["numbers"]
    assert (part["plain_chunk"], part["plain_steps"]) == (tokens[0], len(tokens))
    a = figures.spec_arithmetic(p.budget, p.running, needed)
    assert a["chunk"][0] == tokens[0]
    assert a["steps"][0] == len(tokens)


def test_timeline_classifies_every_scheduled_token():
    s = figures.simulate(figures.Params(cached_pct=50, decodes=20))
    fill = classify(s.run)
    assert (fill.used == s.run.num_scheduled_tokens).all()
    # The long request is prompt until it samples, then decode.
    kinds = [kd for items in fill.items for q, _, kd in items if q == s.long]
    first_decode = kinds.index(DECODE)
    assert set(kinds[:first_decode]) == {PROMPT} and set(kinds[first_decode:]) == {DECODE}
    fig = budget_timeline(s.run, first_step=2, last_step=6, fill=fill)
    assert len(fig["frames"]) == 5
    assert fig["layout"]["sliders"][0]["steps"][0]["label"] == "2"


def test_long_timelines_are_sampled_and_say_so():
    p = figures.Params(gpu="H100-SXM", budget=256, max_num_seqs=256, prompt=65536)
    result = figures.build(p)
    first, last = figures.window(result["scenario"])
    assert last - first + 1 > 200
    fig = result["timeline"]
    assert len(fig["frames"]) == 200
    assert f"200 of {last - first + 1} steps, evenly sampled" in fig["layout"]["title"]["text"]
    assert result["numbers"]["num_chunks"] == cdiv(65536, 256 - 8)
