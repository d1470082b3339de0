"""Lesson page "Why a step costs what it costs": controls -> build -> Readout -> charts, text."""

import streamlit as st

from lessons.step_cost import figures
from lessons.step_cost.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

page = LessonPage("step_cost", Params, PREFIX)
readout = st.cache_resource(build, show_spinner=False, max_entries=256)

page.say(None, "title", "intro")


@st.fragment
def lab() -> None:
    p = page.controls([["gpu", "model", "dtype", "tp"], ["tokens", "decodes", "context_tokens"]])
    r = readout(p)
    page.warn(r, "no-fit", icon=":material/memory:")
    page.warn(r, "kv-too-big", icon=":material/memory:")
    page.metrics(r)
    page.say(r, "numbers-caption")
    page.chart(figures.curve(r), r, "curve")
    page.say(r, "profile-caption", "floor", "floor-measured", "bend", "bend-size", "bend-moe")
    page.say(r, "slope", "kv", "parts", "parts-bound")
    page.chart(figures.parts(r), r, "parts")
    page.say(r, "anim")
    page.chart(figures.growing(r), r, "anim")
    page.say(r, "seed", "takeaway")


lab()
page.footer()
