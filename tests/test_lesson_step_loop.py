"""Lesson "The step loop": the page, the animation and the hand stepper on the replayed
scenario, the controls' effects, the per-request state the frames show, the quiz and exercises.

Why: every frame of this lesson claims something about vLLM's loop (who waits, who runs, how
many blocks each request holds). The state the figures draw is derived from the run's detail,
so it is checked here against the scheduler's own counters; the controls must move the picture
the way the lesson says (a bigger KV pool means no preemption, a smaller budget more steps).
"""

from __future__ import annotations

import pytest

from lessons.course import lesson
from lessons.step_loop import exercise, figures
from sim.kv import cdiv
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page

PAGE = "pages/lesson_step_loop.py"


def _anim(at) -> dict:
    return next(c for c in charts(at) if c.get("frames"))


def _still(at) -> dict:
    return next(c for c in charts(at) if not c.get("frames"))


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _title(chart: dict) -> str:
    """The step line the figure prints at its top (a text trace, so frames can change it)."""
    return next(t["text"][0] for t in chart["data"] if t.get("xaxis") == "x5")


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


def test_page_runs_and_animates_every_step(opening):
    r = figures.simulate(figures.Params())
    anim = _anim(opening)
    assert len(anim["frames"]) == r.run.num_steps <= 200
    labels = [s["label"] for s in anim["layout"]["sliders"][0]["steps"]]
    assert labels == [str(k) for k in range(1, r.run.num_steps + 1)]
    assert _metric(opening, "Steps") == str(r.run.num_steps)
    # The step time in each frame is the cost model's price of that step.
    frame6 = next(
        t["text"][0]
        for t in anim["frames"][5]["data"]
        if str(t.get("text", [""])[0]).startswith("Step")
    )
    assert frame6.startswith("Step 6 of") and f"{r.step_ms[5]:.1f} ms" in frame6


def test_default_pool_runs_dry_and_the_story_says_so(opening):
    assert _metric(opening, "Preemptions") == "1"
    at = run_page(PAGE, query={"sl-step": "6"})
    assert at.slider(key="sl-step").value == 6
    assert "Step 6 of" in _title(_still(at))
    story = " ".join(m.value for m in at.markdown)
    assert "preempted" in story and "R4" in story


def test_next_and_previous_move_one_step(opening):
    at = run_page(PAGE)
    assert at.slider(key="sl-step").value == 1
    at.button(key="sl-step-next").click().run()
    assert at.slider(key="sl-step").value == 2
    assert _title(_still(at)).startswith("Step 2 of")
    at.button(key="sl-step-prev").click().run()
    at.button(key="sl-step-prev").click().run()
    assert at.slider(key="sl-step").value == 1


def test_bigger_pool_means_no_preemption():
    at = run_page(PAGE, query={"sl-blocks": "600"})
    assert _metric(at, "Preemptions") == "0"
    small = run_page(PAGE, query={"sl-blocks": "170"})
    assert int(_metric(small, "Steps")) > int(_metric(at, "Steps"))


def test_smaller_budget_or_seat_cap_means_more_steps(opening):
    base = int(_metric(opening, "Steps"))
    at = run_page(PAGE, query={"sl-defaults": "false", "sl-budget": "512"})
    assert int(_metric(at, "Steps")) > base
    at.slider(key="sl-seqs").set_value(1).run()
    assert not at.exception
    one_seat = int(_metric(at, "Steps"))
    assert one_seat > base
    anim = _anim(at)
    # With one seat the running list never holds more than one request.
    running = [t for frame in anim["frames"] for t in frame["data"] if t.get("type") == "scatter"]
    assert all(list(t.get("y") or []).count("running list") <= 1 for t in running)


def test_long_runs_are_sampled_and_say_so():
    result = figures.build(figures.Params(budget=256, max_num_seqs=1, blocks=figures.POOL_MIN))
    steps = result["numbers"]["num_steps"]
    assert steps > 200
    assert len(result["anim"]["frames"]) == 200
    assert f"200 of {steps} steps, evenly sampled" in result["anim"]["layout"]["title"]["text"]


@pytest.mark.parametrize(
    "p",
    [
        figures.Params(),
        figures.Params(blocks=figures.POOL_MIN),
        figures.Params(budget=512, max_num_seqs=2, blocks=200),
        figures.Params(gpu="H100-SXM", budget=8192, max_num_seqs=1024, blocks=900),
    ],
)
def test_frames_show_the_schedulers_own_state(p):
    r = figures.simulate(p)
    for k, d in enumerate(r.run.detail):
        assert r.blocks[k].sum() == d.kv_blocks_used_after_schedule
        assert r.fill.used[k] == r.run.num_scheduled_tokens[k]
    assert (r.streamed[-1] == r.run.num_output_tokens).all()
    assert r.step_ms.shape == (r.run.num_steps,) and (r.step_ms > 0).all()


def test_quiz_grades_and_awards_xp_once(opening):
    assert len(lesson("step_loop").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "step_loop", "blocks_run_out")


@pytest.mark.parametrize("seed", range(20))
def test_exercises_match_closed_forms(seed):
    blocks = exercise.blocks_after_steps(seed)
    p = blocks.params
    assert blocks.answer == cdiv(p["prompt"] + p["step"] - 1, 16)
    wait = exercise.seq_budget_wait(seed)
    q = wait.params
    assert wait.answer == (cdiv(q["count"], q["seqs"]) - 1) * q["output"] + 1
    assert f"**{int(wait.answer)}**" in wait.solution
    if seed == 0:
        assert (blocks.answer, wait.answer) == (39, 25)


def test_exercise_is_graded_on_the_page(opening):
    at = run_page(PAGE)
    drawn = exercise.blocks_after_steps(0)
    at.number_input(key="answer-step-loop-blocks-0").set_value(drawn.answer + 1)
    at.button(key="exercise-step-loop-blocks-check").click().run()
    assert at.session_state["progress"].xp == 0
    at.number_input(key="answer-step-loop-blocks-0").set_value(drawn.answer)
    at.button(key="exercise-step-loop-blocks-check").click().run()
    assert at.session_state["progress"].xp == 10
