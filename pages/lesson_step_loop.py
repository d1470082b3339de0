"""Lesson page "The step loop": controls -> build -> Readout -> the animation, the stepper and the
story of the chosen step (at_step -> StepReadout, told from step.md)."""

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.kit import story
from lessons.step_loop import figures, lesson
from lessons.text import section
from ui.lesson_page import LessonPage

STEP = lesson.STEP_KEY
page = LessonPage("step_loop", lesson.Params, lesson.PREFIX)
# cache_resource, not cache_data: the Readout holds the replay's arrays (copying them on every
# hit costs more than the rerun budget), and nothing downstream mutates it.
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=64)

page.say(None, "title", "intro", "loop", "limits", block_size=lesson.BLOCK_SIZE)


def _move(delta: int, last: int) -> None:
    st.session_state[STEP] = min(max(st.session_state[STEP] + delta, 1), last)


def by_hand(last: int) -> int:
    """Previous / Next (the ← and → keys) and a step slider. The step is kept in the link the
    way the kit keeps a control (written from the value on screen, not bound: Reset clears it)."""
    if STEP not in st.session_state:  # the link's step, read once
        st.session_state[STEP], bad = lesson.step_from_link(st.query_params.get(STEP), last)
        if bad:
            st.warning(section(SITE_TEXT, "bad-link", bad), icon=":material/link_off:")
    st.session_state[STEP] = min(st.session_state[STEP], last)  # a shorter run clamps it
    left, mid, right = st.columns([3, 10, 3], vertical_alignment="bottom")
    buttons = {"on_click": _move, "width": "stretch"}
    left.button("◀ Previous", key=f"{STEP}-prev", args=(-1, last), shortcut="Left", **buttons)
    right.button("Next ▶", key=f"{STEP}-next", args=(1, last), shortcut="Right", **buttons)
    step = mid.slider("Step", 1, last, key=STEP, help=section(SITE_TEXT, "stepper-help"))
    if step == 1:
        st.query_params.pop(STEP, None)
    else:
        st.query_params[STEP] = str(step)
    return step


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
    step = by_hand(r.num_steps)
    with animation:
        page.chart(figures.animation(r, step), r, "anim")
    page.chart(figures.still(r, step), r, "still")
    told = lesson.at_step(r, step)
    for name in ("ev-lists", "ev-pick", "ev-pass", "ev-sample", "ev-kv"):
        st.markdown(story.text(lesson.STEP_TEXT, name, told))
    page.say(r, "preemption", "takeaway")


lab()
page.footer()
