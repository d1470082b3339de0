"""Lesson 4, "Choosing the budget": its Readout, its page, its quiz and its exercise's answers.

Why: the page must open on the course's worked example (3,968 prompt tokens per step, 6 steps,
about 128 ms and 0.56 s), every control must move the Readout and the charts the way the
scheduler and the cost model say, the animation must open at the budget the control shows, a
GPU change must set that GPU's vLLM default, and every exercise answer must agree with an
independent scheduler (tests/reference_scheduler.py) and with vLLM's own recording of the worked
example (tests/data/exercise.json).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from lessons.choosing_budget import exercise, figures, placing
from lessons.choosing_budget.lesson import (
    BUDGETS,
    CONTEXT,
    MAX_PREFILL_STEPS,
    PREFIX,
    USER_PROMPT,
    Params,
    build,
    default_budget,
    lane,
    lane_config,
    pick_budget,
    runnable,
    scenario,
)
from lessons.course import lesson
from lessons.kit import story
from lessons.kit.controls import declared
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment, ridge_tokens, step_costs
from sim.hardware import default_batch_limits
from sim.scheduler import run_steps
from tests import reference_scheduler
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values
from tests.scenarios import load_recording

PAGE = "views/lesson_choosing_budget.py"
SCENE = ("H100-SXM", "Llama-3.1-8B", 128, 20_000)


def _page(query: dict | None = None):
    at = run_page(PAGE, query=query)
    assert not at.exception, [e.value for e in at.exception]
    return at


def _rerun(at):
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _readout(at):
    """The Readout of what the page's controls show."""
    return build(
        Params(
            gpu=at.selectbox(key="w:gpu").value,
            model=at.selectbox(key="w:model").value,
            budget=at.select_slider(key="w:choose-budget").value,
            decodes=at.slider(key="w:choose-decodes").value,
            prompt=at.select_slider(key="w:choose-prompt").value,
            itl_target_ms=at.slider(key="w:choose-itl").value,
        )
    )


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric if m.label != "XP"}


def _chart(at, title_word: str) -> dict:
    for chart in charts(at):
        if title_word in chart["layout"]["title"]["text"]:
            return chart
    raise AssertionError(f"no chart titled with {title_word!r}")


def _trace_x(chart: dict, name_start: str) -> list[float] | None:
    for trace, xs in zip(chart["data"], trace_values(chart, "x"), strict=True):
        if trace.get("name", "").startswith(name_start) or (
            name_start in (trace.get("text") or ["", ""])[1]
        ):
            return xs
    return None


def _anim(at) -> dict:
    return next(c for c in charts(at) if c.get("frames"))


def _prefill_rects(xs: list) -> int:
    """Prefill steps drawn in a lane trace: one NaN (None in JSON) ends each rectangle."""
    return sum(1 for v in xs if v is None or (isinstance(v, float) and math.isnan(v)))


def _metrics_follow(at, r) -> None:
    """The metric row shows the Readout's numbers (as text.md formats them)."""
    m = _metrics(at)
    assert m["Prompt tokens per step"] == f"{r.chunk:,}"
    assert m["Steps to read it in"] == f"{r.steps:,}"
    assert m["Longest step (users wait)"] == f"{r.worst_ms:,.0f} ms"
    assert m["Its first token after"] == f"{r.ttft_s:.2f} s"


# -- the seed numbers ----------------------------------------------------------------------------


def test_the_default_readout_is_the_worked_example():
    r = build(Params())
    assert (r.budget, r.decodes, r.prompt) == (4096, 128, 20_000)
    assert (r.room, r.chunk, r.full_chunks, r.last_chunk, r.steps) == (3968, 3968, 5, 160, 6)
    assert r.uneven_chunks and not r.even_chunks and not r.one_step and r.simulated
    # The numbers the seed shows: the cost model's under async scheduling, every step
    # OVERHEAD_MS shorter than the synchronous engine's 131.4 ms (longest), 13.1 ms (decodes
    # only) and 45.2 ms (the pick's longest), and the prompt's first token 6 of them sooner.
    assert r.worst_ms == pytest.approx(131.4 - OVERHEAD_MS, abs=0.5)
    assert r.ttft_s == pytest.approx(0.568 - r.steps * OVERHEAD_MS / 1e3, abs=0.002)
    assert r.decode_ms == pytest.approx(13.1 - OVERHEAD_MS, abs=0.2)
    assert (r.pick, r.target_ms) == (1280, 50)
    assert r.pick_worst_ms == pytest.approx(45.2 - OVERHEAD_MS, abs=0.5) and r.pick_steps == 18
    assert (r.default_budget, r.is_default, r.opening_budget) == (8192, False, 4096)
    assert r.fits and not r.kv_short and not r.seqs_capped and not r.too_long


