"""Lesson page "Chunked prefill versus the whole prompt at once": controls -> build -> Readout ->
two lanes, table, GPU use, text."""

import streamlit as st

from lessons.chunked_prefill import figures
from lessons.chunked_prefill.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

page = LessonPage("chunked_prefill", Params, PREFIX)
readout = st.cache_resource(build, show_spinner=False, max_entries=128)

page.say(None, "title", "intro")


@st.fragment
def lab() -> None:
    page.say(None, "lab")
    p = page.controls(
        [
            ["gpu", "model", "dtype", "tp"],
            ["prompt_tokens", "users"],
            ["vllm_defaults"],
            ["max_num_batched_tokens", "max_num_seqs"],
        ],
    )
    r = readout(p)
    page.defaults_note(r)
    page.warn(r, "users-clamped", icon=":material/group:")
    page.warn(r, "seqs-clamped", icon=":material/group:")
    page.warn(r, "prompt-clamped", icon=":material/content_cut:")
    page.warn(r, "memory-short", icon=":material/memory:")
    page.metrics(r)
    page.say(r, "metrics-caption", "mode", "lanes")
    page.chart(figures.lanes(r), r, "lanes")
    page.say(r, "lanes-thinned", "lanes-merged", "reading-whole", "reading-chunked", "reading-gap")
    page.say(r, "ttft", "why")
    page.say(r, "table", "table-body", "table-caption", "use")
    page.chart(figures.use(r), r, "use")
    page.say(r, "budget-rule")


lab()
page.say(None, "takeaway")
page.footer()
