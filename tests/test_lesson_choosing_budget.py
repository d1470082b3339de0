"""Lesson 4, "Choosing the budget": the page, its sliders, its quiz, and its exercise's answers.

Why: the page must open on the course's worked example (3,968 prompt tokens per step, 6 steps),
every control must move the numbers the way the lesson says, and every exercise answer must
agree with an independent scheduler (tests/reference_scheduler.py) and with vLLM's own recording
of the worked example (tests/data/exercise.json).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lessons.choosing_budget import exercise, figures
from lessons.course import lesson
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.scheduler import run_steps
from sim.workload import Workload
from tests import reference_scheduler
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values
from tests.scenarios import load_recording

PAGE = "pages/lesson_choosing_budget.py"


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _number(text: str) -> float:
    return float(text.replace(",", "").split()[0])


def _read(at) -> dict[str, float]:
    assert not at.exception, [e.value for e in at.exception]
    m = _metrics(at)
    return {
        "chunk": _number(m["Prompt tokens per step"]),
        "steps": _number(m["Steps to read it in"]),
        "worst_ms": _number(m["Longest step (users wait)"]),
        "ttft_s": _number(m["Its first token after"]),
    }


def _move(at, kind: str, key: str, value) -> dict[str, float]:
    getattr(at, kind)(key=key).set_value(value).run()
    return _read(at)


def _chart(at, title_word: str) -> dict:
    for chart in charts(at):
        if title_word in chart["layout"]["title"]["text"]:
            return chart
    raise AssertionError(f"no chart titled with {title_word!r}")


def test_opens_on_the_worked_example():
    at = run_page(PAGE)
    n = _read(at)
    assert n["chunk"] == 3968
    assert n["steps"] == 6
    text = " ".join(m.value for m in at.markdown)
    assert "**3,968**" in text and "**6 steps**" in text and "160" in text
    assert at.select_slider(key="budget").value == 4096
    # The animation opens on the same budget, and its first frame has the 6 prefill steps.
    anim = _chart(at, "Budget 4,096")
    x = trace_values(anim, "x")[0]
    assert sum(1 for v in x if v is None or (isinstance(v, float) and math.isnan(v))) == 6


def test_every_chart_is_a_valid_plotly_figure():
    """ui/charts.show sends the dicts unvalidated, so validate what the page sent here."""
    import plotly.graph_objects as go

    at = run_page(PAGE)
    for chart in charts(at):
        go.Figure(chart)  # raises on any property Plotly does not know


def test_each_slider_moves_the_numbers_the_lessons_way():
    at = run_page(PAGE, query={"budget": "2048"})
    small = _read(at)
    big = _move(at, "select_slider", "budget", 8192)
    # A bigger budget: bigger chunks, fewer but longer steps, an earlier first token.
    assert big["chunk"] > small["chunk"]
    assert big["steps"] < small["steps"]
    assert big["worst_ms"] > small["worst_ms"]
    assert big["ttft_s"] < small["ttft_s"]
    # More streaming users leave less room for the prompt.
    at.select_slider(key="budget").set_value(4096).run()
    few = _move(at, "slider", "decodes", 16)
    many = _move(at, "slider", "decodes", 512)
    assert many["chunk"] < few["chunk"]
    assert many["steps"] > few["steps"]
    assert many["worst_ms"] > few["worst_ms"]
    # A longer prompt: the same chunks, more of them, a later first token.
    short = _move(at, "select_slider", "prompt", 8192)
    long = _move(at, "select_slider", "prompt", 65536)
    assert long["steps"] > short["steps"]
    assert long["ttft_s"] > short["ttft_s"]
    assert long["chunk"] == short["chunk"]


def _star_x(at) -> float | None:
    trade = _chart(at, "trade")
    for trace, xs in zip(trade["data"], trace_values(trade, "x"), strict=True):
        if trace.get("name", "").startswith("largest budget within"):
            return xs[0]
    return None


def test_a_looser_latency_target_picks_a_larger_budget():
    at = run_page(PAGE, query={"itl": "40"})
    tight = _star_x(at)
    at.slider(key="itl").set_value(150).run()
    loose = _star_x(at)
    assert tight is not None and loose is not None
    assert loose > tight
    # The pick is the largest budget whose longest step meets the target.
    c = figures.compute(figures.Params(itl_target_ms=40))
    pick = figures.pick_budget(c, 40)
    assert pick == tight
    assert c["worst_ms"][np.searchsorted(c["grid"], pick)] <= 40
    assert c["worst_ms"][np.searchsorted(c["grid"], pick + 256)] > 40


def test_choosing_a_gpu_sets_vllms_default_budget():
    at = run_page(PAGE)
    at.selectbox(key="gpu").set_value("L4").run()
    assert not at.exception
    assert at.select_slider(key="budget").value == 2048
    assert any("2,048" in c.value for c in at.caption)
    at.select_slider(key="budget").set_value(1024).run()  # the learner may override it
    assert at.select_slider(key="budget").value == 1024


def test_no_room_for_the_prompt_is_explained():
    at = run_page(PAGE, query={"budget": "512", "decodes": "512"})
    text = " ".join(m.value for m in at.markdown)
    assert "No room for the prompt" in text


def test_chunks_follow_the_scheduler():
    """The lesson's step contents equal what Stepwise's scheduler does, for random settings."""
    rng = np.random.default_rng(4)
    for _ in range(6):
        budget = int(rng.choice([512, 1024, 2048, 4096, 8192]))
        decodes = int(rng.integers(1, min(budget // 2, 200)))
        prompt = int(rng.integers(budget, 6 * budget))
        arrive = -(-decodes * 16 // (budget - decodes)) + 2  # every decode is running by then
        wl = Workload.build(
            [16] * decodes + [prompt],
            [400] * decodes + [2],
            arrival_step=[1] * decodes + [arrive],
        )
        cfg = SchedulerConfig(
            max_num_batched_tokens=budget,
            max_num_seqs=256,
            max_model_len=65536,
            num_gpu_blocks=20000,
        )
        run = run_steps(cfg, wl, record_detail=True)
        long = decodes
        got = [
            int(d.scheduled_tokens[d.scheduled_req == long][0])
            for d in run.detail[run.first_scheduled_step[long] - 1 : run.first_token_step[long]]
        ]
        b = figures.prefill_batches(np.array([budget]), decodes, prompt, figures.CONTEXT)
        assert got == b["chunk"].tolist(), (budget, decodes, prompt)
        assert run.first_scheduled_step[long] == arrive
        steps = slice(arrive - 1, arrive - 1 + len(got))
        assert run.num_scheduled_tokens[steps].tolist() == b["query_tokens"].tolist()


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("choosing_budget").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "choosing_budget", "tiny_budget")


def test_exercise_is_graded_on_the_page():
    at = run_page(PAGE)
    box = next(n for n in at.number_input if "tokens" in n.label)
    box.set_value(3968).run()
    at.button(key="exercise-choosing-budget-chunk-check").click().run()
    assert at.session_state["progress"].xp == 10
    assert any("Correct" in s.value for s in at.success)


def test_worked_example_matches_vllms_recording():
    rec = load_recording("exercise")
    chunks = [
        s["num_scheduled_tokens"]["long"]
        for s in rec["steps"]
        if "long" in s["num_scheduled_tokens"]
    ]
    per = rec["per_request"]["long"]
    steps = per["first_token_step"] - per["first_scheduled_step"] + 1
    solved = exercise.solve(0)
    assert solved["chunks"] == chunks[:steps] == [3968] * 5 + [160]
    assert solved["steps"] == steps == 6
    config, workload, arrive = exercise.setup(exercise.scenario(0))
    assert config.max_num_batched_tokens == rec["settings"]["max_num_batched_tokens"]
    assert arrive == next(r["arrival_step"] for r in rec["requests"] if r["id"] == "long")


def _reference_answers(seed: int) -> dict:
    """Chunk, steps and first-token time from the reference scheduler, priced independently."""
    s = exercise.scenario(seed)
    config, workload, arrive = exercise.setup(s)
    requests = [
        {
            "id": rid,
            "prompt_len": int(p),
            "output_len": int(o),
            "arrival_step": int(a),
            "priority": 0,
        }
        for rid, p, o, a in zip(
            workload.request_ids,
            workload.prompt_tokens,
            workload.output_tokens,
            workload.arrival_step,
            strict=True,
        )
    ]
    settings = {
        "max_num_batched_tokens": config.max_num_batched_tokens,
        "max_num_seqs": config.max_num_seqs,
        "max_model_len": config.max_model_len,
        "block_size": 16,
        "num_gpu_blocks": config.num_gpu_blocks,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": False,
        "policy": "fcfs",
        "long_prefill_token_threshold": 0,
        "watermark": 0.0,
        "scheduler_reserve_full_isl": True,
        "async_scheduling": False,
        "max_steps": 20000,
    }
    ref = reference_scheduler.replay({"settings": settings, "requests": requests})
    per = ref["per_request"]["long"]
    first, last = per["first_scheduled_step"], per["first_token_step"]
    # Rebuild each step's cost-model inputs from the reference's token counts.
    computed = dict.fromkeys(workload.request_ids, 0)
    rows = []
    for step in ref["steps"]:
        sched = step["num_scheduled_tokens"]
        ctx = [computed[r] for r in sched]
        tok = list(sched.values())
        if first <= step["step"] <= last:
            rows.append(
                (
                    sum(tok),
                    len(tok),
                    sum(ctx),
                    sum(t * c + t * (t + 1) // 2 for t, c in zip(tok, ctx, strict=True)),
                )
            )
        for r, t in sched.items():
            computed[r] += t
        for r in step["finished_req_ids"]:
            computed[r] = 0
    q, n, kv, pairs = (np.array(col) for col in zip(*rows, strict=True))
    ms = step_costs(
        Deployment(gpu=exercise.GPU, model=exercise.MODEL),
        query_tokens=q,
        num_seqs=n,
        kv_read_tokens=kv,
        attn_pairs=pairs,
    ).step_ms
    chunk = next(s["num_scheduled_tokens"]["long"] for s in ref["steps"] if s["step"] == first)
    return {"chunk": chunk, "steps": last - first + 1, "ttft_ms": float(np.sum(ms))}


@pytest.mark.parametrize("seed", range(20))
def test_exercise_answers_match_the_reference_scheduler(seed):
    expected = _reference_answers(seed)
    drawn = {spec.id: spec.draw(seed) for spec in exercise.EXERCISES}
    assert drawn["chunk"].answer == expected["chunk"]
    assert drawn["steps"].answer == expected["steps"]
    assert drawn["ttft"].answer == pytest.approx(expected["ttft_ms"], rel=1e-9)
    s = exercise.scenario(seed)
    assert expected["chunk"] == s.budget - s.decodes  # the prompt gets what the decodes leave
    assert drawn["chunk"].is_correct(expected["chunk"])
    assert not drawn["steps"].is_correct(expected["steps"] + 1)
    assert f"{s.budget:,}" in drawn["chunk"].prompt and f"{s.prompt:,}" in drawn["chunk"].prompt
