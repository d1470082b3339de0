"""Lesson page "The sequence budget and the throughput curve": controls -> build -> Readout ->
charts and text."""

import streamlit as st

from lessons.kit import limits, story
from lessons.throughput_curve import figures
from lessons.throughput_curve.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

page = LessonPage("throughput_curve", Params, PREFIX)
# Shared objects (no copy per run): a Readout is only read from here on. The curves inside are
# cached on GPU, model, weights, TP, context and mode (lesson.decode_curves), the closed-loop
# runs one by one (closed_loop.point).
readout = st.cache_resource(build, show_spinner=False, max_entries=256)

page.say(None, "title", "intro")


def own_limits() -> None:
    """Switching vLLM's defaults off starts the two sliders at those defaults."""
    if not page.value("vllm_defaults"):
        budget, seqs = limits.effective(page.value("gpu"), True, 0, 0)
        page.set("max_num_batched_tokens", budget)
        page.set("max_num_seqs", seqs)


@st.fragment
def lab() -> None:
    p = page.controls(
        [
            ["gpu", "model", "dtype", "tp"],
            ["context", "output_tokens", "itl_target_ms"],
            ["vllm_defaults", "async_scheduling"],
            ["max_num_batched_tokens", "max_num_seqs"],
        ],
        on_change={"vllm_defaults": own_limits},
    )
    r = readout(p)
    page.defaults_note(r)
    page.warn(r, "config-error", icon=":material/block:")
    page.warn(r, "no-fit", icon=":material/memory:")
    page.metrics(r)
    st.caption(story.text(page.text_path, "numbers-caption", r))
    page.say(r, "mode")
    page.chart(figures.curve(r), r, "curve")
    page.say(r, "rise", "knee", "pick", "bend")
    page.chart(figures.reads(r), r, "reads")
    page.say(r, "memory", "knee-past-cache", "cap", "anim", "anim-open")
    page.chart(figures.growing(r), r, "anim")
    page.say(r, "surge", "surge-cut", "surge-at")
    if r.has_closed:
        page.chart(figures.loop(r), r, "loop")
    page.say(r, "surge-why", "surge-fix", "surge-pick", "surge-mode", "lever")
    st.caption(story.text(page.text_path, "method", r))


lab()
page.footer()
