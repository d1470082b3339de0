"""Lesson page "The sequence budget and the throughput curve": the context slider and the curve
first, then the other controls, the bytes a step reads, the animation, the closed loop (with its
own control), the folded asides ("Go deeper") and the practice. The controls are drawn in three
places (`controls_here`), so one Readout serves the page."""

import streamlit as st

from lessons.throughput_curve import figures, loop_figure
from lessons.throughput_curve.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

page = LessonPage("throughput_curve", Params, PREFIX)
# Shared, read-only; the curves inside are cached apart (lesson.decode_curves, closed_loop.point).
readout = st.cache_resource(build, show_spinner=False, max_entries=256)
MAIN = (["context"],)
ENGINE = (
    ["gpu", "model", "dtype", "tp"],
    ["itl_target_ms", "async_scheduling"],
    ["vllm_defaults"],
    ["max_num_batched_tokens", "max_num_seqs"],
)
LOOP = (["output_tokens"],)


page.say(None, "title")


@st.fragment
def lab() -> None:
    left, right = st.columns([3, 2], vertical_alignment="center")
    with left:
        page.say(None, "intro")
    with right:
        p = page.controls_here(MAIN)
    r = readout(p)
    page.chart(figures.curve(r), r, "curve")
    page.warn(r, "config-error", icon=":material/block:")
    page.warn(r, "no-fit", icon=":material/memory:")
    page.metrics(r)
    page.say(r, "rise", "knee", "pick")
    page.ask("shared_read")
    page.ask("past_knee", "lever", "long_context", folded=True)
    page.controls_here(ENGINE, p, on_change={"vllm_defaults": page.own_limits})
    page.defaults_note(r)
    page.say(r, "cast")
    with page.deeper("async"):
        page.say(r, "mode")
    with page.deeper("dips"):
        page.say(r, "dips", "dips-pick")
    page.say(r, "bend")
    page.chart(figures.reads(r), r, "reads")
    page.say(r, "memory", "knee-past-cache")
    with page.deeper("limits"):
        page.say(r, "cap")
    page.ask("bend", "memory_cap", folded=True)
    page.say(r, "anim", "anim-open")
    page.chart(figures.growing(r), r, "anim")
    with page.deeper("rest"):
        page.say(r, "anim-rest")
    page.say(r, "surge", "surge-cut")
    page.controls_here(LOOP, p)
    if r.has_closed:
        page.chart(loop_figure.loop(r), r, "loop")
    page.say(r, "surge-at", "surge-fix")
    page.ask("slo_rule", folded=True)
    with page.deeper("closed"):
        page.say(r, "surge-why", "surge-pick", "surge-mode")
    page.say(r, "lever")
    with page.deeper("method"):
        page.caption(r, "numbers-caption", "method")


lab()
page.footer()
