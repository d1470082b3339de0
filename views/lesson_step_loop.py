"""Lesson page "The step loop": the title and the key sentence, then the one animated picture of
the run with its stepper, the story of the chosen step told in the loop's order (at_step ->
StepReadout, from step.md) and the questions it answers; below, the controls (drawn into the
page after the picture, built first), the run's numbers, the limits and preemption; async
scheduling, the loop in general and what a preempted request gets back are folded "Go deeper"
asides."""

import streamlit as st

from lessons.kit import story
from lessons.step_loop import figures, lesson
from ui.lesson_page import LessonPage
from ui.stepper import stepper

STEP = lesson.STEP_KEY
STORY = ("ev-lists", "ev-pick", "ev-pass", "ev-sample", "ev-kv")
page = LessonPage("step_loop", lesson.Params, lesson.PREFIX)
# cache_resource, not cache_data: the Readout holds the replay's arrays (copying them on every
# hit costs more than the rerun budget), and nothing downstream mutates it.
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=64)

page.say(None, "title", "intro")


@st.fragment
def lab() -> None:
    # Drawn in this order on the page; filled once the controls below have made the run.
    steps, picture, told, setup = (st.container() for _ in range(4))
    p = page.controls(
        [
            ["gpu", "model", "dtype", "tp"],
            ["blocks", "async_scheduling", "vllm_defaults"],
            ["max_num_batched_tokens", "max_num_seqs"],
        ],
    )
    r = readout(p)
    with steps:
        step = stepper(STEP, r.num_steps)
    with picture:
        page.chart(figures.animation(r, step), r, "anim", stepper=step)
    with told:
        page.say(r, "howto")
        now = lesson.at_step(r, step)
        for name in STORY:
            st.markdown(story.text(lesson.STEP_TEXT, name, now))
        page.ask("order", "mid_prompt")
    with setup:
        page.say(r, "scenario", "cast", "pool-note")
    page.defaults_note(r)
    page.warn(r, "bad-limits", icon=":material/block:")
    page.warn(r, "no-fit", icon=":material/memory:")
    page.metrics(r)
    page.say(r, "summary", "limits")
    page.ask("three_limits", "shared_wait", folded=True)
    page.say(r, "preemption")
    page.ask("blocks_run_out", "recompute", "no_admission", "max_model_len", folded=True)
    with page.deeper("async"):
        page.say(r, "mode", "compare")
    with page.deeper("recompute"):
        page.say(r, "recompute")
    with page.deeper("loop"):
        page.say(r, "loop")


lab()
page.footer()
