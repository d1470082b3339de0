"""Lesson page "The step loop": controls -> build -> Readout -> the animation, the stepper and the
story of the chosen step (at_step -> StepReadout, told from step.md)."""

import streamlit as st

from lessons.kit import story
from lessons.step_loop import figures, lesson
from ui.lesson_page import LessonPage
from ui.stepper import stepper

STEP = lesson.STEP_KEY
page = LessonPage("step_loop", lesson.Params, lesson.PREFIX)
# cache_resource, not cache_data: the Readout holds the replay's arrays (copying them on every
# hit costs more than the rerun budget), and nothing downstream mutates it.
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=64)

page.say(None, "title", "intro", "loop", "limits", block_size=lesson.BLOCK_SIZE)


@st.fragment
def lab() -> None:
    p = page.controls(
        [
            ["gpu", "model", "dtype", "tp"],
            ["blocks", "async_scheduling", "vllm_defaults"],
            ["max_num_batched_tokens", "max_num_seqs"],
        ],
    )
    r = readout(p)
    page.defaults_note(r)
    page.warn(r, "bad-limits", icon=":material/block:")
    page.warn(r, "no-fit", icon=":material/memory:")
    page.say(r, "scenario", "pool-note", "mode")
    page.metrics(r)
    page.say(r, "summary", "compare", "anim")
    animation = st.container()  # drawn once the stepper has said which step to open at
    page.say(r, "stepper")
    step = stepper(STEP, r.num_steps)
    with animation:
        page.chart(figures.animation(r, step), r, "anim")
    page.chart(figures.still(r, step), r, "still")
    told = lesson.at_step(r, step)
    for name in ("ev-lists", "ev-pick", "ev-pass", "ev-sample", "ev-kv"):
        st.markdown(story.text(lesson.STEP_TEXT, name, told))
    page.say(r, "preemption", "takeaway")


lab()
page.footer()
