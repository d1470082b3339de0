"""Lesson page "Why a step costs what it costs": the title and the key sentence, the deployment
and the step's tokens in one row over the step-time curve, the floor and the slope beside it
with the questions the curve answers; then the running decodes (their controls, the KV read and
the parts of the step) and the step growing (an animation). Tiles and split-K, the measured
kernels and the back-of-the-envelope check are folded "Go deeper" asides."""

import streamlit as st

from lessons.step_cost import figures
from lessons.step_cost.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

TOP = ("gpu", "model", "dtype", "tokens")  # over the curve: what it is drawn for, and the step
BELOW = ("tp", "decodes", "context_tokens")  # with the KV read they change
page = LessonPage("step_cost", Params, PREFIX)
readout = st.cache_resource(build, show_spinner=False, max_entries=256)

page.say(None, "title", "intro")


@st.fragment
def lab() -> None:
    # Two rows of controls, one over the curve and one under it (`controls_here`).
    top = page.controls_here([list(TOP)])
    curve, second = st.container(), st.container()
    p = page.controls_here([list(BELOW)], top)
    r = readout(p)
    with curve:
        page.chart(figures.curve(r), r, "curve")
        page.warn(r, "no-fit", icon=":material/memory:")
        page.metrics(r)
        page.say(r, "floor", "slope", "bend-moe")
        page.ask("floor", "slope")
        page.ask("batching", "tensor_parallel", "fp8", folded=True)
        with page.deeper("tiles"):
            page.say(r, "floor-detail", "floor-measured", "bend", "bend-size")
        with page.deeper("profile"):
            page.say(r, "profile-caption")
    with second:
        page.say(r, "kv")
    page.warn(r, "kv-too-big", icon=":material/memory:")
    page.say(r, "parts-bound")
    page.chart(figures.parts(r), r, "parts")
    page.ask("kv_read", folded=True)
    page.say(r, "anim")
    page.chart(figures.growing(r), r, "anim")
    page.say(r, "takeaway")
    with page.deeper("seed"):
        page.say(r, "seed")
        page.ask("seed_numbers")


lab()
page.footer()