def test_opens_on_the_worked_example():
    at = _page()
    assert at.select_slider(key="w:choose-budget").value == 4096
    r = _readout(at)
    _metrics_follow(at, r)
    assert _metrics(at)["Prompt tokens per step"] == "3,968"
    assert _metrics(at)["Steps to read it in"] == "6"
    # The animation opens on the same budget, its first frame with the 6 prefill steps.
    anim = _anim(at)
    assert anim["layout"]["title"]["text"].startswith("Budget 4,096:")
    assert anim["layout"]["sliders"][0]["active"] == r.anim_start
    assert anim["layout"]["sliders"][0]["steps"][r.anim_start]["label"] == "4,096"
    assert _prefill_rects(trace_values(anim, "x")[0]) == 6
    assert r.anim_exact and not [c for c in at.caption if "nearest" in c.value]


def test_every_chart_is_a_valid_plotly_figure():
    """ui/charts.show sends the dicts unvalidated, so validate what the page sent here."""
    import plotly.graph_objects as go

    at = _page()
    for chart in charts(at):
        go.Figure(chart)  # raises on any property Plotly does not know


# -- against the scheduler and the cost model ------------------------------------------------------


def _async_ms(ms: np.ndarray) -> np.ndarray:
    """A step's time under async scheduling (SCHEDULER.md g): the CPU's part hides behind the
    GPU's, so the cost model's price loses OVERHEAD_MS (down to the CPU's time at least)."""
    return np.maximum(ms - OVERHEAD_MS, OVERHEAD_MS)


def test_each_lane_follows_the_scheduler_and_the_cost_model():
    """A lane's chunks are what Stepwise's scheduler schedules for the long prompt (a step
    replay of the same scenario, async as the lesson), its TTFT is the sum of those steps'
    prices under async scheduling, its worst gap the longest of them, and the users hold about
    CONTEXT tokens when it arrives."""
    rng = np.random.default_rng(4)
    dep = Deployment("H100-SXM", "Llama-3.1-8B")
    for _ in range(4):
        budget = int(rng.choice([512, 1024, 2048, 4096, 8192]))
        decodes = int(rng.integers(1, min(budget // 2, 200)))
        prompt = int(rng.integers(budget, 6 * budget))
        got = lane("H100-SXM", "Llama-3.1-8B", decodes, prompt, budget)
        s = scenario(decodes, prompt, budget)
        cfg = SchedulerConfig(
            max_num_batched_tokens=budget,
            max_num_seqs=decodes + 1,
            max_model_len=200_000,
            num_gpu_blocks=s.blocks_needed(),
            async_scheduling=True,
        )
        run = run_steps(cfg, s.workload(), record_detail=True)
        long = s.long_index
        first, last = run.first_scheduled_step[long], run.first_token_step[long]
        chunks = [
            int(d.scheduled_tokens[d.scheduled_req == long][0])
            for d in run.detail[first - 1 : last]
        ]
        assert got.chunks.tolist() == chunks, (budget, decodes, prompt)
        assert got.steps == math.ceil(prompt / (budget - decodes)) == len(chunks)
        assert first == s.arrival()
        rows = slice(first - 1, last)
        ms = step_costs(
            dep,
            query_tokens=run.num_scheduled_tokens[rows],
            num_seqs=run.num_scheduled_seqs[rows],
            kv_read_tokens=run.kv_read_tokens[rows],
            attn_pairs=run.attn_pairs[rows],
        ).step_ms
        ms = _async_ms(ms)
        assert got.ttft_ms == pytest.approx(float(np.sum(ms)), rel=1e-6)
        assert got.worst_ms == pytest.approx(float(np.max(ms)), rel=1e-9)
        # Each user's context when the prompt arrives: its prompt and what it streamed.
        ctx = run.kv_read_tokens[first - 2] / decodes
        assert CONTEXT - 1 <= ctx <= CONTEXT + math.ceil(decodes * USER_PROMPT / budget) + 2


def test_the_lesson_runs_and_says_async_scheduling():
    """Issue 9: a deployment's latency target is met under vLLM's AsyncScheduler, so every lane
    runs it, and the text says so; under it the longest step is OVERHEAD_MS shorter than the
    same run's synchronous price."""
    cfg = lane_config(*SCENE, 4096)
    assert cfg.async_scheduling
    r = build(Params())
    for name in ("numbers-caption", "method"):
        told = " ".join(story.text(lesson("choosing_budget").text_path, name, r).split())
        assert "async" in told and "`AsyncScheduler`" in told, name
        assert f"the CPU's {OVERHEAD_MS:.0f} ms" in told, name
    s = scenario(128, 20_000, 4096)
    sync = run_steps(replace(cfg, async_scheduling=False), s.workload(), record_detail=True)
    first, last = sync.first_scheduled_step[s.long_index], sync.first_token_step[s.long_index]
    rows = slice(first - 1, last)
    ms = step_costs(
        Deployment(*SCENE[:2]),
        query_tokens=sync.num_scheduled_tokens[rows],
        num_seqs=sync.num_scheduled_seqs[rows],
        kv_read_tokens=sync.kv_read_tokens[rows],
        attn_pairs=sync.attn_pairs[rows],
    ).step_ms
    assert r.worst_ms == pytest.approx(float(ms.max()) - OVERHEAD_MS, rel=1e-9)
    at = _page()
    assert " ".join(story.text(lesson("choosing_budget").text_path, "method", r).split()) in (
        " ".join(" ".join(c.value for c in at.caption).split())
    )


def test_the_pick_is_the_largest_budget_within_the_target():
    ok = [b for b in BUDGETS if runnable(128, 20_000, b)]
    worst = {b: lane(*SCENE, b).worst_ms for b in ok}
    for target in (30, 50, 100, 150, 250):
        expected = max(b for b in ok if worst[b] <= target)
        assert pick_budget(*SCENE, target) == expected, target
    assert pick_budget(*SCENE, 10) is None


# -- every control ---------------------------------------------------------------------------------


def test_the_budget_moves_the_readout_the_metrics_and_both_charts():
    at = _page({"choose-budget": "2048"})
    small = _readout(at)
    _metrics_follow(at, small)
    at.select_slider(key="w:choose-budget").set_value(8192)
    big = _readout(_rerun(at))
    _metrics_follow(at, big)
    # A bigger budget: bigger chunks, fewer but longer steps, an earlier first token.
    assert big.chunk > small.chunk and big.steps < small.steps
    assert big.worst_ms > small.worst_ms and big.ttft_s < small.ttft_s
    assert big.chunk == lane(*SCENE, 8192).chunks[0] == 8192 - 128
    trade = _chart(at, "trade")
    assert _trace_x(trade, "your budget")[0] == 8192
    assert _anim(at)["layout"]["title"]["text"].startswith("Budget 8,192:")


def test_more_users_leave_less_room_and_slow_every_step():
    at = _page({"choose-decodes": "16"})
    few = _readout(at)
    _metrics_follow(at, few)
    at.slider(key="w:choose-decodes").set_value(512)
    many = _readout(_rerun(at))
    _metrics_follow(at, many)
    assert many.chunk == 4096 - 512 < few.chunk == 4096 - 16
    assert many.steps > few.steps and many.worst_ms > few.worst_ms
    assert many.decode_ms > few.decode_ms
    assert "512 users" in _chart(at, "trade")["layout"]["title"]["text"]


def test_a_longer_prompt_needs_more_of_the_same_chunks():
    at = _page({"choose-prompt": "8192"})
    short = _readout(at)
    at.select_slider(key="w:choose-prompt").set_value(65536)
    long = _readout(_rerun(at))
    _metrics_follow(at, long)
    assert long.steps > short.steps and long.ttft_s > short.ttft_s
    assert long.chunk == short.chunk == 3968
    assert long.steps == math.ceil(65536 / 3968)


def test_a_looser_latency_target_picks_a_larger_budget():
    at = _page({"choose-itl": "40"})
    tight = _readout(at)
    at.slider(key="w:choose-itl").set_value(150)
    loose = _readout(_rerun(at))
    assert tight.has_pick and loose.has_pick and loose.pick > tight.pick
    star = _trace_x(_chart(at, "trade"), "largest budget within")
    assert star == [loose.pick]
    assert loose.pick_worst_ms <= 150 < lane(*SCENE, loose.pick + 256).worst_ms


def test_the_model_moves_the_step_times():
    at = _page()
    small = _readout(at)
    at.selectbox(key="w:model").set_value("Llama-3.1-70B")
    big = _readout(_rerun(at))
    assert big.model == "Llama-3.1-70B" and big.worst_ms > small.worst_ms
    assert big.chunk == small.chunk  # the scheduler's rule does not depend on the model
    _metrics_follow(at, big)


def test_choosing_a_gpu_sets_vllms_default_budget():
    at = _page()
    at.selectbox(key="w:gpu").set_value("L4")
    _rerun(at)
    assert at.select_slider(key="w:choose-budget").value == default_budget("L4") == 2048
    r = _readout(at)
    assert r.is_default and r.default_budget == 2048
    _metrics_follow(at, r)
    assert any("2,048" in c.value for c in at.caption)
    at.select_slider(key="w:choose-budget").set_value(1024)  # the learner may override it
    _rerun(at)
    assert at.select_slider(key="w:choose-budget").value == 1024


def test_the_use_default_button_sets_the_default():
    at = _page({"choose-budget": "1024"})
    button = at.button(key="choose-use-default")
    assert not button.disabled and button.label == "Use 8,192"
    button.click()
    _rerun(at)
    assert at.select_slider(key="w:choose-budget").value == 8192
    assert at.button(key="choose-use-default").disabled


# -- the animation opens where the controls are -----------------------------------------------


def test_the_animation_opens_at_the_nearest_frame_and_says_so():
    at = _page({"choose-budget": "1280"})
    r = _readout(at)
    assert not r.anim_exact and r.anim_budget == 1536  # nearest on the log scale
    anim = _anim(at)
    assert anim["layout"]["sliders"][0]["steps"][r.anim_start]["label"] == "1,536"
    assert anim["layout"]["title"]["text"].startswith("Budget 1,536:")
    assert any("1,536" in c.value and "nearest" in c.value for c in at.caption)
    # Every frame is that budget's run: its prefill steps, up to the drawing cap.
    for frame, lane_ in zip(anim["frames"], r.frames, strict=True):
        xs = frame["data"][0]["x"]
        drawn = _prefill_rects(xs)
        assert drawn == min(lane_.steps, figures.MAX_LANE_STEPS) or lane_.start_ms[drawn] >= (
            r.window_ms
        )


# -- the edges -------------------------------------------------------------------------------------


def test_no_room_for_the_prompt_is_explained():
    r = build(Params(budget=512, decodes=512))
    assert not r.has_room and not r.simulated and not r.thin and r.steps == 0
    at = _page({"choose-budget": "512", "choose-decodes": "512"})
    assert _metrics(at) == {"Prompt tokens per step": "0", "Steps to read it in": "none"}
    assert _trace_x(_chart(at, "trade"), "your budget") is None
    assert not _readout(at).anim_exact


def test_a_budget_too_thin_to_simulate_is_explained():
    r = build(Params(budget=256, decodes=200, prompt=131_072))
    assert r.thin and not r.simulated
    assert r.steps == math.ceil(131_072 / 56) > MAX_PREFILL_STEPS
    at = _page({"choose-budget": "256", "choose-decodes": "200", "choose-prompt": "131072"})
    assert _metrics(at) == {"Prompt tokens per step": "56", "Steps to read it in": f"{r.steps:,}"}


def test_warnings_follow_the_scene():
    assert build(Params(prompt=131_072)).too_long  # Llama-3.1-8B takes 131,072 tokens at most
    assert build(Params(gpu="L4", model="Llama-3.1-70B")).fits is False
    capped = build(Params(gpu="L4", budget=2048, decodes=300))
    assert capped.seqs_capped and capped.max_seqs == 256


@pytest.mark.parametrize(
    "query",
    [
        {"choose-budget": "256", "choose-decodes": "1", "choose-prompt": "16", "choose-itl": "10"},
        {"choose-budget": "32768", "choose-decodes": "1024", "choose-prompt": "131072"},
        {"choose-budget": "256", "choose-decodes": "1024"},
        {"choose-itl": "300", "gpu": "L4", "model": "Llama-3.1-70B"},
    ],
)
def test_controls_at_their_extremes_raise_nothing(query):
    at = _page(query)
    assert charts(at)


# -- quiz and exercise ---------------------------------------------------------------------------


def test_the_tiny_budget_paragraph_quotes_the_ridge():
    """A step pays for a full weight read only below the ridge: the text says where that is,
    from sim.cost, for the selection (a faster GPU has a later ridge)."""
    text = lesson("choosing_budget").text_path
    for p in (Params(), Params(gpu="A100-80GB")):
        r = build(p)
        assert r.ridge == pytest.approx(ridge_tokens(Deployment(p.gpu, p.model)))
        told = " ".join(story.text(text, "small", r).split())
        assert f"fewer than about **{r.ridge:,.0f}** tokens, this GPU's ridge point" in told
        assert "Each step reads all of the model's weights once, however few" not in told
    assert build(Params()).ridge > build(Params(gpu="A100-80GB")).ridge


def test_the_budget_caps_a_step_and_does_not_fill_it():
    """The quiz's "cap_not_size": steps with decodes only hold one token per user whatever the
    budget (the lesson's scene, before the prompt arrives)."""
    q = lesson("choosing_budget").bank().question("cap_not_size")
    assert q.correct_choice.startswith("Nothing")
    for budget in (4096, 8192):
        s = scenario(128, 20_000, budget)
        run = run_steps(lane_config(*SCENE, budget), s.workload())
        warm = int(run.first_token_step[:128].max())
        assert (run.num_scheduled_tokens[warm : s.arrival() - 1] == 128).all()


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("choosing_budget").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "choosing_budget", "tiny_budget")


def test_exercise_is_graded_on_the_page():
    at = _page()
    drawn = exercise.draw_ttft(0)
    box = at.number_input(key="answer-choosing-budget-ttft-0")
    box.set_value(round(drawn.answer, 2)).run()
    at.button(key="exercise-choosing-budget-ttft-check").click().run()
    assert at.session_state["progress"].xp == 10
    assert any("Correct" in s.value for s in at.success)


def test_the_exercise_and_the_lab_show_the_same_worked_example():
    """Issue 13: seed 0 is the lab's opening scene, run by the lab's own lane, so the exercise's
    first token is the lab's, and both say so from the same number."""
    r = build(Params())
    drawn = exercise.draw_ttft(0)
    assert drawn.answer == r.ttft_ms
    assert f"**{r.ttft_ms:,.0f} ms**" in drawn.solution
    assert f"first token after {r.ttft_s:.2f} s" in " ".join(drawn.solution.split())
    assert f"about {r.context:,} tokens of conversation" in " ".join(drawn.prompt.split())
    solved = exercise.solve(0)
    assert (solved["chunk"], solved["steps"]) == (r.chunk, r.steps)
    # The mean step time the prompt quotes, times the steps, is the answer.
    assert solved["steps"] * solved["mean_ms"] == pytest.approx(drawn.answer, rel=1e-6)
    assert f"{solved['mean_ms']:.1f} ms" in drawn.prompt
    # Only seed 0 is the lab's scene; the others say nothing about the lab.
    assert "lab's opening scene" not in exercise.draw_ttft(1).solution


def test_worked_example_matches_vllms_recording():
    """The worked example's chunks are those vLLM recorded. The recording's users had streamed
    fewer tokens (100 outputs, against the lab's conversations of about CONTEXT tokens): that
    changes the step times, not the chunks (tests/test_seed_numbers.py replays the recording's
    own workload)."""
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
    config, workload, _ = exercise.setup(exercise.scenario(0))
    assert config.max_num_batched_tokens == rec["settings"]["max_num_batched_tokens"]
    assert workload.prompt_tokens[:128].tolist() == [16] * 128  # the recording's user prompts
    assert workload.prompt_tokens[128] == 20_000


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
        "block_size": config.block_size,
        "num_gpu_blocks": config.num_gpu_blocks,
        "enable_chunked_prefill": True,
        "enable_prefix_caching": False,
        "policy": "fcfs",
        "long_prefill_token_threshold": 0,
        "watermark": 0.0,
        "scheduler_reserve_full_isl": True,
        "async_scheduling": config.async_scheduling,
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
    assert config.async_scheduling  # the lab's mode, priced as SCHEDULER.md g says
    ms = _async_ms(ms)
    chunk = next(s["num_scheduled_tokens"]["long"] for s in ref["steps"] if s["step"] == first)
    return {"chunk": chunk, "steps": last - first + 1, "ttft_ms": float(np.sum(ms))}


@pytest.mark.parametrize("seed", range(20))
def test_exercise_answers_match_the_reference_scheduler(seed):
    expected = _reference_answers(seed)
    drawn = {spec.id: spec.draw(seed) for spec in exercise.EXERCISES}
    assert set(drawn) == {"ttft"}
    solved = exercise.solve(seed)
    assert solved["chunk"] == expected["chunk"] and solved["steps"] == expected["steps"]
    # The timed run's prompt arrives 1e-9 s before its step (sim.scenarios.ARRIVAL_EARLY_S).
    assert drawn["ttft"].answer == pytest.approx(expected["ttft_ms"], rel=1e-8)
    s = exercise.scenario(seed)
    assert expected["chunk"] == s.budget - s.decodes  # the prompt gets what the decodes leave
    assert f"**{expected['chunk']:,} token" in drawn["ttft"].solution
    assert f"**{expected['steps']} steps**" in drawn["ttft"].solution
    assert not drawn["ttft"].is_correct(expected["ttft_ms"] * 1.1)
    assert f"{s.budget:,}" in drawn["ttft"].prompt and f"{s.prompt:,}" in drawn["ttft"].prompt


@pytest.mark.parametrize(
    "changes",
    [{}, {"gpu": "L4"}, {"budget": 16384}, {"budget": 32768}, {"decodes": 8}, {"budget": 512}],
)
def test_a_budget_lines_label_keeps_off_the_curve(changes):
    """'vLLM default: 8,192' sat right on the curve of the longest step. Each label's text (a
    band LABEL_BAND of the panel tall, below its top) now clears the curve where it runs: from
    its line to twice (or half) the budget, sampled; and the two labels do not overlap."""
    r = build(replace(Params(), **changes))
    fig = figures.trade(r)
    lo, hi = fig["layout"]["yaxis"]["range"]
    band = placing.LABEL_BAND * (hi - lo)
    notes = fig["layout"]["annotations"]
    assert len(notes) == (1 if r.is_default else 2)
    for note in notes:
        x = 10 ** note["x"]
        xs = np.geomspace(x, x / 2 if note["xanchor"] == "right" else x * 2, 9)
        curve = np.log10(np.interp(xs, r.curve_budgets, r.curve_worst_ms))
        flat = np.log10([r.decode_ms, r.target_ms])  # the decode-only and target lines
        top = note["y"]
        marks = np.append(curve, flat)
        assert np.all((marks > top) | (marks < top - band)), (note["text"], marks, top)
        assert note["bgcolor"].startswith("rgba(255,255,255")  # a line it crosses runs behind
    if len(notes) == 2 and notes[0]["xanchor"] == notes[1]["xanchor"]:
        assert abs(notes[0]["y"] - notes[1]["y"]) >= band  # side by side: one above the other


# -- issue 36: diagram first -----------------------------------------------------------------------


OWN = {f"w:{d.url_key(PREFIX)}" for d in declared(Params)}  # the lesson's controls' widgets


def _in_order(at) -> list[tuple[str, str]]:
    """The main column in reading order: ("chart", title; "animation" for the animated one),
    ("md", text), ("expander", label), ("control", widget key)."""
    out = []
    for node in at.main:
        kind = getattr(node, "type", "")
        if kind == "plotly_chart":
            spec = json.loads(node.proto.spec)
            title = spec["layout"].get("title", {}).get("text", "")
            out.append(("chart", "animation" if spec.get("frames") else title))
        elif kind == "markdown":
            out.append(("md", node.value))
        elif kind == "expander":
            out.append(("expander", node.label))
        elif kind in ("select_slider", "slider", "selectbox") and node.key in OWN:
            out.append(("control", node.key))
    return out


def _question_at(order: list, question_id: str) -> int:
    number = [q.id for q in lesson("choosing_budget").bank().questions].index(question_id) + 1
    return next(i for i, (k, v) in enumerate(order) if k == "md" and v.startswith(f"**{number}.**"))


def _folded(at, topic: str) -> str:
    (box,) = [e for e in at.expander if e.label == f"Go deeper: {topic}"]
    return "\n".join([m.value for m in box.markdown] + [c.value for c in box.caption])


def test_the_page_opens_on_the_budget_and_its_trade():
    """The title, one sentence, the budget slider, then the trade chart; the other controls
    come after the chart, with their URL keys unchanged."""
    order = _in_order(_page())
    kinds = [k for k, _ in order]
    assert order[0] == ("md", "# Choosing the budget")
    intro = story.text(lesson("choosing_budget").text_path, "intro")
    assert order[1] == ("md", intro) and intro.count(". ") == 0 and intro.endswith(".")
    chart = kinds.index("chart")
    assert order[chart][1].startswith("The budget's trade")
    controls = [(i, v) for i, (k, v) in enumerate(order) if k == "control"]
    assert [v for i, v in controls if i < chart] == ["w:choose-budget"]
    after = {v for i, v in controls if i > chart}
    assert {"w:gpu", "w:model", "w:choose-decodes", "w:choose-prompt", "w:choose-itl"} <= after


def test_each_question_sits_under_the_chart_that_answers_it():
    at = _page()
    order = _in_order(at)
    trade = next(i for i, (k, v) in enumerate(order) if k == "chart" and "trade" in v)
    anim = next(i for i, (k, v) in enumerate(order) if (k, v) == ("chart", "animation"))
    for qid in ("tiny_budget", "why_slower", "rule", "no_budget_fits", "batch_job"):
        assert trade < _question_at(order, qid) < anim, qid
    for qid in ("cap_not_size", "ttft_not_linear"):
        assert anim < _question_at(order, qid), qid
    folds = [v for k, v in order if k == "expander"]
    assert "Check yourself on this chart: 3 questions" in folds
    assert "Check yourself on this chart: 2 questions" in folds
    assert "More practice: 1 exercise" in folds
    keys = [r.key for r in at.radio if r.key]
    for q in lesson("choosing_budget").bank().questions:  # each asked once, by its chart
        assert keys.count(f"quiz-choosing-budget-{q.id}".replace("_", "-")) == 1, q.id


def test_go_deeper_holds_what_left_the_main_flow():
    """The tiny-budget aside, the rough guide and the method fold away, whole; the method says
    the runs' max_num_seqs beside vLLM's serve defaults (issue 36, statement 6)."""
    r = build(Params())
    text = lesson("choosing_budget").text_path
    at = _page()
    labels = [e.label for e in at.expander]
    for topic in story.labels(text, "deeper").values():
        assert f"Go deeper: {topic}" in labels, topic
    assert story.text(text, "small", r) in _folded(at, "why not always a tiny budget")
    assert story.text(text, "guide", r) in _folded(at, "rough budgets by workload")
    method = " ".join(_folded(at, "how these numbers are made").split())
    assert " ".join(story.text(text, "method", r).split()) in method
    assert r.run_seqs == lane_config(*SCENE, r.budget).max_num_seqs == 129
    seqs = {g: default_batch_limits(g, usage="server")["max_num_seqs"] for g in ("L4", "H100-SXM")}
    assert f"`max_num_seqs` to the users plus the prompt ({r.run_seqs:,})" in method
    assert f"defaults to {seqs['L4']:,} on the L4 and {seqs['H100-SXM']:,} on the H100" in method
